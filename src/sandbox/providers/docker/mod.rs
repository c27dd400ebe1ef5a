//! The `docker` provider: runs Python and JavaScript in hardened containers from a warm pool,
//! through the Docker Engine API (bollard), under runc or gVisor. See README.md in this folder.

mod ahead;
mod artifacts;
mod config;
mod drive;
mod engine;
mod error;
mod health;
mod heartbeat;
mod inspect;
mod pool;
mod run;
pub mod runtimes;
mod session;
mod verdict;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use tokio::sync::OnceCell;

pub use crate::sandbox::providers::owner::{owner_alive, owner_of};
pub use config::{
    build, build_provider, build_provider_with, build_with, schema, DockerConfig, GVISOR_MIN_PIDS,
    RUNSC_EGRESS,
};
pub use engine::{LABEL_MANAGED, LABEL_OWNER, LABEL_POOL};

use self::error::DockerError;
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
        runner, Error, Instance, SandboxProvider,
    },
};
use engine::Engine;
use heartbeat::Heartbeat;
use pool::Pool;

pub const KIND: &str = "docker";

/// How long past its own timeout a run may go without an answer from dockerd once it has a
/// container (a replacement's cold start, the verdict's inspects, the artifacts each answer in
/// far less): a frozen daemon is given up on then; a slow one that keeps answering is not.
pub const RUN_MARGIN: Duration = Duration::from_secs(8);

/// What `runsc exec` prints when the sandbox under it died (an OOM kill takes it down whole).
const RUNSC_LOST_SANDBOX: &str = "urpc method \"containerManager.";

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Docker".into(),
        description: "Runs each program in a hardened container from a warm pool: no network (or an allow-list), \
                      read-only root, nobody's uid, no capabilities, memory, CPU and pids limits; \
                      runc or gVisor. Needs dockerd and a runtime image."
            .into(),
        tags: vec![
            "containers".into(),
            "gvisor".into(),
            "python".into(),
            "javascript".into(),
        ],
    }
}

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build: build_with,
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// What the pools and their background tasks share.
#[derive(Debug)]
pub struct Shared {
    config: DockerConfig,
    engine: Engine,
    /// This process, as written on our containers.
    owner: String,
    /// This provider instance, as written on our containers.
    pool_id: String,
    /// The start-up sweep of a crashed console's containers, done once per provider.
    swept: OnceCell<()>,
    /// The package environment bound read-only into every container.
    mount: Option<Mount>,
    /// The allow-list sandboxes reach the network through; `None`: no network.
    egress: Option<Egress>,
    /// The modules a Python interpreter started ahead imports.
    preload: Vec<String>,
}

impl Shared {
    /// What an interpreter of `language` started ahead preloads; `None` when interpreters of
    /// that language are not started ahead.
    fn preload_for(&self, language: Language) -> Option<&[String]> {
        (self.config.start_ahead && language == Language::Python).then_some(&self.preload)
    }

    /// Creates and starts one hardened container (after the one-time sweep).
    async fn start(&self, language: Language) -> Result<String, Error> {
        let docker = self.engine.client().await?;
        self.swept
            .get_or_init(|| async {
                match sweep_stale(&docker).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        removed = n,
                        "removed sandbox containers left by a console that is gone"
                    ),
                    Err(error) => {
                        tracing::warn!(%error, "could not look for stale sandbox containers")
                    }
                }
            })
            .await;
        Ok(engine::start_container(
            &docker,
            &self.config,
            language,
            &self.owner,
            &self.pool_id,
            self.mount.as_ref(),
            self.egress.as_ref().map(|e| e.files.as_ref()),
        )
        .await?)
    }
}

/// Removes containers with our label whose owning process is gone (a console that crashed or
/// was killed). Containers of live consoles on the same daemon are left alone.
async fn sweep_stale(docker: &bollard::Docker) -> Result<usize, DockerError> {
    let mut removed = 0;
    for (id, owner, _pool) in engine::list_ours(docker).await? {
        if !owner_alive(&owner) && engine::remove(docker, &id).await {
            removed += 1;
        }
    }
    Ok(removed)
}

#[derive(Debug)]
pub struct DockerProvider {
    info: ProviderInfo,
    shared: Arc<Shared>,
    python: Arc<Pool>,
    javascript: Arc<Pool>,
}

