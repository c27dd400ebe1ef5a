//! The `aliyun_codeinterpreter` provider: Alibaba Cloud AgentRun's code interpreter, called as
//! its official SDK calls it. A sandbox per run from a template (the console's default
//! template is created on first use), `POST /sandboxes/{id}/contexts/execute` with the wrapped
//! code, `DELETE /sandboxes/{id}` with the configured credentials; every data-plane request is
//! signed with AGENTRUN4-HMAC-SHA256, template calls with ACS3-HMAC-SHA256. See README.md.

mod config;
pub mod signature;

use std::{
    collections::HashSet,
    sync::Mutex,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use reqwest::{header, Method, StatusCode};
use serde_json::{json, Map, Value};
use url::Url;

pub use config::{build, build_provider, schema, AliyunConfig, REGIONS};

use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
    },
    sandbox::{
        self,
        providers::http::{self, Body},
        registry::ProviderKind,
        runner::{
            remote::{self, SnippetOutput},
            ArtifactLimits,
        },
        Error, Instance, SandboxProvider,
    },
};
use signature::Signed;

pub const KIND: &str = "aliyun_codeinterpreter";
/// The template the console creates and uses when none is configured.
pub const DEFAULT_TEMPLATE: &str = "sandbox-console-code-interpreter";
const API_VERSION: &str = "2025-09-10";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much longer than the run's own time-out an execute call may take to answer.
const EXECUTE_GRACE: Duration = Duration::from_secs(10);
/// A sandbox outlives a run's 30 s cap; each run deletes its own.
const SANDBOX_IDLE_SECS: u32 = 60;
const TEMPLATE_POLL: Duration = Duration::from_secs(2);
const TEMPLATE_WAIT: Duration = Duration::from_secs(300);
const MIB: u64 = 1024 * 1024;

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Aliyun Code Interpreter (AgentRun)".into(),
        description: "Runs each program in a fresh Alibaba Cloud AgentRun code-interpreter \
                      sandbox; requests are signed with your AccessKey. Runs are capped at 30 s \
                      by the service."
            .into(),
        tags: vec![
            "saas".into(),
            "aliyun".into(),
            "python".into(),
            "javascript".into(),
        ],
    }
}

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build,
    }
}

#[derive(Debug)]
pub struct AliyunProvider {
    config: AliyunConfig,
    data: Url,
    control: Url,
    client: reqwest::Client,
    template_ready: tokio::sync::Mutex<bool>,
    open: Mutex<HashSet<String>>,
    info: ProviderInfo,
}

/// An answer of AgentRun: its status, body, and the body as JSON (`Null` when it is not
/// JSON; `{code, requestId, message}` on errors), parsed once.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
    json: Value,
}

impl Answer {
    fn new(status: StatusCode, body: Vec<u8>) -> Self {
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Answer { status, body, json }
    }

    fn field(&self, key: &str) -> String {
        self.json
            .get(key)
            .or_else(|| self.json.get("data").and_then(|d| d.get(key)))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The error for a failed call: refused credentials are `Unauthenticated`.
    fn error(&self, what: &str) -> Error {
        let detail = if self.json.is_null() {
            http::excerpt(&self.body)
        } else {
            format!("{}: {}", self.field("code"), self.field("message"))
        };
        match self.status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Error::Unauthenticated(format!(
                "AgentRun refused the AccessKey ({what}: HTTP {}): {detail}",
                self.status.as_u16()
            )),
            StatusCode::TOO_MANY_REQUESTS => Error::PoolBusy {
                retry_after: Duration::from_secs(2),
            },
            status => Error::Backend(format!(
                "AgentRun answered {what} with HTTP {}: {detail}",
                status.as_u16()
            )),
        }
    }
}

fn timestamp() -> (String, String) {
    let now = time::OffsetDateTime::now_utc();
    let date = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    );
    let day = date[..10].replace('-', "");
    (date, day)
}

