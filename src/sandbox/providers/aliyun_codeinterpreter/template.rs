//! The AgentRun template sandboxes are made from: named in the settings, or the console's
//! own, created on first use and waited for until it is ready.

use super::*;

impl AliyunProvider {
    pub(super) fn template(&self) -> &str {
        match self.config.template_name.trim() {
            "" => DEFAULT_TEMPLATE,
            name => name,
        }
    }

    /// The template's status, or `None` when it does not exist.
    pub(super) async fn template_status(&self, name: &str) -> Result<Option<String>, Error> {
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
    pub(super) async fn ensure_template(&self) -> Result<(), Error> {
        let mut ready = self.template_ready.lock().await;
        if *ready {
            return Ok(());
        }
        let name = self.template();
        let mut status = self.template_status(name).await?;
        if status.is_none() {
            if !self.config.template_name.trim().is_empty() {
                return Err(AgentRunError::NoTemplate {
                    name: name.to_owned(),
                    region: self.config.region.clone(),
                }
                .into());
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
                    return Err(AgentRunError::TemplateFailed {
                        name: name.to_owned(),
                        status: failed.to_owned(),
                    }
                    .into())
                }
                _ if started.elapsed() > TEMPLATE_WAIT => {
                    return Err(AgentRunError::TemplateNotReady {
                        name: name.to_owned(),
                        waited_secs: TEMPLATE_WAIT.as_secs(),
                        status: status.unwrap_or_default(),
                    }
                    .into())
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
}
