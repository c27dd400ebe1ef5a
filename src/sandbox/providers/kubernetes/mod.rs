//! The `kubernetes` provider: each run claims a sandbox from a kubernetes-sigs/agent-sandbox
//! warm pool (`SandboxClaim`, `extensions.agents.x-k8s.io/v1beta1`), waits for it to be Ready,
//! writes the main() wrapper into its pod's runtime as a file and runs it there, reads the
//! envelope (typed result, artifacts), and deletes the claim, also after a timeout or an
//! error. Claims left by a console that is gone are swept. See README.md here.

mod claims;
mod config;
mod connect;
mod error;
mod health;
mod reach;
mod runtime;
mod sandboxd;
mod session;

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use kube::Client;
use rand::Rng;
use serde_json::{json, Map};
use tokio::sync::OnceCell;

pub use config::{build, build_provider, schema, KubernetesConfig};

use self::{
    claims::{Bound, ClaimGuard, Claims, NewClaim},
    error::KubernetesError,
    health::Pool,
    runtime::Runtime,
};
use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::{HealthReport, PoolState, ProviderInfo},
    },
    sandbox::{
        self,
        providers::{http, open_sandboxes::OpenSandboxes, owner},
        registry::ProviderKind,
        runner::{
            remote::{self, SnippetOutput},
            ArtifactLimits,
        },
        Error, SandboxProvider,
    },
};

pub const KIND: &str = "kubernetes";

const MIB: u64 = 1024 * 1024;

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Kubernetes (agent-sandbox)".into(),
        description: "Runs each program in a pod claimed from a kubernetes-sigs/agent-sandbox \
                      warm pool (gVisor or Kata through the template's RuntimeClass), deleted \
                      after the run. Needs agent-sandbox v1beta1 with its extensions."
            .into(),
        tags: vec![
            "cluster".into(),
            "kubernetes".into(),
            "isolated".into(),
            "warm-pool".into(),
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

pub struct KubernetesProvider {
    config: KubernetesConfig,
    /// Made on first use (it needs the runtime, and a kubeconfig is read then).
    client: OnceCell<(Client, String)>,
    /// For the pods' runtimes: no overall timeout, each run's deadline applies.
    http: reqwest::Client,
    /// Claims made and not yet deleted, for the deletes at shutdown.
    open: std::sync::Arc<OpenSandboxes<()>>,
    /// The start-up sweep of claims left by consoles that are gone, once.
    swept: OnceCell<()>,
    /// This console, as its claims name it: a label value and the owner annotation.
    console: String,
    owner: String,
    /// The warm pool as the last health check saw it.
    pool: Mutex<Option<Pool>>,
    info: ProviderInfo,
}

impl std::fmt::Debug for KubernetesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesProvider")
            .field("config", &self.config)
            .field("open_claims", &self.open.ids().len())
            .finish_non_exhaustive()
    }
}

impl KubernetesProvider {
    pub fn new(config: KubernetesConfig) -> Result<Self, Error> {
        let owner = owner::owner_of(std::process::id()).unwrap_or_default();
        let console = {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(owner.as_bytes());
            digest[..8].iter().map(|b| format!("{b:02x}")).collect()
        };
        Ok(KubernetesProvider {
            http: http::client(KIND, Duration::from_secs(24 * 3600))?,
            client: OnceCell::new(),
            open: Default::default(),
            swept: OnceCell::new(),
            console,
            owner,
            pool: Mutex::new(None),
            config,
            info: info(),
        })
    }

    async fn client(&self) -> Result<&(Client, String), KubernetesError> {
        self.client
            .get_or_try_init(|| connect::client(&self.config))
            .await
    }

    async fn claims(&self) -> Result<Claims, KubernetesError> {
        let (client, _) = self.client().await?;
        Ok(Claims::new(client.clone(), self.config.namespace.trim()))
    }

    fn limits(&self) -> ArtifactLimits {
        ArtifactLimits {
            max_count: self.config.max_artifacts as usize,
            max_bytes: self.config.max_artifact_bytes,
        }
    }

