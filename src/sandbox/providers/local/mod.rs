//! The `local` provider: runs the host's Python and Node.js in a per-run sandbox built with
//! hakoniwa. See README.md in this folder for what isolates a run and how limits are reported.

mod ahead;
mod ahead_pool;
pub mod build_jail;
mod command;
mod config;
mod error;
mod finish;
mod jail;
mod oom;
pub mod session;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{json, Map};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use config::{build, build_with, schema, LocalConfig};
pub use jail::{stop_channel, KillOnDrop, RawRun, RUN_FOLDER_PREFIX};

use self::{ahead_pool::AheadPool, error::LocalError};
use crate::{
    model::{
        execution::{ExecRequest, ExecutionResult, Language},
        provider::{AheadState, HealthReport, PoolState, ProviderInfo},
    },
    sandbox::{
        self,
        egress::{self, Egress},
        environment::{Mount, Resolved},
        registry::ProviderKind,
        runner::{self, ArtifactLimits, Job, WorkspaceFile},
        Error, Instance, SandboxProvider, Waiting,
    },
};

pub const KIND: &str = "local";
/// How long a sandbox started ahead waits for a run before it is replaced.
const AHEAD_IDLE: Duration = Duration::from_secs(300);

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Local sandbox".into(),
        description: "Runs Python and JavaScript on this host in a fresh sandbox per run: \
                      namespaces, read-only root, no network or an allow-list, landlock, seccomp and resource limits. \
                      Needs no other software."
            .into(),
        tags: vec!["built-in".into(), "python".into(), "javascript".into()],
    }
}

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build: build_with,
    }
}

#[derive(Debug)]
pub struct LocalProvider {
    config: Arc<LocalConfig>,
    /// The package environment mounted read-only into every sandbox.
    mount: Option<Arc<Mount>>,
    /// The allow-list sandboxes reach the network through; `None`: no network.
    egress: Option<Egress>,
    info: ProviderInfo,
    /// One permit per run allowed at once: admission control on a small host.
    slots: Arc<Semaphore>,
    /// Runs waiting for a permit.
    waiting: Waiting,
    /// Python sandboxes started ahead of their runs.
    ahead: Arc<AheadPool>,
}

impl LocalProvider {
    /// A provider whose sandboxes have no network.
    pub fn new(config: LocalConfig, environment: Resolved) -> Self {
        LocalProvider::with_network(config, environment, None)
    }

    /// A provider whose sandboxes reach what `egress` allows (nothing without one).
    pub fn with_network(
        config: LocalConfig,
        environment: Resolved,
        egress: Option<Egress>,
    ) -> Self {
        let mount = environment.mount().cloned().map(Arc::new);
        let config = Arc::new(config);
        let ahead = AheadPool::new(
            ahead::Spec {
                config: config.clone(),
                mount: mount.clone(),
                egress: egress.clone(),
                preload: runner::ahead::preload_for(mount.as_deref()),
                idle: AHEAD_IDLE,
            },
            config.ahead_min as usize,
            config.ahead_max as usize,
        );
        LocalProvider {
            mount,
            egress,
            slots: Arc::new(Semaphore::new(config.max_concurrent_runs.max(1) as usize)),
            waiting: Waiting::default(),
            config,
            info: info(),
            ahead: Arc::new(ahead),
        }
    }

    /// Waits up to the queue limit for a free slot; `PoolBusy` after that. Also returns how
    /// long it waited.
    async fn admit(&self) -> Result<(OwnedSemaphorePermit, Duration), Error> {
        let started = std::time::Instant::now();
        let wait = Duration::from_secs(self.config.queue_wait_secs.into());
        let line = tokio::time::timeout(wait, self.slots.clone().acquire_owned());
        match self.waiting.during(line).await {
            Ok(Ok(permit)) => Ok((permit, started.elapsed())),
            Ok(Err(_closed)) => Err(LocalError::QueueClosed.into()),
            // A run lasts at most the timeout; a slot frees up well before that on average.
            Err(_) => Err(Error::PoolBusy {
                retry_after: Duration::from_secs(self.config.timeout_secs.clamp(1, 5).into()),
                detail: None,
            }),
        }
    }
}

