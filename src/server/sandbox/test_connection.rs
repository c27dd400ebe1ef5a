//! Test connection: a provider built from unsaved values (stored secrets filled in, only for
//! the destination they were saved for), its health checked and a fixed script run through
//! it. Nothing is saved; the test is recorded in the audit with where it went.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::{
    active::probe, run::run_once, secrets::NotMerged, stored::setting_name, SandboxService,
};
use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, Language},
        schema::FieldErrors,
        settings::ConnectionReport,
    },
    sandbox::Error as SandboxError,
    server::db::{execution::Caller, settings_audit, system_setting::SettingError},
};

/// The script "Test connection" runs: it must print and return through the main() protocol.
const TEST_SCRIPT: &str =
    "def main(probe):\n    print('sandbox-console test connection')\n    return {'probe': probe}\n";
const TEST_SCRIPT_JS: &str =
    "function main({ probe }) { console.log('sandbox-console test connection'); return { probe }; }";

impl SandboxService {
    /// Builds a provider from unsaved values (stored secrets filled in), checks its health and
    /// runs a fixed script through it. Never saves anything.
    #[tracing::instrument(skip(self, values, caller), fields(caller = %caller.name))]
    pub async fn test_connection(
        &self,
        kind: &str,
        values: Map<String, Value>,
        caller: &Caller,
    ) -> Result<ConnectionReport, SettingError> {
        let destination = self.destination_of(kind, &values);
        let report = self.test_connection_to(kind, values, caller).await?;
        let outcome = if report.passed {
            "passed"
        } else if !report.errors.is_empty() {
            "invalid settings"
        } else {
            "failed"
        };
        let detail = Map::from_iter([
            ("destination".to_owned(), json!(destination)),
            ("outcome".to_owned(), json!(outcome)),
        ]);
        settings_audit::record_event(
            &self.pool,
            caller.actor().as_str(),
            &setting_name(kind),
            Some(kind),
            "test_connection",
            &detail,
        )
        .await?;
        Ok(report)
    }

    /// The test itself (`test_connection` records it in the audit).
    async fn test_connection_to(
        &self,
        kind: &str,
        values: Map<String, Value>,
        caller: &Caller,
    ) -> Result<ConnectionReport, SettingError> {
        let started = Instant::now();
        let mut report = ConnectionReport {
            passed: false,
            message: String::new(),
            detail: None,
            health: None,
            exit_code: None,
            execution_time_ms: None,
            latency_ms: 0,
            stdout: String::new(),
            stderr: String::new(),
            errors: FieldErrors::new(),
        };
        let values = match self.with_stored_secrets(kind, values).await {
            Ok(values) => values,
            Err(NotMerged::Invalid(errors)) => {
                report.message = "The settings are not valid; fix the marked fields.".into();
                report.errors = errors;
                return Ok(finish(report, started));
            }
            Err(NotMerged::Store(error)) => return Err(error),
        };
        let values = match self.open_secrets(kind, values) {
            Ok(values) => values,
            Err(error) => {
                report.message = error.to_string();
                return Ok(finish(report, started));
            }
        };
        let built = self.registry.build(kind, &values);
        let provider = match built {
            Ok(provider) => provider,
            Err(SandboxError::ConfigInvalid { errors }) => {
                report.message = "The settings are not valid; fix the marked fields.".into();
                report.errors = errors;
                return Ok(finish(report, started));
            }
            Err(error) => {
                report.message = error.to_string();
                return Ok(finish(report, started));
            }
        };
        let health = probe(&provider).await;
        let healthy = health.healthy;
        report.message = health.message.clone();
        report.health = Some(health);
        if !healthy {
            provider.shutdown().await;
            return Ok(finish(report, started));
        }
        let language = if provider.languages().contains(&Language::Python) {
            Language::Python
        } else {
            provider.languages()[0]
        };
        let code = match language {
            Language::Python => TEST_SCRIPT,
            Language::Javascript => TEST_SCRIPT_JS,
        };
        let request = ExecRequest {
            language,
            code: code.into(),
            arguments: Map::from_iter([("probe".to_owned(), json!("ok"))]),
            timeout_secs: None,
        };
        let deadline = provider.run_deadline(&request);
        let outcome = tokio::time::timeout(deadline, run_once(provider.as_ref(), &request))
            .await
            .unwrap_or(Err(SandboxError::Timeout(deadline)));
        // Built from unsaved values for this one test: release its sandboxes.
        provider.shutdown().await;
        self.record(caller, kind, &request, &outcome).await;
        match outcome {
            Ok(result) => {
                report.passed = result.status == ExecStatus::Success
                    && result.result.value == json!({ "probe": "ok" });
                report.message = if report.passed {
                    format!(
                        "Connected: the test script ran in {} ms.",
                        result.wall_time_ms
                    )
                } else {
                    format!(
                        "The provider answered, but the test script ended with status {:?}.",
                        result.status
                    )
                };
                report.exit_code = result.exit_code;
                report.execution_time_ms = Some(result.wall_time_ms);
                report.stdout = result.stdout;
                report.stderr = result.stderr;
            }
            Err(error) => report.message = format!("The test script could not run: {error}"),
        }
        Ok(finish(report, started))
    }

    /// Where a provider built from `values` sends its requests, for the audit: its
    /// destination fields as `key=value` (never a secret: secret fields are never
    /// destinations), or `this host` for providers that run code here.
    fn destination_of(&self, kind: &str, values: &Map<String, Value>) -> String {
        let Some(schema) = self.schema_of(kind) else {
            return String::new();
        };
        let parts: Vec<String> = schema
            .destinations()
            .filter(|f| !f.kind.is_secret())
            .filter_map(|f| {
                let value = f.normalized(values.get(&f.key))?;
                let text = match value {
                    Value::String(text) if text.is_empty() => return None,
                    Value::String(text) => without_userinfo(text),
                    other => other.to_string(),
                };
                Some(format!("{}={}", f.key, text))
            })
            .collect();
        if parts.is_empty() {
            "this host".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A URL with any `user:password@` replaced by `***@`: credentials typed into an endpoint
/// (which the providers refuse) must not reach the audit either.
pub(super) fn without_userinfo(text: String) -> String {
    match url::Url::parse(&text) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            let _ = url.set_password(None);
            let _ = url.set_username("***");
            url.to_string()
        }
        _ => text,
    }
}

fn finish(mut report: ConnectionReport, started: Instant) -> ConnectionReport {
    report.latency_ms = started.elapsed().as_millis() as u64;
    if !report.passed {
        if let Some(sentence) = crate::model::explain::network_failure(&report.message) {
            report.detail = Some(std::mem::replace(&mut report.message, sentence));
        }
    }
    report
}