    /// Deletes the claims whose console is gone (on this host: its process is no more). A
    /// console elsewhere cannot be judged from here: its claims go at their shutdown time.
    async fn sweep(&self, claims: &Claims) {
        self.swept
            .get_or_init(|| async {
                match claims.ours().await {
                    Ok(found) => {
                        for (name, owner) in found {
                            if !owner.is_empty() && !owner::owner_alive(&owner) {
                                if let Err(error) = claims.delete(&name).await {
                                    tracing::warn!(%error, claim = %name, "could not delete a claim left by a console that is gone");
                                }
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "could not list the claims to sweep"),
                }
            })
            .await;
    }

    /// The warm pool's state for a message, read now (or what the last check saw).
    async fn pool_now(&self) -> String {
        let read = match self.client().await {
            Ok((client, _)) => {
                health::pool(
                    client,
                    self.config.namespace.trim(),
                    self.config.warm_pool.trim(),
                )
                .await
            }
            Err(error) => Err(error),
        };
        match read {
            Ok(pool) => {
                let text = format!("{} {}", self.config.warm_pool.trim(), pool.describe());
                *self.pool.lock().unwrap_or_else(|e| e.into_inner()) = Some(pool);
                text
            }
            Err(error) => format!(
                "{} could not be read: {error}",
                self.config.warm_pool.trim()
            ),
        }
    }

    /// Creates the claim `name`, for the cluster to delete `life` after it is Ready (plus
    /// the shutdown margin) should this console not, and waits until it is Ready: its sandbox,
    /// and the milliseconds that took. Not Ready in time: `pool_busy` with the pool's state.
    async fn claim(
        &self,
        claims: &Claims,
        name: &str,
        life: Duration,
    ) -> Result<(Bound, u64), Error> {
        let started = Instant::now();
        let shutdown = time::OffsetDateTime::now_utc()
            + Duration::from_secs(self.config.claim_timeout_secs.into())
            + life
            + Duration::from_secs(self.config.shutdown_after_secs.into());
        let shutdown = shutdown
            .replace_nanosecond(0)
            .unwrap_or(shutdown)
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| Error::Backend(format!("cannot write the claim's shutdown time: {e}")))?;
        let version = claims
            .create(&NewClaim {
                name,
                warm_pool: self.config.warm_pool.trim(),
                console: &self.console,
                owner: &self.owner,
                shutdown_time: shutdown,
            })
            .await?;
        let claim_wait = Duration::from_secs(self.config.claim_timeout_secs.into());
        let bound = match tokio::time::timeout(claim_wait, claims.ready(name, version)).await {
            Ok(bound) => bound?,
            Err(_) => {
                let pool = self.pool_now().await;
                let error = claims::not_ready(claim_wait, pool);
                tracing::warn!(%error, claim = %name, "a claim was not Ready in time");
                return Err(error.into());
            }
        };
        Ok((bound, started.elapsed().as_millis() as u64))
    }

    /// One run in a claimed sandbox; the claim is the caller's to delete.
    async fn run_in_claim(
        &self,
        claims: &Claims,
        name: &str,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        let started = Instant::now();
        let timeout =
            Duration::from_secs(sandbox::timeout_secs(request, self.config.timeout_secs).into());
        let (bound, claimed_ms) = self.claim(claims, name, timeout).await?;
        let reached = reach::reach(&self.config, &bound, timeout + Duration::from_secs(60))?;
        let runtime = Runtime {
            client: &self.http,
            reached: &reached,
            sandbox: &bound.sandbox,
            request_timeout: Duration::from_secs(self.config.request_timeout_secs.into()),
        };
        let limits = self.limits();
        let memory = (request.language == Language::Python)
            .then_some(u64::from(self.config.memory_mb) * MIB);
        let snippet = remote::snippet(request, memory, limits);
        let (file, interpreter, program) = remote::as_program_file(request.language, &snippet);
        let file = format!("{name}-{file}");
        runtime.upload(&file, program.into_bytes()).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        let cap = self.config.max_output_bytes as usize;
        let room = 2 * cap + remote::result_room(limits);
        let ran = runtime
            .execute(&format!("{interpreter} {file}"), deadline, room)
            .await?;
        let limit = if ran.timed_out {
            Some(ExecStatus::Timeout)
        } else if ran.over {
            Some(ExecStatus::OutputLimit)
        } else {
            None
        };
        let output = SnippetOutput {
            stdout: ran.stdout,
            stderr: ran.stderr,
            failed: ran.exit_code.is_some_and(|code| code != 0),
            exception: None,
            limit,
        };
        let (mut result, skipped) = remote::finish_snippet(&snippet, output, cap, limits);
        remote::stamp(
            &mut result,
            started,
            &Map::new(),
            &[
                ("claim", json!(name)),
                ("sandbox", json!(bound.sandbox)),
                ("namespace", json!(self.config.namespace.trim())),
                ("claim_ready_ms", json!(claimed_ms)),
            ],
            skipped,
        );
        Ok(result)
    }
}

#[async_trait]
impl SandboxProvider for KubernetesProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    async fn health(&self) -> HealthReport {
        let started = Instant::now();
        let mut details = Map::new();
        details.insert("namespace".into(), json!(self.config.namespace.trim()));
        details.insert("warm_pool".into(), json!(self.config.warm_pool.trim()));
        let checked = async {
            let (client, server) = self.client().await?;
            details.insert("api".into(), json!(server));
            let pool = health::pool(
                client,
                self.config.namespace.trim(),
                self.config.warm_pool.trim(),
            )
            .await?;
            let missing = health::missing_verb(client, self.config.namespace.trim()).await?;
            Ok::<_, KubernetesError>((server.clone(), pool, missing))
        }
        .await;
        details.insert(
            "latency_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
        let (healthy, message) = match checked {
            Ok((server, pool, None)) => {
                details.insert("ready_replicas".into(), json!(pool.ready));
                details.insert("desired_replicas".into(), json!(pool.desired));
                details.insert("template".into(), json!(pool.template));
                details.insert("runtime_class".into(), json!(pool.runtime_class));
                details.insert("network".into(), json!(pool.network));
                let message = format!(
                    "{server} answers; the warm pool {} {}.",
                    self.config.warm_pool.trim(),
                    pool.describe()
                );
                *self.pool.lock().unwrap_or_else(|e| e.into_inner()) = Some(pool);
                (true, message)
            }
            Ok((server, _, Some(verb))) => (
                false,
                format!(
                    "{server} answers, but the credentials may not {verb} sandboxclaims in the namespace {}: \
                     give them a Role with create, get, watch, list and delete on sandboxclaims.",
                    self.config.namespace.trim()
                ),
            ),
            Err(error) => (false, format!("Kubernetes cannot be used: {error}")),
        };
        HealthReport {
            healthy,
            message,
            details,
        }
    }