impl LocalProvider {
    /// Runs `files` as they are, without the main() protocol: the interpreter started with
    /// `interpreter_args` in the workspace, in the same sandbox and under the same limits as a
    /// run. What other sandboxes' runtimes do can be built on it (the test tree's fakes of
    /// remote services run their users' programs here).
    pub async fn run_program(
        &self,
        language: Language,
        files: Vec<WorkspaceFile>,
        interpreter_args: Vec<&'static str>,
        timeout: Duration,
    ) -> Result<RawRun, Error> {
        let (slot, _) = self.admit().await?;
        let job = Job {
            language,
            files,
            interpreter_args,
            marker: String::new(),
        };
        self.jailed(slot, job, timeout).await
    }

    /// The started-ahead pool in a health report: its counts, what it preloads, and why it
    /// falls short when it does (in the message too, where the card shows it).
    fn ahead_details(&self, details: &mut Map<String, serde_json::Value>) -> Option<String> {
        if !self.ahead.enabled() {
            return None;
        }
        let counts = self.ahead.counts();
        details.insert("ahead_python_ready".into(), json!(counts.ready));
        details.insert("ahead_python_warming".into(), json!(counts.warming));
        details.insert("ahead_python_preload".into(), json!(self.ahead.preload()));
        if let Some(problem) = &counts.problem {
            details.insert("ahead_python_problem".into(), json!(problem));
        }
        counts.problem
    }

    /// Runs `job` in a Python sandbox started ahead, when one is ready; gives the slot back
    /// otherwise (no ready sandbox, or the one taken was already gone), for a cold start.
    async fn started_ahead(
        &self,
        slot: OwnedSemaphorePermit,
        job: &Job,
        timeout: Duration,
    ) -> Result<Result<RawRun, Error>, OwnedSemaphorePermit> {
        if job.language != Language::Python {
            return Err(slot);
        }
        let Some(sandbox) = self.ahead.take() else {
            return Err(slot);
        };
        // Dropped when this future is (its caller went away): the sandbox is killed at once.
        let (_kill_on_drop, watch) = jail::stop_channel();
        let (done, result) = tokio::sync::oneshot::channel();
        let order = ahead::Order {
            job: job.clone(),
            timeout,
            watch,
            slot,
            done,
        };
        if let Err(order) = sandbox.run(order) {
            return Err(order.slot);
        }
        Ok(match result.await {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(error)) => Err(LocalError::Jail(error).into()),
            Err(_) => Err(Error::Backend(
                "the sandbox started ahead ended without an answer".into(),
            )),
        })
    }

    /// Runs `job` in a fresh sandbox on a blocking thread. The slot goes with the sandbox,
    /// not with this future: a caller that stops waiting leaves the run counted until the
    /// sandbox is gone, and the watchdog kills the sandbox at once.
    async fn jailed(
        &self,
        slot: OwnedSemaphorePermit,
        job: Job,
        timeout: Duration,
    ) -> Result<RawRun, Error> {
        let config = self.config.clone();
        let limits = ArtifactLimits {
            max_count: config.max_artifacts as usize,
            max_bytes: config.max_artifact_bytes,
        };
        let (_kill_on_drop, watch) = jail::stop_channel();
        let mount = self.mount.clone();
        let egress = self.egress.clone();
        let session = egress
            .as_ref()
            .map(|e| egress::Session::new(e.policy.clone()));
        let serving = session.clone();
        let runtime = tokio::runtime::Handle::current();
        let run = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            let network = egress
                .as_ref()
                .zip(serving)
                .map(|(egress, session)| jail::Network {
                    files: &egress.files,
                    serve: Box::new(move |device| {
                        let _runtime = runtime.enter();
                        egress::serve(device, session)
                    }),
                });
            jail::run(
                &config,
                mount.as_deref(),
                &job,
                timeout,
                limits,
                watch,
                network,
            )
        })
        .await;
        // The run is over: its network closes with it, and says what it did.
        let report = session.map(|s| s.finish());
        let mut raw = run
            .map_err(LocalError::Crashed)?
            .map_err(LocalError::Jail)?;
        raw.egress = report;
        Ok(raw)
    }
}

