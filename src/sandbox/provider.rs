//! The small trait every provider implements, used as `Arc<dyn SandboxProvider>`.

use std::{fmt::Debug, time::Duration};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{
    model::{
        execution::{ExecRequest, ExecutionResult, Language},
        provider::{HealthReport, PoolState, ProviderInfo},
    },
    sandbox::Error,
};

/// A provider's handle on one sandbox (a process slot, a container, a remote session).
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    pub id: String,
    pub language: Language,
    /// Provider-specific facts reported with results.
    pub metadata: Map<String, Value>,
}

impl Instance {
    /// Refuses a request in another language than the instance was made for.
    pub fn check_language(&self, request: &ExecRequest) -> Result<(), Error> {
        if self.language == request.language {
            return Ok(());
        }
        Err(Error::Backend(format!(
            "instance {} runs {}, not {}",
            self.id, self.language, request.language
        )))
    }
}

/// The deadline of a run: what the request asks for, within 1 s and the provider's limit.
pub fn timeout_secs(request: &ExecRequest, limit: u32) -> u32 {
    request.timeout_secs.unwrap_or(limit).clamp(1, limit)
}

/// One run in a fresh instance: create it, execute `request`, destroy it (also after a failed
/// run). Returns the run's outcome and, apart from it, whether the instance was destroyed, so
/// each caller decides what a failed clean-up means.
pub async fn run_once(
    provider: &dyn SandboxProvider,
    request: &ExecRequest,
) -> (Result<ExecutionResult, Error>, Result<(), Error>) {
    let instance = match provider.create_instance(request.language).await {
        Ok(instance) => instance,
        Err(error) => return (Err(error), Ok(())),
    };
    let result = provider.execute(&instance, request).await;
    let destroyed = provider.destroy_instance(instance).await;
    (result, destroyed)
}

#[async_trait]
pub trait SandboxProvider: Debug + Send + Sync + 'static {
    fn info(&self) -> &ProviderInfo;

    fn languages(&self) -> &[Language];

    /// Can this provider run code right now? Never panics; explains what it found.
    async fn health(&self) -> HealthReport;

    /// Its pool right now, for providers that have one; cheap (no I/O), for metrics and the
    /// dashboard.
    fn pool_state(&self) -> Option<PoolState> {
        None
    }

    /// Whether programs here may reach a network at all. Local and docker sandboxes reach one
    /// only on an allow-list; remote providers' sandboxes run on their own networks.
    fn offers_network(&self) -> bool {
        true
    }

    /// Called when the provider becomes the one that runs code (start-up, a save): a chance to
    /// start what makes runs fast, such as a warm container pool. Returns at once; the work
    /// goes on in the background.
    fn warm_up(&self) {}

    /// The longest a whole run of `request` may take here (waiting for a sandbox, starting
    /// it, running, collecting results): past it the console abandons the run, which drops
    /// its future, and the provider's drop guards kill what it started. Providers with a
    /// queue or a start-up cost say so; the default allows the longest run (600 s) and two
    /// minutes for the rest.
    fn run_deadline(&self, request: &ExecRequest) -> Duration {
        Duration::from_secs(u64::from(request.timeout_secs.unwrap_or(600).min(600)) + 120)
    }

    /// Called when the provider is replaced or the console stops: release what it holds
    /// (containers, remote sessions). Runs in flight may fail afterwards.
    async fn shutdown(&self) {}

    /// Where a run of `language` happens. The default suits providers that make a fresh
    /// sandbox (or lease one from a pool of their own) inside `execute`, so that one that dies
    /// between the two calls is never handed out: the instance is only a name,
    /// `<kind>-<language>`.
    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        Ok(Instance {
            id: format!("{}-{language}", self.info().kind),
            language,
            metadata: serde_json::Map::new(),
        })
    }

    /// Runs `request` in `instance`. A failing program is `Ok` with a status; `Err` means the
    /// provider itself failed.
    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error>;

    /// Opens a session: a sandbox held for one caller, with state kept between its cells (see
    /// [`crate::sandbox::session`]). The default: this provider runs stateless only.
    async fn open_session(
        &self,
        _spec: &crate::sandbox::session::SessionSpec,
    ) -> Result<std::sync::Arc<dyn crate::sandbox::session::Session>, Error> {
        Err(Error::Stateless(self.info().kind.clone()))
    }

    /// Releases `instance`. The default does nothing: see [`Self::create_instance`].
    async fn destroy_instance(&self, _instance: Instance) -> Result<(), Error> {
        Ok(())
    }
}