/// The `Host` header as the HTTP client sends it: the port only when it is not the default.
fn host_header(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

impl AliyunProvider {
    pub fn new(config: AliyunConfig) -> Result<Self, Error> {
        let region = config.region.trim();
        let data = match config.endpoint.trim() {
            "" => format!(
                "https://{}-ram.agentrun-data.{region}.aliyuncs.com",
                config.account_id.trim()
            ),
            url => url.to_owned(),
        };
        let control = match config.control_endpoint.trim() {
            "" => format!("https://agentrun.{region}.aliyuncs.com"),
            url => url.to_owned(),
        };
        let example = "https://agentrun.cn-hangzhou.aliyuncs.com";
        Ok(AliyunProvider {
            data: http::endpoint(&data, example).map_err(|m| Error::field("endpoint", m))?,
            control: http::endpoint(&control, example)
                .map_err(|m| Error::field("control_endpoint", m))?,
            client: http::client(REQUEST_TIMEOUT)?,
            template_ready: tokio::sync::Mutex::new(false),
            open: Mutex::new(HashSet::new()),
            config,
            info: info(),
        })
    }

    fn template(&self) -> &str {
        match self.config.template_name.trim() {
            "" => DEFAULT_TEMPLATE,
            name => name,
        }
    }

    /// A data-plane request, signed with AGENTRUN4-HMAC-SHA256.
    fn data_request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let url = http::join(&self.data, path);
        let parsed = Url::parse(&url).expect("a joined URL parses");
        let (date, day) = timestamp();
        let mut headers = vec![
            ("host".to_owned(), host_header(&parsed)),
            ("x-acs-date".to_owned(), date.clone()),
            (
                "x-acs-content-sha256".to_owned(),
                signature::UNSIGNED_PAYLOAD.to_owned(),
            ),
        ];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let signed = Signed {
            method: method.as_str(),
            path: parsed.path(),
            query: parsed.query().unwrap_or_default(),
            headers,
        };
        let authorization = signature::agentrun4_authorization(
            &signed,
            self.config.access_key_id.trim(),
            &self.config.access_key_secret,
            &day,
            self.config.region.trim(),
        );
        let request = self
            .client
            .request(method, url)
            .header("x-acs-date", date)
            .header("x-acs-content-sha256", signature::UNSIGNED_PAYLOAD)
            .header("Agentrun-Authorization", authorization);
        match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string()),
            None => request,
        }
    }

    /// A control-plane (OpenAPI, ROA) request, signed with ACS3-HMAC-SHA256.
    fn control_request(
        &self,
        method: Method,
        path: &str,
        action: &str,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let url = http::join(&self.control, path);
        let parsed = Url::parse(&url).expect("a joined URL parses");
        let (date, _) = timestamp();
        let payload = body.map(Value::to_string).unwrap_or_default();
        let payload_hash = signature::sha256_hex(payload.as_bytes());
        let nonce = format!("{:032x}", rand::random::<u128>());
        let mut headers = vec![
            ("host".to_owned(), host_header(&parsed)),
            ("x-acs-action".to_owned(), action.to_owned()),
            ("x-acs-version".to_owned(), API_VERSION.to_owned()),
            ("x-acs-date".to_owned(), date),
            ("x-acs-signature-nonce".to_owned(), nonce),
            ("x-acs-content-sha256".to_owned(), payload_hash.clone()),
        ];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let signed = Signed {
            method: method.as_str(),
            path: parsed.path(),
            query: parsed.query().unwrap_or_default(),
            headers: headers.clone(),
        };
        let authorization = signature::acs3_authorization(
            &signed,
            &payload_hash,
            self.config.access_key_id.trim(),
            &self.config.access_key_secret,
        );
        let mut request = self.client.request(method, url);
        for (name, value) in headers.into_iter().filter(|(n, _)| n != "host") {
            request = request.header(name, value);
        }
        request = request.header(header::AUTHORIZATION, authorization);
        if body.is_some() {
            request = request.body(payload);
        }
        request
    }

    async fn send(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Answer, Error> {
        let response = request
            .send()
            .await
            .map_err(|e| http::transport(what, &e, timeout))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| http::transport(what, &e, timeout))?;
        Ok(Answer::new(status, body.to_vec()))
    }

    /// The template's status, or `None` when it does not exist.
    async fn template_status(&self, name: &str) -> Result<Option<String>, Error> {
        let what = format!("GetTemplate {name}");
        let request = self.control_request(
            Method::GET,
            &format!("{API_VERSION}/templates/{name}"),
            "GetTemplate",
            None,
        );
        let answer = self.send(&what, request, REQUEST_TIMEOUT).await?;
        match answer.status {
            s if s.is_success() => Ok(Some(answer.field("status"))),
            StatusCode::NOT_FOUND => Ok(None),
            _ => Err(answer.error(&what)),
        }
    }

    /// Makes sure the template exists and is ready: a configured one must exist; the console's
    /// default one is created when missing (as RAGFlow's provider did) and waited for.
    async fn ensure_template(&self) -> Result<(), Error> {
        let mut ready = self.template_ready.lock().await;
        if *ready {
            return Ok(());
        }
        let name = self.template();
        let mut status = self.template_status(name).await?;
        if status.is_none() {
            if !self.config.template_name.trim().is_empty() {
                return Err(Error::Backend(format!(
                    "the AgentRun template {name:?} does not exist in {}",
                    self.config.region
                )));
            }
            let body = json!({
                "templateName": name,
                "templateType": "CodeInterpreter",
                "description": "Created by sandbox-console for its runs",
                "cpu": 2.0,
                "memory": 4096,
                "diskSize": 512,
            });
            let what = format!("CreateTemplate {name}");
            let request = self.control_request(
                Method::POST,
                &format!("{API_VERSION}/templates"),
                "CreateTemplate",
                Some(&body),
            );
            let answer = self.send(&what, request, REQUEST_TIMEOUT).await?;
            if !answer.status.is_success() {
                return Err(answer.error(&what));
            }
            tracing::info!(template = name, "created the AgentRun template");
            status = self.template_status(name).await?;
        }
        let started = Instant::now();
        loop {
            match status.as_deref() {
                Some("READY") | Some("") => break,
                Some(failed @ ("CREATE_FAILED" | "UPDATE_FAILED")) => {
                    return Err(Error::Backend(format!(
                        "the AgentRun template {name:?} is {failed}"
                    )))
                }
                _ if started.elapsed() > TEMPLATE_WAIT => {
                    return Err(Error::Backend(format!(
                        "the AgentRun template {name:?} was not ready after {} s (status {:?})",
                        TEMPLATE_WAIT.as_secs(),
                        status.unwrap_or_default()
                    )))
                }
                _ => {
                    tokio::time::sleep(TEMPLATE_POLL).await;
                    status = self.template_status(name).await?;
                }
            }
        }
        *ready = true;
        Ok(())
    }

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
            return Err(Error::Backend(format!(
                "AgentRun did not create a sandbox: {}",
                http::excerpt(&answer.body)
            )));
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
            return Err(Error::Backend(format!(
                "AgentRun's answer to {what} has no results: {}",
                http::excerpt(&answer.body)
            )));
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
