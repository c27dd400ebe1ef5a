//! The active provider: the one cell that holds it, rebuilt when its stored settings change
//! (here or in another process), replaced without dropping runs in flight, shut down with
//! the console; and its health, cached so a frozen backend never holds a page.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, RwLock,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Map, Value};

use super::{stored::setting_name, SandboxService};
use crate::{
    model::{
        execution::RequestProblem,
        provider::{ActiveStatus, HealthReport, RunningProvider},
    },
    sandbox::{
        environment::{Catalog, Resolved},
        Error as SandboxError, SandboxProvider,
    },
    server::db::system_setting::{self, SettingError},
};

struct Active {
    kind: String,
    provider: Arc<dyn SandboxProvider>,
}

/// Versions of `sandbox.provider_type`, of the active provider's settings row and of the
/// environments (what their names stand for).
type Fingerprint = Option<(i64, i64, i64)>;

/// The running provider and the stored versions it was built from, installed together: a
/// run that finds the versions it reads already installed runs on the provider built from
/// them, never on the one before (a run that arrives while another rebuilds waits for it).
#[derive(Default)]
struct Installed {
    /// The stored settings last loaded (also when nothing could be built from them), to
    /// notice changes made by another process.
    seen: Fingerprint,
    active: Option<Active>,
}

/// What the running provider should be: nothing changed since it was built, or rebuild it.
#[derive(Default)]
pub(super) struct Loaded {
    installed: RwLock<Installed>,
    /// The active provider's kind built with another environment, by environment name (runs
    /// that ask for one); dropped with the active provider they were built beside.
    variants: Mutex<HashMap<String, Arc<dyn SandboxProvider>>>,
    /// Replaced providers shutting down in the background: the console's own shutdown waits
    /// for them, so no container of theirs outlives it.
    retiring: tokio_util::task::TaskTracker,
}

/// How long the console's shutdown waits for replaced providers to finish shutting down.
const RETIRE_DEADLINE: Duration = Duration::from_secs(30);

/// How long a health probe of the active provider may take before it counts as failed.
pub const HEALTH_DEADLINE: Duration = Duration::from_secs(5);
/// A health result younger than this is shown as it is; an older one is shown while a new
/// probe runs in the background.
const HEALTH_FRESH: Duration = Duration::from_secs(5);

/// The last health probe of the active provider, for pages that must not wait on a probe.
/// It names its provider weakly: the result of a replaced provider is never shown for its
/// successor (a `Weak` keeps the address from being reused), nor keeps it alive.
#[derive(Default)]
pub(super) struct HealthCache {
    #[allow(clippy::type_complexity)]
    last: Mutex<Option<(std::sync::Weak<dyn SandboxProvider>, Instant, HealthReport)>>,
    probing: AtomicBool,
}

impl HealthCache {
    fn store(&self, provider: &Arc<dyn SandboxProvider>, report: HealthReport) {
        *self.last.lock().expect("health cache lock") =
            Some((Arc::downgrade(provider), Instant::now(), report));
        self.probing.store(false, Ordering::SeqCst);
    }
}

/// A health check cut off after [`HEALTH_DEADLINE`]: a frozen backend is an unhealthy one.
pub(super) async fn probe(provider: &Arc<dyn SandboxProvider>) -> HealthReport {
    match tokio::time::timeout(HEALTH_DEADLINE, provider.health()).await {
        Ok(report) => report,
        Err(_) => HealthReport {
            healthy: false,
            message: format!(
                "The provider did not answer its health check within {} s: its backend may be frozen or overloaded.",
                HEALTH_DEADLINE.as_secs()
            ),
            details: Map::new(),
        },
    }
}

impl SandboxService {
    /// A health check of `provider` (built, not installed), within [`HEALTH_DEADLINE`].
    pub(super) async fn health_of(&self, provider: &Arc<dyn SandboxProvider>) -> HealthReport {
        probe(provider).await
    }

    /// The stored versions the active provider depends on.
    pub(super) async fn fingerprint(&self) -> Result<Fingerprint, SettingError> {
        let Some(setting) = system_setting::get(&self.pool, super::PROVIDER_TYPE).await? else {
            return Ok(None);
        };
        let kind = setting.value.as_str().unwrap_or_default();
        let settings = system_setting::get(&self.pool, &setting_name(kind))
            .await?
            .map_or(0, |s| s.version);
        let environments = match &self.environments {
            Some(_) => crate::server::db::environment::generation(&self.pool).await?,
            None => 0,
        };
        Ok(Some((setting.version, settings, environments)))
    }

