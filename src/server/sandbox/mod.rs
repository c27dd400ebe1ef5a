//! The sandbox service: stored provider configs (`sandbox.provider_type`, `sandbox.<kind>` in
//! `system_setting`), the active provider (rebuilt on every save: no restart, ever), runs with
//! their history and metrics, and test connection. Doors (server functions, the REST and
//! RAGFlow APIs, the CLI) call it with plain values; it never sees a request.
//!
//! One file per idea: [`stored`] (configs, seeding, saving), [`secrets`] (sealing and
//! merging secret fields), [`active`] (the running provider and its health), [`run`] (runs
//! with history and metrics), [`test_connection`].

mod active;
pub mod choices;
mod run;
mod secrets;
mod stored;
mod test_connection;
#[cfg(test)]
mod tests;
mod verify;

use std::sync::Arc;

use serde_json::{json, Map, Value};
use sqlx::AnyPool;

pub use active::HEALTH_DEADLINE;
pub use stored::{Gate, DEFAULT_KIND, PROVIDER_TYPE};

use crate::{
    model::{provider::ProviderInfo, schema::ConfigSchema},
    sandbox::registry::Registry,
    server::{
        db::system_setting::{self, SettingError},
        environments::catalog::StoreCatalog,
        history_writer::HistoryWriter,
        metrics::Metrics,
        secrets::SecretBox,
    },
};

pub struct SandboxService {
    pool: AnyPool,
    /// Counted when the server runs this service (the CLI has none).
    metrics: Option<Arc<Metrics>>,
    registry: Registry,
    secrets: SecretBox,
    loaded: active::Loaded,
    /// Saves and rebuilds one at a time: the running provider is always the one built from
    /// the latest stored version, and each audit row follows its own write.
    swap: tokio::sync::Mutex<()>,
    health: Arc<active::HealthCache>,
    runs: run::Runs,
    history: HistoryWriter,
    /// Whether active providers warm up (the server) or only do what each run needs (the CLI).
    warm: bool,
    /// The environments providers mount, when the console has them.
    environments: Option<Arc<StoreCatalog>>,
}

impl std::fmt::Debug for SandboxService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxService")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl SandboxService {
    /// Seeds the settings on a first start (the local provider, active, with its defaults) and
    /// builds the active provider. A stored config that no longer builds leaves no provider
    /// active, and says why in the log; the console still starts so an admin can fix it.
    pub async fn start(
        pool: AnyPool,
        registry: Registry,
        secrets: SecretBox,
    ) -> Result<Self, SettingError> {
        Self::start_with(pool, registry, secrets, None, Vec::new()).await
    }

    /// [`SandboxService::start`], with providers built against `environments`: a change
    /// there (a new ready build, a new default) rebuilds the active provider. `console` is
    /// where the console listens: sandboxes on an allow-list never reach it.
    pub async fn start_with(
        pool: AnyPool,
        registry: Registry,
        secrets: SecretBox,
        environments: Option<Arc<StoreCatalog>>,
        console: Vec<std::net::SocketAddr>,
    ) -> Result<Self, SettingError> {
        let registry = registry.update_context(|context| {
            if let Some(catalog) = &environments {
                context.environments = catalog.clone();
            }
            context.console = console;
        });
        let service = SandboxService {
            environments,
            history: HistoryWriter::new(pool.clone()),
            pool,
            metrics: None,
            registry,
            secrets,
            loaded: active::Loaded::default(),
            swap: tokio::sync::Mutex::new(()),
            health: Arc::new(active::HealthCache::default()),
            runs: run::Runs::default(),
            warm: false,
        };
        if system_setting::get(&service.pool, PROVIDER_TYPE)
            .await?
            .is_none()
        {
            if let Ok(kind) = service.registry.get(DEFAULT_KIND) {
                let defaults = (kind.schema)().normalize(&Map::new()).unwrap_or_default();
                stored::seed(
                    &service.pool,
                    &stored::setting_name(DEFAULT_KIND),
                    &Value::Object(defaults),
                )
                .await?;
                stored::seed(&service.pool, PROVIDER_TYPE, &json!(DEFAULT_KIND)).await?;
            }
        }
        service.load_active().await?;
        Ok(service)
    }

    /// Counts every run in `metrics` from now on.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.history = self.history.with_metrics(metrics.clone());
        self.metrics = Some(metrics);
        self
    }

    /// Notes `replica` (this console's name among replicas) beside every run it records.
    pub fn with_replica(mut self, replica: &str) -> Self {
        self.history = self.history.with_replica(replica);
        self
    }

    /// Keeps history rows the database refuses in a spool in `dir` (and writes what an
    /// earlier run left there): none is lost to an outage or a stop.
    pub fn with_history_spool(mut self, dir: std::path::PathBuf) -> Self {
        self.history = self.history.with_spool(dir);
        self
    }

    /// History rows not yet written (the database refused them; they wait in the spool).
    pub fn history_backlog(&self) -> usize {
        self.history.pending()
    }

    /// Warms the active provider now and every provider that becomes active later (pools of
    /// warm sandboxes): what a long-running server wants, not a one-shot CLI command.
    pub fn with_warm_up(mut self) -> Self {
        self.warm = true;
        if let Some((_, provider)) = self.active() {
            provider.warm_up();
        }
        self
    }

    /// Every registered provider, in registry order.
    pub fn provider_infos(&self) -> Vec<ProviderInfo> {
        self.registry.kinds().map(|k| (k.info)()).collect()
    }

    /// A registered provider's schema.
    pub fn schema_of(&self, kind: &str) -> Option<ConfigSchema> {
        self.registry.get(kind).ok().map(|k| (k.schema)())
    }
}
