//! The `self_managed` provider: RAGFlow's executor manager (or another sandbox-console's
//! `/run`) over HTTP. `POST {endpoint}/run` with `{code_b64, language, arguments}` and the
//! user's code as it is (the executor runs `main()` itself and applies its own checks), health
//! from `GET {endpoint}/healthz`, an optional API token, retries with backoff on transport
//! errors and rate limiting only. See README.md in this folder.

mod config;
mod error;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use reqwest::{header, StatusCode};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use url::Url;

pub use config::{build, build_provider, schema, SelfManagedConfig};

use self::error::ExecutorError;
use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language, ReturnValue},
        provider::{HealthReport, PoolState, ProviderInfo},
    },
    sandbox::{
        providers::http::{self, Body},
        registry::ProviderKind,
        runner::{self, ArtifactFile, ArtifactLimits},
        Error, Instance, SandboxProvider, Waiting,
    },
};

pub const KIND: &str = "self_managed";

const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);
/// Room in an answer for the executor's artifacts (10 files of 10 MB, base64) besides output.
const ARTIFACT_ROOM: usize = 140 * 1024 * 1024;
/// The longest a rate-limited executor's Retry-After is honoured before the next attempt.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Self-managed executor".into(),
        description: "Sends code to RAGFlow's executor manager (or another sandbox-console) over \
                      HTTP: POST /run, with an optional API token, retries on network errors and \
                      rate limiting."
            .into(),
        tags: vec![
            "ragflow".into(),
            "http".into(),
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

#[derive(Debug)]
pub struct SelfManagedProvider {
    config: SelfManagedConfig,
    endpoint: Url,
    client: reqwest::Client,
    info: ProviderInfo,
    /// One permit per run the executor's pool can take at once (`pool_size`), if limited.
    slots: Option<Arc<Semaphore>>,
    /// Runs waiting for a permit.
    waiting: Waiting,
}

/// RAGFlow's `CodeExecutionResult`, as far as it is read. Keys may be missing or null.
#[derive(Debug, Deserialize)]
struct RunAnswer {
    status: String,
    #[serde(default)]
    stdout: Option<String>,
    #[serde(default)]
    stderr: Option<String>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    time_used_ms: Option<f64>,
    #[serde(default)]
    resource_limit_type: Option<String>,
    #[serde(default)]
    runtime_error_type: Option<String>,
    #[serde(default)]
    artifacts: Option<Vec<AnswerArtifact>>,
    #[serde(default)]
    result: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct AnswerArtifact {
    name: String,
    #[serde(default)]
    content_b64: String,
}

/// What one POST /run came back with.
enum Answer {
    Run(Box<RunAnswer>),
    /// Larger than the provider reads: the output is dropped.
    Oversized(usize),
}

impl SelfManagedProvider {
    pub fn new(config: SelfManagedConfig) -> Result<Self, Error> {
        let endpoint = http::endpoint(&config.endpoint, config::EXAMPLE_ENDPOINT)
            .map_err(|message| Error::field("endpoint", message))?;
        Ok(SelfManagedProvider {
            client: http::client(KIND, Duration::from_secs(config.timeout.into()))?,
            endpoint,
            slots: (config.pool_size > 0)
                .then(|| Arc::new(Semaphore::new(config.pool_size as usize))),
            waiting: Waiting::default(),
            config,
            info: info(),
        })
    }

    /// A place in the executor's pool: waits up to the queue limit, then `PoolBusy`.
    async fn slot(&self) -> Result<Option<OwnedSemaphorePermit>, Error> {
        let Some(slots) = &self.slots else {
            return Ok(None);
        };
        let wait = Duration::from_secs(self.config.queue_wait_secs.into());
        let line = tokio::time::timeout(wait, slots.clone().acquire_owned());
        match self.waiting.during(line).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            Ok(Err(_)) | Err(_) => Err(Error::PoolBusy {
                retry_after: Duration::from_secs(1),
                detail: None,
            }),
        }
    }

    fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.config.timeout.into())
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let token = self.config.api_token.trim();
        if token.is_empty() {
            return request;
        }
        request
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header("X-Sandbox-Token", token)
    }

    /// POST /run, retrying (with backoff) transport errors and rate limiting only.
    async fn post_run(&self, body: &Value) -> Result<Answer, Error> {
        let url = http::join(&self.endpoint, "run");
        let limit = 4 * self.config.max_output_bytes as usize + ARTIFACT_ROOM;
        let mut attempt = 0;
        loop {
            let retries_left = attempt < self.config.max_retries;
            let backoff = Duration::from_millis(250 << attempt.min(4));
            attempt += 1;
            let response = match self
                .authorized(self.client.post(&url))
                .json(body)
                .send()
                .await
            {
                Ok(response) => response,
                Err(error) if error.is_connect() && retries_left => {
                    tracing::warn!(%error, attempt, "the executor cannot be reached; retrying");
                    tokio::time::sleep(backoff).await;
                    continue;
                }
                Err(error) => {
                    return Err(http::transport(
                        &format!("POST {url}"),
                        &error,
                        self.request_timeout(),
                    ))
                }
            };
            let status = response.status();
            let retry_after = http::retry_after(response.headers()).map(|d| d.min(MAX_BACKOFF));
            let rate_limited = |retry_after: Option<Duration>| Error::PoolBusy {
                retry_after: retry_after.unwrap_or(Duration::from_secs(1)),
                detail: None,
            };
            if status == StatusCode::TOO_MANY_REQUESTS {
                if retries_left {
                    tokio::time::sleep(retry_after.unwrap_or(backoff)).await;
                    continue;
                }
                return Err(rate_limited(retry_after));
            }
            let bytes = match http::read_limited(response, limit).await {
                Ok(Body::Complete(bytes)) => bytes,
                Ok(Body::Over) => return Ok(Answer::Oversized(limit)),
                Err(error) => {
                    return Err(http::transport(
                        &format!("reading the answer of POST {url}"),
                        &error,
                        self.request_timeout(),
                    ))
                }
            };
            if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                let what = if self.config.api_token.trim().is_empty() {
                    "a request without an API token (set one in the settings)"
                } else {
                    "the API token"
                };
                return Err(Error::Unauthenticated(format!(
                    "the executor at {} refused {what}: HTTP {}: {}",
                    self.endpoint,
                    status.as_u16(),
                    http::described(&bytes)
                )));
            }
            if !status.is_success() {
                return Err(ExecutorError::Status {
                    status: status.as_u16(),
                    excerpt: http::described(&bytes),
                }
                .into());
            }
            let answer: RunAnswer =
                serde_json::from_slice(&bytes).map_err(|source| ExecutorError::NotARunResult {
                    excerpt: http::described(&bytes),
                    source,
                })?;
            // RAGFlow's executor answered a rate-limited request with HTTP 200 and -429.
            if answer.exit_code == Some(-429) {
                if retries_left {
                    tokio::time::sleep(backoff).await;
                    continue;
                }
                return Err(rate_limited(None));
            }
            return Ok(Answer::Run(Box::new(answer)));
        }
    }

    /// RAGFlow's result in our terms. Busy, refused and failed executors are errors; a program
    /// that failed or hit a limit is a result.
    fn translate(&self, answer: RunAnswer, elapsed: Duration) -> Result<ExecutionResult, Error> {
        let code = answer.exit_code.unwrap_or(0) as i32;
        let detail = answer.detail.clone().unwrap_or_default();
        let mut stderr = answer.stderr.unwrap_or_default();
        let mut stdout = answer.stdout.unwrap_or_default();
        let (mut status, exit_code) = match answer.status.as_str() {
            "success" => (ExecStatus::Success, Some(0)),
            "resource_limit_exceeded" => {
                let status = match (answer.resource_limit_type.as_deref(), code) {
                    (Some("time"), _) | (_, -124 | -1) => ExecStatus::Timeout,
                    (Some("memory"), _) | (_, -137) => ExecStatus::MemoryLimit,
                    (Some("output"), _) => ExecStatus::OutputLimit,
                    (Some("processes"), _) => ExecStatus::ProcessLimit,
                    _ => ExecStatus::ProgramError,
                };
                (status, (code >= 0).then_some(code))
            }
            "program_error" | "unauthorized_access" | "runtime_error" => {
                let signalled = answer.runtime_error_type.as_deref() == Some("signalled");
                (ExecStatus::ProgramError, (!signalled).then_some(code))
            }
            "program_runner_error" => match code {
                -10 => {
                    return Err(Error::PoolBusy {
                        retry_after: Duration::from_secs(1),
                        detail: None,
                    })
                }
                // The executor's static analysis refused the code: the program's own failure.
                -999 => (ExecStatus::ProgramError, Some(code)),
                _ => {
                    return Err(ExecutorError::CouldNotRun {
                        code,
                        detail,
                        excerpt: http::one_line(&stderr),
                    }
                    .into())
                }
            },
            other => return Err(ExecutorError::UnknownStatus(http::one_line(other)).into()),
        };
        let cap = self.config.max_output_bytes as usize;
        let cut_out = runner::cap_text(&mut stdout, cap);
        let cut_err = runner::cap_text(&mut stderr, cap);
        if (cut_out || cut_err) && matches!(status, ExecStatus::Success | ExecStatus::ProgramError)
        {
            status = ExecStatus::OutputLimit;
        }
        let result = match (&status, &answer.result) {
            (ExecStatus::Success, Some(envelope))
                if envelope.get("present").and_then(Value::as_bool) == Some(true) =>
            {
                ReturnValue::of(envelope.get("value").cloned().unwrap_or(Value::Null))
            }
            _ => ReturnValue::absent(),
        };
        let sent = answer.artifacts.unwrap_or_default();
        let decoded: Vec<(String, Result<Vec<u8>, String>)> = sent
            .into_iter()
            .map(|a| {
                let bytes = BASE64
                    .decode(a.content_b64.as_bytes())
                    .map_err(|e| format!("damaged content: {e}"));
                (a.name, bytes)
            })
            .collect();
        let files = decoded
            .iter()
            .map(|(name, bytes)| ArtifactFile {
                name: name.clone(),
                regular: true,
                size: bytes.as_ref().map_or(1, |b| b.len() as u64),
            })
            .collect();
        let (artifacts, skipped) =
            runner::select_artifacts(files, ArtifactLimits::default(), |name| {
                decoded
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, bytes)| bytes.clone())
                    .unwrap_or_else(|| Err("missing".into()))
            });
        let mut metadata = Map::new();
        metadata.insert("executor_status".into(), json!(answer.status));
        if !detail.is_empty() {
            metadata.insert("detail".into(), json!(detail));
        }
        if !skipped.is_empty() {
            metadata.insert("skipped_artifacts".into(), json!(skipped));
        }
        Ok(ExecutionResult {
            status,
            stdout,
            stderr,
            exit_code,
            wall_time_ms: answer
                .time_used_ms
                .map_or(elapsed.as_millis() as u64, |ms| ms.max(0.0) as u64),
            result,
            artifacts,
            queue_wait_ms: None,
            metadata,
            egress: None,
        })
    }
}