    /// Rebuilds the active provider when its stored settings changed behind our back (saved
    /// by the CLI or by another console on the same database). Two small reads per call.
    pub(super) async fn refresh(&self) -> Result<(), SettingError> {
        let now = self.fingerprint().await?;
        if self.seen() != now {
            let _swap = self.swap.lock().await;
            // Another caller may have rebuilt it while this one waited.
            let now = self.fingerprint().await?;
            if self.seen() != now {
                self.load_active().await?;
            }
        }
        Ok(())
    }

    /// The stored versions the installed provider was built from.
    fn seen(&self) -> Fingerprint {
        self.loaded.installed.read().expect("installed lock").seen
    }

    /// Builds the active provider from what is stored. Callers hold `swap` (or are `start`).
    pub(super) async fn load_active(&self) -> Result<(), SettingError> {
        // Read before the settings, noted after them: a read that fails leaves the old
        // fingerprint, so the next run tries again instead of keeping a stale provider.
        let built_from = self.fingerprint().await?;
        if let Some(catalog) = &self.environments {
            // Another process may have built or changed an environment.
            catalog.reload(&self.pool).await?;
        }
        let Some(kind) = self.stored_active_kind().await? else {
            self.replace_active(None, built_from);
            return Ok(());
        };
        let stored = self.stored_values(&self.pool, &kind).await?;
        let next = match self.open_secrets(&kind, stored) {
            Err(error) => {
                tracing::error!(%kind, %error, "the active sandbox provider's stored secrets cannot be opened");
                None
            }
            Ok(config) => match self.registry.build(&kind, &config) {
                Ok(provider) => Some(Active { kind, provider }),
                Err(error) => {
                    tracing::error!(%kind, %error, "the active sandbox provider cannot be built from its stored settings");
                    None
                }
            },
        };
        self.replace_active(next, built_from);
        Ok(())
    }

    /// Makes `provider`, just built from version `version` of the settings saved for `kind`,
    /// the one that runs code. Callers hold `swap`.
    pub(super) async fn install(
        &self,
        kind: &str,
        version: i64,
        provider: Arc<dyn SandboxProvider>,
    ) -> Result<(), SettingError> {
        let read = async { Ok((self.fingerprint().await?, self.stored_active_kind().await?)) };
        let built_from = match read.await {
            // Another process saved again after this save's write (or made another provider
            // active): what is stored is not what this provider was built from, so the next
            // run rebuilds it from the store.
            Ok((Some((_, settings, _)), stored))
                if settings != version || stored.as_deref() != Some(kind) =>
            {
                None
            }
            Ok((fingerprint, _)) => fingerprint,
            Err(error) => {
                provider.shutdown().await;
                return Err(error);
            }
        };
        self.replace_active(
            Some(Active {
                kind: kind.to_owned(),
                provider,
            }),
            built_from,
        );
        Ok(())
    }

    /// Makes `next`, built from the stored versions `seen`, the provider that runs code (the
    /// two installed at once): it warms up, and the one it replaces is shut down in the
    /// background once nobody holds it (its runs in flight finish first).
    fn replace_active(&self, next: Option<Active>, seen: Fingerprint) {
        if let Some(active) = next.as_ref().filter(|_| self.warm) {
            active.provider.warm_up();
        }
        let previous = {
            let mut installed = self.loaded.installed.write().expect("installed lock");
            installed.seen = seen;
            std::mem::replace(&mut installed.active, next)
        };
        let variants = std::mem::take(&mut *self.loaded.variants.lock().expect("variants lock"));
        let retiring = &self.loaded.retiring;
        if let Some(previous) = previous {
            retiring.spawn(async move { previous.provider.shutdown().await });
        }
        for (_, variant) in variants {
            retiring.spawn(async move { variant.shutdown().await });
        }
    }

