//! The `e2b` provider: a fresh E2B sandbox per run. `POST /sandboxes` (X-API-Key) creates it,
//! the code interpreter's `POST /execute` on port 49999 runs the wrapped code and streams
//! newline-delimited JSON back, `DELETE /sandboxes/{id}` removes it. See README.md here.

mod config;
pub mod control;
mod error;
mod stream;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::StatusCode;
use serde_json::{json, Map};
use url::Url;

pub use config::{build, build_provider, schema, E2bConfig};

use self::error::E2bError;
use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
    },
    sandbox::{
        self,
        providers::http,
        providers::open_sandboxes::OpenSandboxes,
        registry::ProviderKind,
        runner::{
            remote::{self, SnippetOutput},
            ArtifactLimits,
        },
        Error, Instance, SandboxProvider,
    },
};
use control::ControlPlane;
use stream::Collected;

pub const KIND: &str = "e2b";

/// The code interpreter's port inside every sandbox.
const INTERPRETER_PORT: u16 = 49999;
const MIB: u64 = 1024 * 1024;

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "E2B".into(),
        description: "Runs each program in a fresh E2B cloud sandbox (a Firecracker microVM) \
                      through E2B's code interpreter; charts the code displays come back as \
                      artifacts. Needs an E2B API key."
            .into(),
        tags: vec![
            "saas".into(),
            "microvm".into(),
            "python".into(),
            "javascript".into(),
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

/// What E2B said about a sandbox it created, needed to reach it.
#[derive(Clone, Debug)]
struct Session {
    access_token: Option<String>,
    domain: String,
}

#[derive(Debug)]
pub struct E2bProvider {
    config: E2bConfig,
    control: ControlPlane,
    /// The one URL of every sandbox, when overridden (routed by headers).
    sandbox_url: Option<Url>,
    /// For /execute: no overall timeout, the run's own deadline applies while streaming.
    stream_client: reqwest::Client,
    sessions: OpenSandboxes<Session>,
    info: ProviderInfo,
}

impl E2bProvider {
    pub fn new(config: E2bConfig) -> Result<Self, Error> {
        let api = if config.api_url.trim().is_empty() {
            format!("https://api.{}", config.domain.trim())
        } else {
            config.api_url.trim().to_owned()
        };
        let api = http::endpoint(&api, "https://api.e2b.app")
            .map_err(|message| Error::field("domain", message))?;
        let sandbox_url = match config.sandbox_url.trim() {
            "" => None,
            url => Some(
                http::endpoint(url, "https://sandbox.e2b.app")
                    .map_err(|message| Error::field("sandbox_url", message))?,
            ),
        };
        Ok(E2bProvider {
            control: ControlPlane::new(
                KIND,
                "E2B",
                api,
                &config.api_key,
                Duration::from_secs(config.request_timeout_secs.into()),
            )?,
            stream_client: http::client(KIND, Duration::from_secs(24 * 3600))?,
            sandbox_url,
            config,
            sessions: OpenSandboxes::default(),
            info: info(),
        })
    }

    fn limits(&self) -> ArtifactLimits {
        ArtifactLimits {
            max_count: self.config.max_artifacts as usize,
            max_bytes: self.config.max_artifact_bytes,
        }
    }

    fn execute_request(&self, sandbox_id: &str, session: &Session) -> reqwest::RequestBuilder {
        let request = match &self.sandbox_url {
            Some(url) => self
                .stream_client
                .post(http::join(url, "execute"))
                .header("E2b-Sandbox-Id", sandbox_id)
                .header("E2b-Sandbox-Port", INTERPRETER_PORT.to_string()),
            None => self.stream_client.post(format!(
                "https://{INTERPRETER_PORT}-{sandbox_id}.{}/execute",
                session.domain
            )),
        };
        match &session.access_token {
            Some(token) => request.header("X-Access-Token", token),
            None => request,
        }
    }

    async fn delete_sandbox(&self, sandbox_id: &str) -> Result<(), Error> {
        self.sessions.remove(sandbox_id);
        self.control.delete(sandbox_id).await
    }
}

#[async_trait]
impl SandboxProvider for E2bProvider {
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
        let checked = async {
            let control = &self.control;
            control
                .send("GET /health", control.call(reqwest::Method::GET, "health"))
                .await?;
            // /health says E2B is up; listing sandboxes says the key is good.
            control
                .send(
                    "GET /v2/sandboxes",
                    control.call(reqwest::Method::GET, "v2/sandboxes?limit=1"),
                )
                .await
                .map(drop)
        }
        .await;
        details.insert(
            "latency_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
        match checked {
            Ok(()) => HealthReport {
                healthy: true,
                message: format!("E2B at {} is up and accepts the API key.", self.control.api),
                details,
            },
            Err(error) => HealthReport {
                healthy: false,
                message: match error {
                    Error::Unauthenticated(why) => why,
                    other => format!("E2B cannot be used: {other}"),
                },
                details,
            },
        }
    }

    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        let body = json!({
            "templateID": self.config.template.trim(),
            "timeout": self.config.sandbox_timeout_secs,
            "secure": true,
            "allow_internet_access": false,
            "metadata": { "created_by": "sandbox-console" },
        });
        let created = self.control.create(&body).await?;
        let session = Session {
            access_token: created.access_token,
            domain: created
                .domain
                .unwrap_or_else(|| self.config.domain.trim().to_owned()),
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
            .ok_or_else(|| E2bError::NotOpen {
                id: instance.id.clone(),
            })?;
        let timeout =
            Duration::from_secs(sandbox::timeout_secs(request, self.config.timeout_secs).into());
        let limits = self.limits();
        let memory = (request.language == Language::Python)
            .then_some(u64::from(self.config.memory_mb) * MIB);
        let snippet = remote::snippet(request, memory, limits);
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + timeout;
        let body = json!({
            "code": snippet.code,
            "language": request.language.id(),
        });
        let sent = tokio::time::timeout_at(
            deadline,
            self.execute_request(&instance.id, &session)
                .json(&body)
                .send(),
        )
        .await;
        let collected = match sent {
            Err(_elapsed) => Collected::timed_out(),
            Ok(Err(error)) => return Err(http::transport("POST /execute", &error, timeout)),
            Ok(Ok(response)) if response.status().is_success() => {
                stream::collect(
                    response,
                    deadline,
                    &snippet.marker,
                    self.config.max_output_bytes as usize,
                    limits,
                )
                .await?
            }
            Ok(Ok(response)) => {
                let status = response.status();
                let text = response.bytes().await.unwrap_or_default();
                return Err(match status {
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                        Error::Unauthenticated(format!(
                            "the E2B sandbox refused its access token: HTTP {}: {}",
                            status.as_u16(),
                            http::described(&text)
                        ))
                    }
                    StatusCode::BAD_GATEWAY | StatusCode::NOT_FOUND => E2bError::Gone {
                        id: instance.id.clone(),
                        status: status.as_u16(),
                        excerpt: http::described(&text),
                    }
                    .into(),
                    _ => E2bError::Interpreter {
                        status: status.as_u16(),
                        excerpt: http::described(&text),
                    }
                    .into(),
                });
            }
        };
        let mut stderr = collected.stderr;
        if let Some(error) = &collected.error {
            if !stderr.contains(error.as_str()) {
                stderr.push_str(error);
                if !stderr.ends_with('\n') {
                    stderr.push('\n');
                }
            }
        }
        let limit = if collected.timed_out {
            Some(ExecStatus::Timeout)
        } else if collected.output_over {
            Some(ExecStatus::OutputLimit)
        } else {
            None
        };
        let output = SnippetOutput {
            stdout: collected.stdout,
            stderr,
            failed: collected.error.is_some() || !collected.finished,
            exception: collected.error_name,
            limit,
        };
        let cap = self.config.max_output_bytes as usize;
        let (mut result, mut skipped) = remote::finish_snippet(&snippet, output, cap, limits);
        for artifact in collected.rich {
            if result.artifacts.len() < limits.max_count && artifact.size <= limits.max_bytes {
                result.artifacts.push(artifact);
            } else {
                skipped.push(format!("{:?}: over the artifact limits", artifact.name));
            }
        }
        remote::stamp(&mut result, started, &instance.metadata, &[], skipped);
        Ok(result)
    }

    async fn destroy_instance(&self, instance: Instance) -> Result<(), Error> {
        self.delete_sandbox(&instance.id).await
    }

    async fn shutdown(&self) {
        let open: Vec<String> = self.sessions.ids();
        for id in open {
            if let Err(error) = self.delete_sandbox(&id).await {
                tracing::warn!(%error, sandbox = %id, "could not delete an E2B sandbox");
            }
        }
    }
}