#[async_trait]
impl SandboxProvider for SelfManagedProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    async fn health(&self) -> HealthReport {
        let url = http::join(&self.endpoint, "healthz");
        let mut details = Map::new();
        details.insert("endpoint".into(), json!(self.endpoint.as_str()));
        let started = Instant::now();
        let (healthy, message) = match self.client.get(&url).timeout(HEALTH_TIMEOUT).send().await {
            Ok(response) if response.status().is_success() => (
                true,
                format!("The executor at {} answers /healthz.", self.endpoint),
            ),
            Ok(response) => {
                let status = response.status().as_u16();
                let body = response.bytes().await.unwrap_or_default();
                (
                    false,
                    format!(
                        "The executor at {} answered /healthz with HTTP {status}: {}",
                        self.endpoint,
                        http::described(&body)
                    ),
                )
            }
            Err(error) => (
                false,
                format!(
                    "Cannot reach the executor: {}",
                    http::transport(&format!("GET {url}"), &error, HEALTH_TIMEOUT)
                ),
            ),
        };
        details.insert(
            "latency_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
        HealthReport {
            healthy,
            message,
            details,
        }
    }

    fn pool_state(&self) -> Option<PoolState> {
        let slots = self.slots.as_ref()?;
        let size = u64::from(self.config.pool_size);
        Some(PoolState {
            size,
            busy: size.saturating_sub(slots.available_permits() as u64),
            warming: 0,
            waiting: self.waiting.now(),
            ahead: None,
        })
    }

    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        let mut body = json!({
            "code_b64": BASE64.encode(&request.code),
            "language": match request.language {
                Language::Python => "python",
                Language::Javascript => "nodejs",
            },
            "arguments": request.arguments,
        });
        // Not in RAGFlow's request model (pydantic ignores it; its executor's own time limit
        // applies); a sandbox-console's /run honours it.
        if let Some(timeout) = request.timeout_secs {
            body["timeout"] = json!(timeout);
        }
        let _slot = self.slot().await?;
        let started = Instant::now();
        let mut result = match self.post_run(&body).await? {
            Answer::Run(answer) => self.translate(*answer, started.elapsed())?,
            Answer::Oversized(limit) => ExecutionResult {
                status: ExecStatus::OutputLimit,
                stdout: String::new(),
                stderr: format!(
                    "the executor's answer was larger than {limit} bytes; its output was dropped\n"
                ),
                exit_code: None,
                wall_time_ms: started.elapsed().as_millis() as u64,
                result: ReturnValue::absent(),
                artifacts: Vec::new(),
                queue_wait_ms: None,
                metadata: Map::new(),
                egress: None,
            },
        };
        result
            .metadata
            .insert("endpoint".into(), json!(self.endpoint.as_str()));
        Ok(result)
    }
}
