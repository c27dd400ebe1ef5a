//! The `ucloud_agent_sandbox` provider (RAGFlow's): a fresh UCloud Agent Sandbox per run, on
//! UCloud's E2B-compatible API. The sandbox is created and deleted through E2B's control plane
//! (`e2b::control`, shared); the run is the remote main() wrapper written with envd's `/files`
//! and started with its `process.Process/Start` stream (`envd.rs`), as RAGFlow's SDK does on
//! the `base` template. See README.md here.

mod config;
mod envd;
mod error;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use rand::Rng;
use serde_json::{json, Map};

pub use config::{build, build_provider, schema, UcloudConfig};

use self::{
    envd::{Envd, ENVD_PORT},
    error::UcloudError,
};
use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
    },
    sandbox::{
        self,
        providers::{e2b::control::ControlPlane, http, open_sandboxes::OpenSandboxes},
        registry::ProviderKind,
        runner::{
            remote::{self, SnippetOutput},
            ArtifactLimits,
        },
        Error, Instance, SandboxProvider,
    },
};

pub const KIND: &str = "ucloud_agent_sandbox";

const MIB: u64 = 1024 * 1024;
/// The base template's user's home, where each run's folder goes.
const HOME: &str = "/home/user";

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "UCloud Agent Sandbox".into(),
        description: "Runs each program in a fresh UCloud Agent Sandbox (E2B-compatible cloud \
                      sandboxes), deleted after the run; no internet unless allowed. Needs a \
                      UCloud API key."
            .into(),
        tags: vec![
            "saas".into(),
            "cloud".into(),
            "isolated".into(),
            "ucloud".into(),
        ],
    }
}

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build: |raw, _| build(raw),
    }
}

/// What UCloud said about a sandbox it created, needed to reach it.
#[derive(Clone, Debug)]
struct Session {
    access_token: Option<String>,
    domain: String,
}

#[derive(Debug)]
pub struct UcloudProvider {
    config: UcloudConfig,
    control: ControlPlane,
    /// For envd: no overall timeout, the run's own deadline applies while streaming.
    stream_client: reqwest::Client,
    sessions: OpenSandboxes<Session>,
    info: ProviderInfo,
}

impl UcloudProvider {
    pub fn new(config: UcloudConfig) -> Result<Self, Error> {
        let api = match config.api_url.trim() {
            "" => format!("{}://api.{}", config.scheme(), config.domain()),
            url => url.to_owned(),
        };
        let api = http::endpoint(&api, "https://api.cn-wlcb.sandbox.ucloudai.com")
            .map_err(|message| Error::field("domain", message))?;
        Ok(UcloudProvider {
            control: ControlPlane::new(
                KIND,
                "UCloud Agent Sandbox",
                api,
                &config.api_key,
                Duration::from_secs(config.request_timeout_secs.into()),
            )?,
            stream_client: http::client(KIND, Duration::from_secs(24 * 3600))?,
            config,
            sessions: OpenSandboxes::default(),
            info: info(),
        })
    }

    fn envd<'a>(&'a self, sandbox_id: &'a str, session: &'a Session) -> Envd<'a> {
        let (base, routed) = match self.config.sandbox_url.trim() {
            "" => (
                format!(
                    "{}://{ENVD_PORT}-{sandbox_id}.{}",
                    self.config.scheme(),
                    session.domain
                ),
                false,
            ),
            url => (url.to_owned(), true),
        };
        Envd {
            client: &self.stream_client,
            base,
            routed,
            sandbox_id,
            access_token: session.access_token.as_deref(),
            request_timeout: Duration::from_secs(self.config.request_timeout_secs.into()),
        }
    }

    fn limits(&self) -> ArtifactLimits {
        ArtifactLimits {
            max_count: self.config.max_artifacts as usize,
            max_bytes: self.config.max_artifact_bytes,
        }
    }

    async fn delete_sandbox(&self, sandbox_id: &str) -> Result<(), Error> {
        self.sessions.remove(sandbox_id);
        self.control.delete(sandbox_id).await
    }
}

#[async_trait]
impl SandboxProvider for UcloudProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    async fn health(&self) -> HealthReport {
        let started = Instant::now();
        let mut details = Map::new();
        details.insert("api".into(), json!(self.control.api.as_str()));
        details.insert("template".into(), json!(self.config.template));
        // Listing sandboxes says the API answers and the key is good.
        let checked = self
            .control
            .send(
                "GET /v2/sandboxes",
                self.control
                    .call(reqwest::Method::GET, "v2/sandboxes?limit=1"),
            )
            .await;
        details.insert(
            "latency_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
        let (healthy, message) = match checked {
            Ok(_) => (
                true,
                format!(
                    "UCloud Agent Sandbox at {} answers and accepts the API key.",
                    self.control.api
                ),
            ),
            Err(Error::Unauthenticated(why)) => (false, why),
            Err(other) => (
                false,
                format!("UCloud Agent Sandbox cannot be used: {other}"),
            ),
        };
        HealthReport {
            healthy,
            message,
            details,
        }
    }