    fn pool_state(&self) -> Option<PoolState> {
        let pool = self
            .pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        Some(PoolState {
            size: pool.desired,
            busy: self.open.ids().len() as u64,
            warming: pool.desired.saturating_sub(pool.ready),
            waiting: 0,
            ahead: None,
        })
    }

    fn offers_network(&self) -> bool {
        // The template's NetworkPolicy decides; the default one allows the internet.
        true
    }

    fn run_deadline(&self, request: &ExecRequest) -> Duration {
        let run = sandbox::timeout_secs(request, self.config.timeout_secs);
        Duration::from_secs(
            u64::from(self.config.claim_timeout_secs)
                + u64::from(run)
                + 3 * u64::from(self.config.request_timeout_secs),
        )
    }

    async fn execute(
        &self,
        instance: &sandbox::Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        let claims = self.claims().await?;
        self.sweep(&claims).await;
        let name = format!("sandbox-console-{:016x}", rand::thread_rng().gen::<u64>());
        self.open.insert(name.clone(), ());
        let mut guard = ClaimGuard {
            claims: Some(claims.clone()),
            name: name.clone(),
        };
        let result = self.run_in_claim(&claims, &name, request).await;
        guard.claims = None;
        let deleted = claims.delete(&name).await;
        self.open.remove(&name);
        if let Err(error) = deleted {
            // The run's result stands; the cluster deletes the claim at its shutdown time.
            tracing::warn!(%error, claim = %name, "could not delete a run's claim");
        }
        result
    }

    async fn open_session(
        &self,
        spec: &crate::sandbox::session::SessionSpec,
    ) -> Result<std::sync::Arc<dyn crate::sandbox::session::Session>, Error> {
        session::open(self, spec).await
    }

    async fn shutdown(&self) {
        let Ok(claims) = self.claims().await else {
            return;
        };
        for name in self.open.ids() {
            if let Err(error) = claims.delete(&name).await {
                tracing::warn!(%error, claim = %name, "could not delete a claim at shutdown");
            }
            self.open.remove(&name);
        }
    }
}
