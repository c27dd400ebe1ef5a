//! Verifying an environment under the real isolation: every top-level module imported in a
//! fresh sandbox of each provider that mounts environments and has been set up here (local;
//! docker under runc and runsc once its settings are saved), with its saved settings and the
//! environment in question.

use std::time::Instant;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::SandboxService;
use crate::{
    model::{
        environment::Verification,
        execution::{ExecRequest, ExecStatus, Language},
    },
    sandbox::{environment::Mount, run_once, SandboxProvider},
    server::environments::Verifier,
};

/// Long enough for pandas under gVisor on a loaded host.
const IMPORT_TIMEOUT_SECS: u32 = 120;

const PYTHON_CHECK: &str = r#"
import importlib, sys, time

def main(modules):
    started = time.perf_counter()
    failed = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as e:
            failed[name] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return {"ms": int((time.perf_counter() - started) * 1000), "failed": failed}
"#;

const JAVASCRIPT_CHECK: &str = r#"
function main({ modules }) {
  const started = Date.now();
  const failed = {};
  for (const name of modules) {
    try { require(name); } catch (e) { failed[name] = String(e && e.message || e).split('\n')[0]; }
  }
  return { ms: Date.now() - started, failed };
}
"#;

/// One provider set-up to verify on: a label and the settings to override.
fn variants(kind: &str) -> Vec<(String, Map<String, Value>)> {
    match kind {
        "docker" => ["runc", "runsc"]
            .into_iter()
            .map(|runtime| {
                let mut overrides = Map::new();
                overrides.insert("runtime".into(), json!(runtime));
                overrides.insert("pool_size".into(), json!(1));
                if runtime == "runsc" {
                    overrides.insert("pids_limit".into(), json!(1000));
                }
                (format!("docker ({runtime})"), overrides)
            })
            .collect(),
        other => vec![(other.to_owned(), Map::new())],
    }
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl SandboxService {
    async fn verify_on(
        &self,
        kind: &str,
        overrides: Map<String, Value>,
        mount: &Mount,
        python: &[String],
        npm: &[String],
    ) -> Result<u64, String> {
        let stored = self
            .stored_values(&self.pool, kind)
            .await
            .map_err(|e| e.to_string())?;
        let mut config = self.open_secrets(kind, stored).map_err(|e| e.to_string())?;
        config.extend(overrides);
        config.insert(
            "environment".into(),
            json!(format!("{}@{}", mount.name, mount.build)),
        );
        config.insert("timeout_secs".into(), json!(IMPORT_TIMEOUT_SECS));
        config.insert("fresh_container_per_run".into(), json!(true));
        let provider = self
            .registry
            .build(kind, &config)
            .map_err(|e| format!("its settings do not build: {e}"))?;
        let outcome = self.import_all(provider.as_ref(), python, npm).await;
        provider.shutdown().await;
        outcome
    }

    async fn import_all(
        &self,
        provider: &dyn SandboxProvider,
        python: &[String],
        npm: &[String],
    ) -> Result<u64, String> {
        let health = provider.health().await;
        if !health.healthy {
            return Err(format!(
                "not checked: the provider is not healthy ({})",
                health.message
            ));
        }
        let mut total = 0;
        for (language, code, modules) in [
            (Language::Python, PYTHON_CHECK, python),
            (Language::Javascript, JAVASCRIPT_CHECK, npm),
        ] {
            if modules.is_empty() {
                continue;
            }
            let request = ExecRequest {
                language,
                code: code.to_owned(),
                arguments: Map::from_iter([("modules".to_owned(), json!(modules))]),
                timeout_secs: Some(IMPORT_TIMEOUT_SECS),
            };
            let (result, _) = run_once(provider, &request).await;
            let result = result.map_err(|e| e.to_string())?;
            if result.status != ExecStatus::Success {
                let stderr: String = result
                    .stderr
                    .lines()
                    .rev()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" | ");
                return Err(format!(
                    "{} importing {language} modules: {stderr}",
                    result.status.id()
                ));
            }
            let value = &result.result.value;
            if let Some(failed) = value["failed"].as_object().filter(|f| !f.is_empty()) {
                let list: Vec<String> = failed
                    .iter()
                    .map(|(name, why)| format!("{name}: {}", why.as_str().unwrap_or_default()))
                    .collect();
                return Err(list.join("; "));
            }
            total += value["ms"].as_u64().unwrap_or_default();
        }
        Ok(total)
    }
}

#[async_trait]
impl Verifier for SandboxService {
    async fn verify(&self, mount: &Mount, python: &[String], npm: &[String]) -> Vec<Verification> {
        let kinds: Vec<String> = self
            .registry
            .kinds()
            .filter(|kind| {
                (kind.schema)()
                    .fields
                    .iter()
                    .any(|f| f.key == "environment")
            })
            .map(|kind| (kind.info)().kind)
            .collect();
        let active = self.active().map(|(kind, _)| kind);
        let mut out = Vec::new();
        for kind in kinds {
            // Only providers an admin set up: never a default docker socket nobody chose
            // (another job's daemon, or none).
            let saved = self
                .stored_values(&self.pool, &kind)
                .await
                .is_ok_and(|values| !values.is_empty());
            if !saved && active.as_deref() != Some(kind.as_str()) {
                continue;
            }
            for (label, overrides) in variants(&kind) {
                let started = Instant::now();
                let outcome = self.verify_on(&kind, overrides, mount, python, npm).await;
                tracing::info!(provider = %label, environment = %mount.name, ok = outcome.is_ok(), took_ms = started.elapsed().as_millis() as u64, "verified an environment");
                out.push(match outcome {
                    Ok(ms) => Verification {
                        provider: label,
                        ok: true,
                        import_ms: Some(ms),
                        error: None,
                        checked_at: now(),
                    },
                    Err(error) => Verification {
                        provider: label,
                        ok: false,
                        import_ms: None,
                        error: Some(error.chars().take(1000).collect()),
                        checked_at: now(),
                    },
                });
            }
        }
        out
    }
}