impl DockerProvider {
    /// A provider whose sandboxes have no network.
    pub fn new(config: DockerConfig, environment: Resolved) -> Self {
        Self::with_network(config, environment, None)
    }

    /// A provider whose sandboxes reach what `egress` allows (nothing without one).
    pub fn with_network(
        config: DockerConfig,
        environment: Resolved,
        egress: Option<Egress>,
    ) -> Self {
        let size = config.pool_size.max(1) as usize;
        let pool_id = format!("{:016x}", rand::random::<u64>());
        let owner = owner_of(std::process::id()).unwrap_or_else(|| "unknown".into());
        DockerProvider {
            info: info(),
            python: Arc::new(Pool::new(Language::Python, size)),
            javascript: Arc::new(Pool::new(Language::Javascript, size)),
            shared: Arc::new(Shared {
                engine: Engine::new(&config.docker_host),
                config,
                owner,
                pool_id,
                swept: OnceCell::new(),
                preload: runner::ahead::preload_for(environment.mount()),
                mount: environment.mount().cloned(),
                egress,
            }),
        }
    }

    /// Gives the leased container its network for one run: a TUN in its namespace, served
    /// by the console under the allow-list until the session closes.
    async fn connect(
        &self,
        docker: &bollard::Docker,
        container: &str,
    ) -> Result<Option<egress::Running>, Error> {
        let Some(egress) = &self.shared.egress else {
            return Ok(None);
        };
        let pid = inspect::init_pid(docker, container).await?;
        let device =
            tokio::task::spawn_blocking(move || egress::namespace::tun_in_namespace_of(pid))
                .await
                .map_err(|e| Error::Backend(format!("the network set-up crashed: {e}")))?
                .map_err(|e| {
                    Error::Backend(format!("cannot give the container its network: {e}"))
                })?;
        let session = egress::Session::new(egress.policy.clone());
        let running = egress::serve(device, session)
            .map_err(|e| Error::Backend(format!("cannot serve the container's network: {e}")))?;
        Ok(Some(running))
    }

    pub fn config(&self) -> &DockerConfig {
        &self.shared.config
    }

    /// This provider instance's label value ([`LABEL_POOL`]) on its containers.
    pub fn pool_id(&self) -> &str {
        &self.shared.pool_id
    }

    fn pool(&self, language: Language) -> &Arc<Pool> {
        match language {
            Language::Python => &self.python,
            Language::Javascript => &self.javascript,
        }
    }

    fn pools(&self) -> [&Arc<Pool>; 2] {
        [&self.python, &self.javascript]
    }

    /// The ids of the idle containers of `language` (for tests and diagnostics).
    pub fn idle_containers(&self, language: Language) -> Vec<String> {
        self.pool(language).idle_ids()
    }
}