    fn offers_network(&self) -> bool {
        self.config.allow_internet_access
    }

    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        let body = json!({
            "templateID": self.config.template.trim(),
            "timeout": self.config.sandbox_timeout_secs,
            "secure": true,
            "allow_internet_access": self.config.allow_internet_access,
            "metadata": { "created_by": "sandbox-console" },
            "envVars": {},
        });
        let created = self.control.create(&body).await?;
        let session = Session {
            access_token: created.access_token,
            domain: created.domain.unwrap_or_else(|| self.config.domain()),
        };
        self.sessions.insert(created.sandbox_id.clone(), session);
        Ok(Instance {
            metadata: Map::from_iter([("sandbox_id".into(), json!(created.sandbox_id))]),
            id: created.sandbox_id,
            language,
        })
    }

    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        let session = self
            .sessions
            .get(&instance.id)
            .ok_or_else(|| UcloudError::NotOpen {
                id: instance.id.clone(),
            })?;
        let envd = self.envd(&instance.id, &session);
        let timeout =
            Duration::from_secs(sandbox::timeout_secs(request, self.config.timeout_secs).into());
        let limits = self.limits();
        let memory = (request.language == Language::Python)
            .then_some(u64::from(self.config.memory_mb) * MIB);
        let snippet = remote::snippet(request, memory, limits);
        let folder = format!(
            "{HOME}/sandbox-console-{:016x}",
            rand::thread_rng().gen::<u64>()
        );
        let (file, interpreter, program) = remote::as_program_file(request.language, &snippet);
        let line = format!("{interpreter} {file}");
        let started = Instant::now();
        envd.write(&format!("{folder}/{file}"), program.into_bytes())
            .await?;
        let deadline = tokio::time::Instant::now() + timeout;
        let cap = self.config.max_output_bytes as usize;
        // Room for the wrapper's result line (the artifacts travel in it) above the cap.
        let room = cap + remote::result_room(limits);
        let ran = envd.run(&line, &folder, deadline, room).await?;
        let mut stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
        if let Some(error) = ran.error.as_ref().filter(|_| !ran.timed_out) {
            stderr.push_str(error);
            stderr.push('\n');
        }
        let limit = if ran.timed_out {
            Some(ExecStatus::Timeout)
        } else if ran.over {
            Some(ExecStatus::OutputLimit)
        } else {
            None
        };
        let output = SnippetOutput {
            stdout: String::from_utf8_lossy(&ran.stdout).into_owned(),
            stderr,
            failed: !ran.ended || ran.exit_code.is_some_and(|c| c != 0),
            exception: None,
            limit,
        };
        let (mut result, skipped) = remote::finish_snippet(&snippet, output, cap, limits);
        remote::stamp(
            &mut result,
            started,
            &instance.metadata,
            &[("remote_work_dir", json!(folder))],
            skipped,
        );
        Ok(result)
    }

    async fn destroy_instance(&self, instance: Instance) -> Result<(), Error> {
        self.delete_sandbox(&instance.id).await
    }

    async fn shutdown(&self) {
        let open: Vec<String> = self.sessions.ids();
        for id in open {
            if let Err(error) = self.delete_sandbox(&id).await {
                tracing::warn!(%error, sandbox = %id, "could not delete a UCloud sandbox");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_region_and_plain_http_decide_the_urls() {
        let build =
            |raw: serde_json::Value| super::build_provider(raw.as_object().unwrap()).unwrap();

        let us = build(json!({ "api_key": "k", "region": "us-ca", "insecure_http": true }));
        let cn = build(json!({ "api_key": "k" }));
        let own = build(json!({ "api_key": "k", "domain": "sandbox.example.com" }));

        assert_eq!(
            us.control.api.as_str(),
            "http://api.us-ca.sandbox.ucloudai.com/"
        );
        assert_eq!(
            cn.control.api.as_str(),
            "https://api.cn-wlcb.sandbox.ucloudai.com/"
        );
        assert_eq!(own.control.api.as_str(), "https://api.sandbox.example.com/");
        let session = super::Session {
            access_token: None,
            domain: us.config.domain(),
        };
        assert_eq!(
            us.envd("isb1", &session).base,
            "http://49983-isb1.us-ca.sandbox.ucloudai.com"
        );
    }
}
