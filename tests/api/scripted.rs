//! `scripted`: a test-only provider whose answers the code picks, to reach every error path
//! of the gateway (busy pool, unreachable, provider timeout) that a healthy local provider
//! never takes. Registered only by `spawn_app_with_scripted`; the product never sees it.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use sandbox_console::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language, ReturnValue},
        provider::{HealthReport, ProviderInfo},
        schema::{ConfigSchema, FieldKind, FieldSpec},
    },
    sandbox::{registry::ProviderKind, Error, Instance, SandboxProvider},
};
use serde_json::{json, Map, Value};

pub const GOOD_TOKEN: &str = "good-token";

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build: |raw, _| build(raw),
    }
}

fn info() -> ProviderInfo {
    ProviderInfo {
        kind: "scripted".into(),
        name: "Scripted (tests)".into(),
        description: "Answers as the code says.".into(),
        tags: vec![],
    }
}

fn schema() -> ConfigSchema {
    ConfigSchema {
        fields: vec![
            FieldSpec::new("endpoint", FieldKind::String, "Endpoint")
                .destination()
                .required(),
            FieldSpec::new("token", FieldKind::Secret, "Token").required(),
            // A free-text field, rendered as a textarea (the escaping tests type markup here).
            FieldSpec::new("notes", FieldKind::Multiline, "Notes"),
            FieldSpec::new(
                "timeout",
                FieldKind::Integer {
                    min: Some(5),
                    max: Some(300),
                },
                "Timeout",
            )
            .default_value(json!(30)),
        ],
    }
}

fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    let values = schema()
        .normalize(raw)
        .map_err(|errors| Error::ConfigInvalid { errors })?;
    let endpoint = values["endpoint"].as_str().unwrap_or_default();
    if !endpoint.starts_with("http://") && !endpoint.starts_with("https://") {
        return Err(Error::field(
            "endpoint",
            "Must start with http:// or https://",
        ));
    }
    let notes = values
        .get("notes")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // A provider whose build takes a while (as docker's pools do), to widen the moment a
    // rebuild is under way.
    if notes.contains("SLOW_BUILD") {
        std::thread::sleep(Duration::from_millis(400));
    }
    Ok(Arc::new(Scripted {
        info: info(),
        token: values["token"].as_str().unwrap_or_default().to_owned(),
        notes,
    }))
}

#[derive(Debug)]
struct Scripted {
    info: ProviderInfo,
    token: String,
    /// The saved notes: a run whose code says SHOW_NOTES prints them (which settings ran it).
    notes: String,
}

#[async_trait]
impl SandboxProvider for Scripted {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &[Language::Python]
    }

    async fn health(&self) -> HealthReport {
        let healthy = self.token == GOOD_TOKEN;
        HealthReport {
            healthy,
            message: if healthy {
                "ok".into()
            } else {
                "the token was refused".into()
            },
            details: Map::new(),
        }
    }

    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        Ok(Instance {
            id: "scripted".into(),
            language,
            metadata: Map::new(),
        })
    }

    async fn execute(&self, _: &Instance, request: &ExecRequest) -> Result<ExecutionResult, Error> {
        let code = request.code.as_str();
        let status = match code {
            _ if code.contains("BUSY") => {
                return Err(Error::PoolBusy {
                    retry_after: Duration::from_secs(3),
                    detail: None,
                })
            }
            _ if code.contains("UNREACHABLE") => {
                return Err(Error::Unreachable("connection refused by 10.9.8.7".into()))
            }
            _ if code.contains("SLOW_PROVIDER") => {
                return Err(Error::Timeout(Duration::from_secs(30)))
            }
            _ if code.contains("FAILS") => return Err(Error::Backend("it broke".into())),
            _ if code.contains("PROGRAM_TIMEOUT") => ExecStatus::Timeout,
            _ => ExecStatus::Success,
        };
        let success = status == ExecStatus::Success;
        let mut stdout = format!("ran: {code}\n");
        if code.contains("SHOW_NOTES") {
            stdout.push_str(&format!("notes: {}\n", self.notes));
        }
        Ok(ExecutionResult {
            status,
            stdout,
            stderr: String::new(),
            exit_code: success.then_some(0),
            wall_time_ms: 1,
            result: if success {
                ReturnValue::of(Value::Object(request.arguments.clone()))
            } else {
                ReturnValue::absent()
            },
            artifacts: vec![],
            queue_wait_ms: None,
            metadata: Map::new(),
            egress: None,
        })
    }

    async fn destroy_instance(&self, _: Instance) -> Result<(), Error> {
        Ok(())
    }
}