#[async_trait]
impl SandboxProvider for DockerProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    fn offers_network(&self) -> bool {
        self.shared.egress.is_some()
    }

    async fn open_session(
        &self,
        spec: &crate::sandbox::session::SessionSpec,
    ) -> Result<Arc<dyn crate::sandbox::session::Session>, Error> {
        session::open(self, spec).await
    }

    async fn health(&self) -> HealthReport {
        let mut details = match self.check_daemon().await {
            Ok(details) => details,
            Err(message) => {
                return HealthReport {
                    healthy: false,
                    message,
                    details: Map::new(),
                }
            }
        };
        details.insert(
            "environment".into(),
            json!(self
                .shared
                .mount
                .as_ref()
                .map_or("none", |m| m.name.as_str())),
        );
        let mut replaced = 0;
        for pool in self.pools() {
            replaced += pool.heal(&self.shared).await;
            let name = pool.language.id();
            details.insert(format!("pool_{name}_size"), json!(pool.size()));
            details.insert(format!("pool_{name}_busy"), json!(pool.busy()));
            details.insert(format!("pool_{name}_idle"), json!(pool.idle()));
            if self.shared.preload_for(pool.language).is_some() {
                details.insert(format!("ahead_{name}_ready"), json!(pool.ready_ahead()));
                details.insert(format!("ahead_{name}_preload"), json!(self.shared.preload));
                if let Some(problem) = pool.ahead_problem() {
                    details.insert(format!("ahead_{name}_problem"), json!(problem));
                }
            }
        }
        if replaced > 0 {
            details.insert("containers_replaced".into(), json!(replaced));
        }
        if let Some(egress) = &self.shared.egress {
            let checked = egress.probe(self).await;
            match checked {
                Ok(network) => details.extend(network),
                Err(message) => {
                    return HealthReport {
                        healthy: false,
                        message,
                        details,
                    }
                }
            }
        }
        // The pool is not part of the message: the card shows it once, live, beside it.
        let mut message = format!(
            "dockerd {} answered; runtime {} and the images are there.",
            details
                .get("docker_version")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            self.shared.config.runtime,
        );
        if let Some(note) = egress::unreachable_note(&details) {
            message = format!("{message} {note}");
        }
        HealthReport {
            healthy: true,
            message,
            details,
        }
    }

    fn pool_state(&self) -> Option<PoolState> {
        let size = self.pools().iter().map(|p| p.size() as u64).sum();
        let busy = self.pools().iter().map(|p| p.busy() as u64).sum();
        let warming = self.pools().iter().map(|p| p.warming() as u64).sum();
        let waiting = self.pools().iter().map(|p| p.waiting()).sum();
        Some(PoolState {
            size,
            busy,
            warming,
            waiting,
            ahead: self
                .shared
                .preload_for(Language::Python)
                .map(|_| AheadState {
                    ready: self.python.ready_ahead() as u64,
                    warming: self.python.warming() as u64,
                }),
        })
    }

    fn warm_up(&self) {
        for pool in self.pools() {
            pool.warm_up(&self.shared);
        }
    }

    async fn shutdown(&self) {
        for pool in self.pools() {
            pool.close(&self.shared).await;
        }
        // Anything still labelled with this provider's pool (a start cut off half-way, a
        // removal the daemon refused twice) goes now, not with the next console's sweep.
        let Ok(docker) = self.shared.engine.client().await else {
            return;
        };
        if let Ok(ours) = engine::list_ours(&docker).await {
            for (id, _, pool) in ours {
                if pool == self.shared.pool_id {
                    let _ = engine::remove(&docker, &id).await;
                }
            }
        }
    }

    fn run_deadline(&self, request: &ExecRequest) -> Duration {
        let config = &self.shared.config;
        let timeout = sandbox::timeout_secs(request, config.timeout_secs);
        // The wait for a slot, then the run within its own bound (see `execute`), and a
        // little for the answer to come back.
        Duration::from_secs(u64::from(config.queue_wait_secs) + u64::from(timeout) + 2) + RUN_MARGIN
    }

    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        let config = &self.shared.config;
        let timeout = sandbox::timeout_secs(request, config.timeout_secs);
        let pool = self.pool(request.language);
        let wait = Duration::from_secs(config.queue_wait_secs.into());
        let mut lease = pool.checkout(&self.shared, wait).await?;
        // Once a container is ours, the run goes on while dockerd answers: a frozen daemon
        // is given up on `timeout + RUN_MARGIN` after its last answer (not after the queue
        // wait too); a busy machine's slow one is waited for.
        let timeout = Duration::from_secs(timeout.into());
        let quiet = timeout + RUN_MARGIN;
        let beat = Heartbeat::new();
        let outcome = match beat
            .bound(quiet, self.run(&mut lease, request, timeout, &beat))
            .await
        {
            Some(outcome) => outcome,
            None => {
                tracing::warn!(
                    container = short(&lease.id),
                    "dockerd gave no answer during a run for {quiet:?}; abandoned"
                );
                Err(Error::Timeout(quiet))
            }
        };
        let reusable = matches!(outcome, Ok((_, true)));
        pool.release(&self.shared, lease, reusable);
        outcome.map(|(result, _)| result)
    }
}

impl Drop for DockerProvider {
    /// A provider dropped without `shutdown` (a path that forgot it) still releases its idle
    /// containers, when a runtime is there to do it.
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = self.shared.clone();
        let pools = [self.python.clone(), self.javascript.clone()];
        runtime.spawn(async move {
            for pool in pools {
                pool.close(&shared).await;
            }
        });
    }
}