    /// The active provider (of `kind`), or the same kind built with environment `name` when
    /// that is not the one its settings give.
    pub(super) async fn in_environment(
        &self,
        kind: &str,
        active: Arc<dyn SandboxProvider>,
        name: &str,
    ) -> Result<Arc<dyn SandboxProvider>, SandboxError> {
        let unsupported = || {
            SandboxError::Request(RequestProblem::EnvironmentsUnsupported {
                provider: kind.to_owned(),
            })
        };
        let catalog = self.environments.as_ref().ok_or_else(unsupported)?;
        let mounts = self
            .registry
            .get(kind)
            .is_ok_and(|k| (k.schema)().fields.iter().any(|f| f.key == "environment"));
        if !mounts {
            return Err(unsupported());
        }
        let wanted = match catalog.resolve(name) {
            Err(_) => {
                return Err(SandboxError::Request(RequestProblem::UnknownEnvironment {
                    name: name.to_owned(),
                }))
            }
            Ok(Resolved::Pending { name }) => {
                return Err(SandboxError::Request(RequestProblem::EnvironmentNotReady {
                    name,
                }))
            }
            Ok(resolved) => resolved,
        };
        let stored = self
            .stored_values(&self.pool, kind)
            .await
            .map_err(|e| SandboxError::Backend(e.to_string()))?;
        let own = stored
            .get("environment")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if catalog.resolve(own).ok().as_ref() == Some(&wanted) {
            return Ok(active);
        }
        if let Some(variant) = self
            .loaded
            .variants
            .lock()
            .expect("variants lock")
            .get(name)
        {
            return Ok(variant.clone());
        }
        let mut config = self
            .open_secrets(kind, stored)
            .map_err(|e| SandboxError::Backend(e.to_string()))?;
        config.insert("environment".into(), json!(name));
        let variant = self.registry.build(kind, &config)?;
        let mut variants = self.loaded.variants.lock().expect("variants lock");
        // Another run may have built it meanwhile: keep one.
        let kept = variants.entry(name.to_owned()).or_insert(variant).clone();
        Ok(kept)
    }

    /// Shuts the active provider down (the console is stopping): runs still in flight are
    /// cancelled, warm containers and remote sessions are released, and history rows still
    /// waiting to be written get a last try. Later runs find no active provider.
    pub async fn shutdown(&self) {
        self.finish_runs(Duration::ZERO).await;
        // What is not written by then stays in the spool for the next start.
        self.history.flush(Duration::from_secs(10)).await;
        let previous = self
            .loaded
            .installed
            .write()
            .expect("installed lock")
            .active
            .take();
        if let Some(previous) = previous {
            previous.provider.shutdown().await;
        }
        let variants = std::mem::take(&mut *self.loaded.variants.lock().expect("variants lock"));
        for (_, variant) in variants {
            variant.shutdown().await;
        }
        let retiring = &self.loaded.retiring;
        retiring.close();
        if tokio::time::timeout(RETIRE_DEADLINE, retiring.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                left = retiring.len(),
                "replaced sandbox providers did not finish shutting down in time; the next start sweeps what they left"
            );
        }
    }

    /// The provider that runs code now, if any.
    pub fn active(&self) -> Option<(String, Arc<dyn SandboxProvider>)> {
        let installed = self.loaded.installed.read().expect("installed lock");
        installed
            .active
            .as_ref()
            .map(|a| (a.kind.clone(), a.provider.clone()))
    }

    /// The running provider, its health and its pool: what the settings page, the dashboard
    /// and `GET /api/v1/providers` show.
    #[tracing::instrument(skip_all)]
    pub async fn active_status(&self) -> ActiveStatus {
        let active = self.active();
        ActiveStatus {
            health: self.active_health().await,
            pool: active.as_ref().and_then(|(_, p)| p.pool_state()),
            running: active.map(|(kind, provider)| RunningProvider {
                kind,
                name: provider.info().name.clone(),
                languages: provider.languages().to_vec(),
            }),
        }
    }

    /// The active provider's health for a page or a status answer: the last probe's result
    /// while it is fresh; an older one at once while a new probe runs in the background;
    /// and only when there is none, a probe, cut off after [`HEALTH_DEADLINE`]. A frozen
    /// backend never holds a page.
    pub async fn active_health(&self) -> HealthReport {
        let Some((_, provider)) = self.active() else {
            return HealthReport {
                healthy: false,
                message: "No provider is running: save valid settings for one and make it active."
                    .into(),
                details: Map::new(),
            };
        };
        let cached = self
            .health
            .last
            .lock()
            .expect("health cache lock")
            .as_ref()
            .filter(|(of, _, _)| std::ptr::addr_eq(of.as_ptr(), Arc::as_ptr(&provider)))
            .map(|(_, at, report)| (at.elapsed(), report.clone()));
        match cached {
            Some((age, report)) if age < HEALTH_FRESH => report,
            Some((_, report)) => {
                if !self.health.probing.swap(true, Ordering::SeqCst) {
                    let cache = self.health.clone();
                    tokio::spawn(async move {
                        let report = probe(&provider).await;
                        cache.store(&provider, report);
                    });
                }
                report
            }
            None => {
                let report = probe(&provider).await;
                self.health.store(&provider, report.clone());
                report
            }
        }
    }
}
