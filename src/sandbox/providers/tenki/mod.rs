//! The `tenki` provider (RAGFlow's): a fresh Tenki microVM session per run over gRPC, as
//! Tenki's SDKs talk to it: `CreateSession` and `WaitSession` until it runs on the control
//! plane, the remote main() wrapper written with the data plane's `WriteFile` and run with
//! its `Run` stream (argv, no shell), then `TerminateSession`. See README.md here.

mod client;
mod config;
mod error;
mod proto;

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use rand::Rng;
use serde_json::{json, Map};

pub use config::{build, build_provider, schema, TenkiConfig};

use self::{
    client::{Control, Data},
    error::{failed, TenkiError},
};
use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
    },
    sandbox::{
        self,
        providers::open_sandboxes::OpenSandboxes,
        registry::ProviderKind,
        runner::{
            self,
            remote::{self, SnippetOutput},
            ArtifactLimits,
        },
        Error, Instance, SandboxProvider,
    },
};

pub const KIND: &str = "tenki";

/// The default image's user's home, where each run's folder goes.
const HOME: &str = "/home/tenki";
/// How long a new session may take to run.
const START_LIMIT: Duration = Duration::from_secs(180);

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Tenki".into(),
        description: "Runs each program in a fresh Tenki microVM, ended after the run; no \
                      network unless allowed. Needs a Tenki API key."
            .into(),
        tags: vec![
            "saas".into(),
            "cloud".into(),
            "microvm".into(),
            "isolated".into(),
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
pub struct TenkiProvider {
    config: TenkiConfig,
    control: Control,
    /// The data plane of each open session.
    sessions: OpenSandboxes<Arc<Data>>,
    info: ProviderInfo,
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Data")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl TenkiProvider {
    pub fn new(config: TenkiConfig) -> Result<Self, Error> {
        let control = Control::new(config.api(), &config.api_key, self_timeout(&config))
            .map_err(|message| Error::field("base_url", message))?;
        Ok(TenkiProvider {
            control,
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

    /// Starts a session and waits until it runs; returns its data plane.
    async fn start_session(&self) -> Result<Data, Error> {
        let c = &self.config;
        let positive = |n: u32| (n > 0).then_some(n as i32);
        let created = self
            .control
            .create(proto::CreateSessionRequest {
                owner_id: "self".into(),
                owner_type: "SERVICE".into(),
                allow_inbound: Some(false),
                allow_outbound: Some(c.allow_outbound),
                max_duration: Some(proto::Duration {
                    seconds: c.max_lifetime_secs.into(),
                    nanos: 0,
                }),
                cpu_cores: positive(c.cpu_cores),
                memory_mb: positive(c.memory_mb),
                metadata: HashMap::from([("created_by".to_owned(), "sandbox-console".to_owned())]),
                registry_ref: Some(c.image.trim().to_owned()).filter(|i| !i.is_empty()),
                disk_size_gb: positive(c.disk_size_gb),
            })
            .await
            .map_err(|status| failed("CreateSession", status))?;
        let id = created
            .session
            .as_ref()
            .map(|s| s.id.clone())
            .unwrap_or_default();
        if id.is_empty() {
            return Err(TenkiError::Setup("CreateSession named no session".into()).into());
        }
        let mut ready = created.clone();
        if created.session.as_ref().map(|s| s.state) != Some(proto::SESSION_RUNNING) {
            match self.control.wait_running(&id, START_LIMIT).await {
                Ok(answer) => ready = answer,
                Err(status) => {
                    let _ = self.control.terminate(&id).await;
                    return Err(failed("WaitSession", status));
                }
            }
        }
        let mut endpoint = first(&ready.data_plane_endpoint, &created.data_plane_endpoint);
        let mut credential = first(
            &ready.credential.map(|c| c.credential).unwrap_or_default(),
            &created.credential.map(|c| c.credential).unwrap_or_default(),
        );
        if endpoint.is_empty() || credential.is_empty() {
            match self.control.credential(&id).await {
                Ok(answer) => {
                    endpoint = first(&answer.data_plane_endpoint, &endpoint);
                    credential = answer
                        .credential
                        .map(|c| c.credential)
                        .unwrap_or(credential);
                }
                Err(status) => {
                    let _ = self.control.terminate(&id).await;
                    return Err(failed("CreateSessionCredential", status));
                }
            }
        }
        if endpoint.is_empty() {
            let _ = self.control.terminate(&id).await;
            return Err(TenkiError::NoDataPlane { session: id }.into());
        }
        Data::new(&endpoint, &credential, &id, self_timeout(c)).map_err(|message| {
            Error::from(TenkiError::Setup(format!(
                "the data plane {endpoint}: {message}"
            )))
        })
    }

    async fn end_session(&self, id: &str) -> Result<(), Error> {
        self.sessions.remove(id);
        match self.control.terminate(id).await {
            Err(status) if status.code() == tonic::Code::NotFound => Ok(()),
            other => other.map_err(|status| failed("TerminateSession", status)),
        }
    }
}

fn self_timeout(config: &TenkiConfig) -> Duration {
    Duration::from_secs(config.request_timeout_secs.into())
}

/// A signal's number from the name the guest reports (`SIGKILL`, `KILL` or `9`).
fn signal_number(name: &str) -> Option<i32> {
    match name.trim_start_matches("SIG") {
        "KILL" | "9" => Some(9),
        "XCPU" | "24" => Some(24),
        "XFSZ" | "25" => Some(25),
        _ => None,
    }
}

fn first(a: &str, b: &str) -> String {
    if a.is_empty() { b } else { a }.to_owned()
}

#[async_trait]
impl SandboxProvider for TenkiProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    async fn health(&self) -> HealthReport {
        let started = Instant::now();
        let mut details = Map::new();
        details.insert("api".into(), json!(self.config.api()));
        let answer = self.control.who_am_i().await;
        details.insert(
            "latency_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
        let (healthy, message) = match answer {
            Ok(me) => {
                details.insert(
                    "owner".into(),
                    json!(format!("{} {}", me.owner_type, me.owner_id)),
                );
                (
                    true,
                    format!("Tenki at {} accepts the API key.", self.config.api()),
                )
            }
            Err(status) => match failed("WhoAmI", status) {
                Error::Unauthenticated(why) => (false, why),
                other => (false, format!("Tenki cannot be used: {other}")),
            },
        };
        HealthReport {
            healthy,
            message,
            details,
        }
    }

    fn offers_network(&self) -> bool {
        self.config.allow_outbound
    }

    fn run_deadline(&self, request: &ExecRequest) -> Duration {
        let run = sandbox::timeout_secs(request, self.config.timeout_secs);
        START_LIMIT + Duration::from_secs(u64::from(run) + 60)
    }

    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        let data = self.start_session().await?;
        let id = data.session_id.clone();
        self.sessions.insert(id.clone(), Arc::new(data));
        Ok(Instance {
            metadata: Map::from_iter([("session_id".into(), json!(id))]),
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
        let data = self
            .sessions
            .get(&instance.id)
            .ok_or_else(|| TenkiError::NotOpen {
                id: instance.id.clone(),
            })?;
        let timeout =
            Duration::from_secs(sandbox::timeout_secs(request, self.config.timeout_secs).into());
        let limits = self.limits();
        let snippet = remote::snippet(request, None, limits);
        let folder = format!(
            "{HOME}/sandbox-console-{:016x}",
            rand::thread_rng().gen::<u64>()
        );
        let (file, interpreter, program) = remote::as_program_file(request.language, &snippet);
        let started = Instant::now();
        data.write(&format!("{folder}/{file}"), program.into_bytes())
            .await
            .map_err(|status| failed("WriteFile", status))?;
        let cap = self.config.max_output_bytes as usize;
        let room = cap + remote::result_room(limits);
        let ran = data
            .run(
                vec![interpreter.into(), file.into()],
                &folder,
                timeout,
                room,
            )
            .await
            .map_err(|status| failed("Run", status))?;
        let mut stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
        let killed = ran
            .exit
            .as_ref()
            .filter(|e| !e.signal.is_empty() && !ran.timed_out);
        if let Some(exit) = killed {
            stderr.push_str(&format!("killed by {} ({})\n", exit.signal, exit.reason));
        }
        let limit = if ran.timed_out {
            Some(ExecStatus::Timeout)
        } else if ran.over {
            Some(ExecStatus::OutputLimit)
        } else {
            // A SIGKILL inside the microVM before the deadline is its out-of-memory killer's.
            let ran_for = ran
                .exit
                .as_ref()
                .map_or(started.elapsed(), |e| Duration::from_millis(e.duration_ms));
            killed
                .and_then(|e| signal_number(&e.signal))
                .and_then(|n| runner::classify(Some(n), None, ran_for, timeout, false, &stderr))
        };
        let output = SnippetOutput {
            stdout: String::from_utf8_lossy(&ran.stdout).into_owned(),
            stderr,
            failed: ran.exit.as_ref().is_none_or(|e| e.exit_code != 0),
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
        self.end_session(&instance.id).await
    }

    async fn shutdown(&self) {
        let open: Vec<String> = self.sessions.ids();
        for id in open {
            if let Err(error) = self.end_session(&id).await {
                tracing::warn!(%error, session = %id, "could not end a Tenki session");
            }
        }
    }
}