#[async_trait]
impl SandboxProvider for LocalProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    fn offers_network(&self) -> bool {
        self.egress.is_some()
    }

    async fn open_session(
        &self,
        spec: &crate::sandbox::session::SessionSpec,
    ) -> Result<Arc<dyn crate::sandbox::session::Session>, Error> {
        session::open(
            self.config.clone(),
            self.mount.clone(),
            self.egress.clone(),
            spec,
        )
        .await
    }

    fn warm_up(&self) {
        self.ahead.start();
    }

    async fn shutdown(&self) {
        self.ahead.close();
    }

    async fn health(&self) -> HealthReport {
        let config = self.config.clone();
        let mount = self.mount.clone();
        let busy = (self.config.max_concurrent_runs as usize)
            .saturating_sub(self.slots.available_permits());
        match tokio::task::spawn_blocking(move || jail::probe(&config, mount.as_deref())).await {
            Ok(Ok(mut details)) => {
                details.insert("runs_in_progress".into(), json!(busy));
                details.insert(
                    "max_concurrent_runs".into(),
                    json!(self.config.max_concurrent_runs),
                );
                let ahead = self.ahead_details(&mut details);
                let with_ahead = |message: String| match &ahead {
                    Some(problem) => format!("{message} Started ahead: {problem}."),
                    None => message,
                };
                let Some(egress) = &self.egress else {
                    return HealthReport {
                        healthy: true,
                        message: with_ahead("Isolation works: a probe ran as PID 1 with only a loopback interface and a read-only root.".into()),
                        details,
                    };
                };
                let checked = egress.probe(self).await;
                match checked {
                    Ok(network) => {
                        details.extend(network);
                        let mut message = "Isolation works, and the allow-list holds: the allowed hosts resolve, and a sandbox could reach neither the metadata address nor an unlisted name.".to_owned();
                        if let Some(note) = egress::unreachable_note(&details) {
                            message = format!("{message} {note}");
                        }
                        HealthReport {
                            healthy: true,
                            message: with_ahead(message),
                            details,
                        }
                    }
                    Err(message) => HealthReport {
                        healthy: false,
                        message,
                        details,
                    },
                }
            }
            Ok(Err(reason)) => HealthReport {
                healthy: false,
                message: reason,
                details: Map::new(),
            },
            Err(join) => HealthReport {
                healthy: false,
                message: format!("the probe crashed: {join}"),
                details: Map::new(),
            },
        }
    }

    fn pool_state(&self) -> Option<PoolState> {
        let size = u64::from(self.config.max_concurrent_runs);
        let busy = (size as usize).saturating_sub(self.slots.available_permits()) as u64;
        Some(PoolState {
            size,
            busy,
            warming: 0,
            waiting: self.waiting.now(),
            ahead: self.ahead.enabled().then(|| {
                let counts = self.ahead.counts();
                AheadState {
                    ready: counts.ready as u64,
                    warming: counts.warming as u64,
                }
            }),
        })
    }

    fn run_deadline(&self, request: &ExecRequest) -> Duration {
        let timeout = sandbox::timeout_secs(request, self.config.timeout_secs);
        // The wait for a slot, the run with its watchdog's margin, the sandbox's set-up and
        // the artifacts.
        Duration::from_secs(u64::from(self.config.queue_wait_secs) + u64::from(timeout) + 10)
            + jail::KILL_MARGIN
    }

    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        let timeout = sandbox::timeout_secs(request, self.config.timeout_secs);
        let (slot, waited) = self.admit().await?;
        let job = runner::prepare(request);
        let timeout = Duration::from_secs(timeout.into());
        let _running = self.ahead.running();
        let (raw, ahead) = match self.started_ahead(slot, &job, timeout).await {
            Ok(raw) => (raw?, true),
            Err(slot) => (self.jailed(slot, job.clone(), timeout).await?, false),
        };
        let outcome = runner::interpret(&job, raw.exit_code.unwrap_or(-1), &raw.stdout);
        let mut stderr = raw.stderr;
        let (mut status, stdout, result) = runner::settle(outcome, raw.limit, &mut stderr);
        if let Some(report) = &raw.egress {
            egress::explain(report, &mut status, &mut stderr);
        }
        let mut metadata = instance.metadata.clone();
        metadata.insert("started_ahead".into(), json!(ahead));
        if ahead {
            metadata.insert("preloaded".into(), json!(self.ahead.preload()));
        }
        if !raw.skipped_artifacts.is_empty() {
            metadata.insert("skipped_artifacts".into(), json!(raw.skipped_artifacts));
        }
        Ok(ExecutionResult {
            status,
            stdout,
            stderr,
            exit_code: raw.exit_code,
            wall_time_ms: raw.elapsed.as_millis() as u64,
            result,
            artifacts: raw.artifacts,
            queue_wait_ms: Some(waited.as_millis() as u64),
            metadata,
            egress: raw.egress,
        })
    }
}

#[cfg(test)]
mod ahead_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tests;
