//! The `SandboxProvider` implementation: a sandbox per run from the template, the wrapped
//! code executed in it, the sandbox deleted after.

use super::{client::Answer, *};

impl AliyunProvider {
    async fn delete_sandbox(&self, id: &str) -> Result<(), Error> {
        self.open.lock().expect("open sandboxes lock").remove(id);
        let what = format!("DELETE /sandboxes/{id}");
        let answer = self
            .send(
                &what,
                self.data_request(Method::DELETE, &format!("sandboxes/{id}"), None),
                REQUEST_TIMEOUT,
            )
            .await?;
        match answer.status {
            StatusCode::NOT_FOUND => Ok(()),
            s if s.is_success() && matches!(answer.field("code").as_str(), "" | "SUCCESS") => {
                Ok(())
            }
            _ => Err(answer.error(&what)),
        }
    }
}

/// The execute answer's text: the SDK's `results` list (stdout, stderr, error,
/// endOfExecution; `result` items are the kernel's display and are not needed), or the flat
/// `stdout`/`stderr`/`exitCode` the SDK's own agent tool reads. Returns stdout, stderr and
/// whether the service reported a failure.
fn read_results(body: &Value) -> Option<(String, String, bool)> {
    let body = if body.get("results").is_none() && body.get("stdout").is_none() {
        body.get("data")?
    } else {
        body
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    let mut failed = false;
    if let Some(results) = body.get("results").and_then(Value::as_array) {
        for item in results {
            let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
            match item.get("type").and_then(Value::as_str).unwrap_or_default() {
                "stdout" => stdout.push_str(text),
                "stderr" => stderr.push_str(text),
                "error" => {
                    failed = true;
                    if !stderr.contains(text) {
                        stderr.push_str(text);
                        if !text.ends_with('\n') {
                            stderr.push('\n');
                        }
                    }
                }
                "endOfExecution" => {
                    let status = item.get("status").and_then(Value::as_str).unwrap_or("ok");
                    failed |= status != "ok";
                }
                _ => {}
            }
        }
        return Some((stdout, stderr, failed));
    }
    let stdout = body.get("stdout").and_then(Value::as_str)?.to_owned();
    let stderr = body
        .get("stderr")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let failed = body.get("exitCode").and_then(Value::as_i64).unwrap_or(0) != 0;
    Some((stdout, stderr, failed))
}

#[async_trait]
impl SandboxProvider for AliyunProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    async fn health(&self) -> HealthReport {
        let started = Instant::now();
        let name = self.template();
        let mut details = Map::new();
        details.insert("region".into(), json!(self.config.region));
        details.insert("template".into(), json!(name));
        let checked = self.template_status(name).await;
        details.insert(
            "latency_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
        let (healthy, message) = match checked {
            Ok(Some(status)) => (
                !status.ends_with("FAILED"),
                format!("AgentRun accepted the AccessKey; template {name:?} is {status}."),
            ),
            Ok(None) if self.config.template_name.trim().is_empty() => (
                true,
                format!("AgentRun accepted the AccessKey; template {name:?} will be created on the first run."),
            ),
            Ok(None) => (false, format!("The AgentRun template {name:?} does not exist in {}.", self.config.region)),
            // Refused credentials are not a healthy provider, whatever else answered.
            Err(Error::Unauthenticated(why)) => (false, why),
            Err(other) => (false, format!("AgentRun cannot be used: {other}")),
        };
        HealthReport {
            healthy,
            message,
            details,
        }
    }

    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        self.ensure_template().await?;
        let body = json!({
            "templateName": self.template(),
            "sandboxIdleTimeoutSeconds": SANDBOX_IDLE_SECS,
        });
        let what = "POST /sandboxes";
        let answer = self
            .send(
                what,
                self.data_request(Method::POST, "sandboxes", Some(&body)),
                REQUEST_TIMEOUT,
            )
            .await?;
        if !answer.status.is_success() {
            return Err(answer.error(what));
        }
        let code = answer.field("code");
        let id = answer.field("sandboxId");
        if code != "SUCCESS" || id.is_empty() {
            return Err(AgentRunError::NoSandbox {
                excerpt: http::described(&answer.body),
            }
            .into());
        }
        self.open
            .lock()
            .expect("open sandboxes lock")
            .insert(id.clone());
        Ok(Instance {
            metadata: Map::from_iter([
                ("sandbox_id".into(), json!(id)),
                ("region".into(), json!(self.config.region)),
                ("template".into(), json!(self.template())),
            ]),
            id,
            language,
        })
    }

    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        let timeout = sandbox::timeout_secs(request, self.config.timeout.min(30));
        let limits = ArtifactLimits::default();
        let memory = (request.language == Language::Python)
            .then_some(u64::from(self.config.memory_mb) * MIB);
        let snippet = remote::snippet(request, memory, limits);
        let body = json!({
            "code": snippet.code,
            "timeout": timeout,
            "language": request.language.id(),
        });
        let what = format!("POST /sandboxes/{}/contexts/execute", instance.id);
        let waited = Duration::from_secs(timeout.into()) + EXECUTE_GRACE;
        let started = Instant::now();
        let response = self
            .data_request(
                Method::POST,
                &format!("sandboxes/{}/contexts/execute", instance.id),
                Some(&body),
            )
            .timeout(waited)
            .send()
            .await
            .map_err(|e| http::transport(&what, &e, waited))?;
        let status = response.status();
        let cap = self.config.max_output_bytes as usize;
        let limit = 4 * cap + remote::result_room(limits);
        let bytes = match http::read_limited(response, limit).await {
            Ok(Body::Complete(bytes)) => Some(bytes),
            Ok(Body::Over) => None,
            Err(e) => return Err(http::transport(&what, &e, waited)),
        };
        let mut metadata = instance.metadata.clone();
        let finished = |status, stdout: String, stderr: String, metadata| ExecutionResult {
            status,
            stdout,
            stderr,
            exit_code: None,
            wall_time_ms: started.elapsed().as_millis() as u64,
            result: crate::model::execution::ReturnValue::absent(),
            artifacts: Vec::new(),
            queue_wait_ms: None,
            metadata,
            egress: None,
        };
        let Some(bytes) = bytes else {
            let note = format!(
                "AgentRun's answer was larger than {limit} bytes; its output was dropped\n"
            );
            return Ok(finished(
                ExecStatus::OutputLimit,
                String::new(),
                note,
                metadata,
            ));
        };
        let answer = Answer::new(status, bytes);
        let timed_out = status == StatusCode::REQUEST_TIMEOUT
            || (!status.is_success()
                && format!("{} {}", answer.field("code"), answer.field("message"))
                    .to_ascii_lowercase()
                    .contains("timeout"));
        if timed_out {
            let note = format!("AgentRun stopped the run at its {timeout} s time-out\n");
            return Ok(finished(ExecStatus::Timeout, String::new(), note, metadata));
        }
        if !status.is_success() {
            return Err(answer.error(&what));
        }
        let Some((stdout, stderr, failed)) = read_results(&answer.json) else {
            return Err(AgentRunError::NoResults {
                what,
                excerpt: http::described(&answer.body),
            }
            .into());
        };
        let output = SnippetOutput {
            stdout,
            stderr,
            failed,
            ..SnippetOutput::default()
        };
        let (mut result, skipped) = remote::finish_snippet(&snippet, output, cap, limits);
        result.wall_time_ms = started.elapsed().as_millis() as u64;
        if !skipped.is_empty() {
            metadata.insert("skipped_artifacts".into(), json!(skipped));
        }
        let context = answer.field("contextId");
        if !context.is_empty() {
            metadata.insert("context_id".into(), json!(context));
        }
        result.metadata = metadata;
        Ok(result)
    }

    async fn destroy_instance(&self, instance: Instance) -> Result<(), Error> {
        self.delete_sandbox(&instance.id).await
    }

    async fn shutdown(&self) {
        let open: Vec<String> = self
            .open
            .lock()
            .expect("open sandboxes lock")
            .iter()
            .cloned()
            .collect();
        for id in open {
            if let Err(error) = self.delete_sandbox(&id).await {
                tracing::warn!(%error, sandbox = %id, "could not delete an AgentRun sandbox");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_lists_and_flat_answers_both_read() {
        let listed = json!({ "contextId": "c", "results": [
            { "type": "stdout", "text": "hel" }, { "type": "stdout", "text": "lo\n" },
            { "type": "result", "text": "None" }, { "type": "endOfExecution", "status": "ok" }
        ]});
        let failed = json!({ "data": { "results": [
            { "type": "stderr", "text": "Traceback...\n" }, { "type": "error", "text": "NameError: x" },
            { "type": "endOfExecution", "status": "error" }
        ]}});
        let flat = json!({ "stdout": "1\n", "stderr": "", "exitCode": 0 });

        assert_eq!(
            read_results(&listed),
            Some(("hello\n".into(), String::new(), false))
        );
        let (_, stderr, failed) = read_results(&failed).unwrap();
        assert!(
            failed && stderr == "Traceback...\nNameError: x\n",
            "{stderr:?}"
        );
        assert_eq!(
            read_results(&flat),
            Some(("1\n".into(), String::new(), false))
        );
        assert_eq!(read_results(&json!({ "code": "SUCCESS" })), None);
    }
}
