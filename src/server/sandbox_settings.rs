//! The sandbox settings service: stored provider configs (`sandbox.provider_type`,
//! `sandbox.<kind>` in `system_setting`), the active provider (rebuilt on every save: no
//! restart, ever), test connection and trial runs. Server functions and the REST API call it.

use std::{
    collections::BTreeSet,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, RwLock,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Map, Value};
use sqlx::SqlitePool;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::HealthReport,
        schema::{FieldErrors, FieldKind, FORM_ERROR},
        settings::{ConnectionReport, ProviderCard, SandboxSettings, SaveOutcome},
    },
    sandbox::{registry::Registry, Error as SandboxError, SandboxProvider},
    server::{
        db::{
            execution::{Caller, Content, NewExecution},
            settings_audit,
            system_setting::{self, SettingError},
        },
        history_writer::HistoryWriter,
        secrets::SecretBox,
    },
};

pub const PROVIDER_TYPE: &str = "sandbox.provider_type";
/// The provider a fresh installation starts with.
pub const DEFAULT_KIND: &str = "local";

fn setting_name(kind: &str) -> String {
    format!("sandbox.{kind}")
}

/// The script "Test connection" runs: it must print and return through the main() protocol.
const TEST_SCRIPT: &str =
    "def main(probe):\n    print('sandbox-console test connection')\n    return {'probe': probe}\n";

struct Active {
    kind: String,
    provider: Arc<dyn SandboxProvider>,
}

/// Versions of `sandbox.provider_type` and of the active provider's settings row.
type Fingerprint = Option<(i64, i64)>;

/// What the running provider should be: nothing changed since it was built, or rebuild it.
struct Loaded {
    active: RwLock<Option<Active>>,
    /// The stored settings last loaded (also when nothing could be built from them), to
    /// notice changes made by another process.
    seen: RwLock<Fingerprint>,
}

/// How long a health probe of the active provider may take before it counts as failed.
pub const HEALTH_DEADLINE: Duration = Duration::from_secs(5);
/// A health result younger than this is shown as it is; an older one is shown while a new
/// probe runs in the background.
const HEALTH_FRESH: Duration = Duration::from_secs(5);

/// The last health probe of the active provider, for pages that must not wait on a probe.
/// It names its provider weakly: the result of a replaced provider is never shown for its
/// successor (a `Weak` keeps the address from being reused), nor keeps it alive.
#[derive(Default)]
struct HealthCache {
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
async fn probe(provider: &Arc<dyn SandboxProvider>) -> HealthReport {
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

/// Runs in flight: each in a task of its own that outlives the request that asked for it,
/// tracked so a shutdown can wait for them, and cancelled (their sandboxes killed by the
/// providers' drop guards) when the shutdown grace is over.
#[derive(Default)]
struct Runs {
    tracker: TaskTracker,
    cancel: CancellationToken,
}

pub struct SandboxService {
    pool: SqlitePool,
    /// Counted when the server runs this service (the CLI has none).
    metrics: Option<Arc<crate::server::metrics::Metrics>>,
    registry: Registry,
    secrets: SecretBox,
    loaded: Loaded,
    /// Saves and rebuilds one at a time: the running provider is always the one built from
    /// the latest stored version, and each audit row follows its own write.
    swap: tokio::sync::Mutex<()>,
    health: Arc<HealthCache>,
    runs: Runs,
    history: HistoryWriter,
    /// Whether active providers warm up (the server) or only do what each run needs (the CLI).
    warm: bool,
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
        pool: SqlitePool,
        registry: Registry,
        secrets: SecretBox,
    ) -> Result<Self, SettingError> {
        let service = SandboxService {
            history: HistoryWriter::new(pool.clone()),
            pool,
            metrics: None,
            registry,
            secrets,
            loaded: Loaded {
                active: RwLock::new(None),
                seen: RwLock::new(None),
            },
            swap: tokio::sync::Mutex::new(()),
            health: Arc::new(HealthCache::default()),
            runs: Runs::default(),
            warm: false,
        };
        if system_setting::get(&service.pool, PROVIDER_TYPE)
            .await?
            .is_none()
        {
            if let Ok(kind) = service.registry.get(DEFAULT_KIND) {
                let defaults = (kind.schema)().normalize(&Map::new()).unwrap_or_default();
                seed(
                    &service.pool,
                    &setting_name(DEFAULT_KIND),
                    &Value::Object(defaults),
                )
                .await?;
                seed(&service.pool, PROVIDER_TYPE, &json!(DEFAULT_KIND)).await?;
            }
        }
        service.load_active().await?;
        Ok(service)
    }

    /// Counts every run in `metrics` from now on.
    pub fn with_metrics(mut self, metrics: Arc<crate::server::metrics::Metrics>) -> Self {
        self.history = self.history.with_metrics(metrics.clone());
        self.metrics = Some(metrics);
        self
    }

    /// Warms the active provider now and every provider that becomes active later (pools of
    /// warm sandboxes): what a long-running server wants, not a one-shot CLI command.
    pub fn with_warm_up(mut self) -> Self {
        self.warm = true;
        if let Some(active) = &*self.loaded.active.read().expect("active provider lock") {
            active.provider.warm_up();
        }
        self
    }

    /// The kind `sandbox.provider_type` names, if set.
    pub async fn stored_active_kind(&self) -> Result<Option<String>, SettingError> {
        Ok(system_setting::get(&self.pool, PROVIDER_TYPE)
            .await?
            .and_then(|s| s.value.as_str().map(str::to_owned)))
    }

    /// The stored versions the active provider depends on.
    async fn fingerprint(&self) -> Result<Fingerprint, SettingError> {
        let Some(setting) = system_setting::get(&self.pool, PROVIDER_TYPE).await? else {
            return Ok(None);
        };
        let kind = setting.value.as_str().unwrap_or_default();
        let settings = system_setting::get(&self.pool, &setting_name(kind))
            .await?
            .map_or(0, |s| s.version);
        Ok(Some((setting.version, settings)))
    }

    /// Rebuilds the active provider when its stored settings changed behind our back (saved
    /// by the CLI or by another console on the same database). Two small reads per call.
    async fn refresh(&self) -> Result<(), SettingError> {
        let now = self.fingerprint().await?;
        if *self.loaded.seen.read().expect("fingerprint lock") != now {
            let _swap = self.swap.lock().await;
            // Another caller may have rebuilt it while this one waited.
            let now = self.fingerprint().await?;
            if *self.loaded.seen.read().expect("fingerprint lock") != now {
                self.load_active().await?;
            }
        }
        Ok(())
    }

    /// Builds the active provider from what is stored. Callers hold `swap` (or are `start`).
    async fn load_active(&self) -> Result<(), SettingError> {
        let built_from = self.fingerprint().await?;
        *self.loaded.seen.write().expect("fingerprint lock") = built_from;
        let Some(kind) = self.stored_active_kind().await? else {
            *self.loaded.active.write().expect("active provider lock") = None;
            return Ok(());
        };
        let stored = self.stored_values(&kind).await?;
        let built = match self.open_secrets(&kind, stored) {
            Ok(config) => self.registry.build(&kind, &config),
            Err(message) => Err(SandboxError::Backend(message)),
        };
        let next = match built {
            Ok(provider) => Some(Active { kind, provider }),
            Err(error) => {
                tracing::error!(%kind, %error, "the active sandbox provider cannot be built from its stored settings");
                None
            }
        };
        self.replace_active(next);
        Ok(())
    }

    /// Makes `next` the provider that runs code: it warms up, and the one it replaces is shut
    /// down in the background once nobody holds it (its runs in flight finish first).
    fn replace_active(&self, next: Option<Active>) {
        if let Some(active) = next.as_ref().filter(|_| self.warm) {
            active.provider.warm_up();
        }
        let previous = std::mem::replace(
            &mut *self.loaded.active.write().expect("active provider lock"),
            next,
        );
        if let Some(previous) = previous {
            tokio::spawn(async move { previous.provider.shutdown().await });
        }
    }

    /// Stops taking runs and gives those in flight up to `grace` to finish; then cancels the
    /// rest (their sandboxes are killed and removed, their history rows say so). Returns how
    /// many were cancelled. Call [`Self::shutdown`] after it.
    pub async fn finish_runs(&self, grace: Duration) -> usize {
        self.runs.tracker.close();
        if tokio::time::timeout(grace, self.runs.tracker.wait())
            .await
            .is_ok()
        {
            return 0;
        }
        let left = self.runs.tracker.len();
        tracing::warn!(
            left,
            ?grace,
            "runs still in flight after the shutdown grace; cancelling them"
        );
        self.runs.cancel.cancel();
        if tokio::time::timeout(Duration::from_secs(10), self.runs.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("cancelled runs did not end within 10 s");
        }
        left
    }

    /// Shuts the active provider down (the console is stopping): warm containers and remote
    /// sessions are released, and history rows still waiting to be written get a last try.
    /// Later runs find no active provider.
    pub async fn shutdown(&self) {
        self.finish_runs(Duration::ZERO).await;
        self.history.flush(Duration::from_secs(5)).await;
        let previous = self
            .loaded
            .active
            .write()
            .expect("active provider lock")
            .take();
        if let Some(previous) = previous {
            previous.provider.shutdown().await;
        }
    }

    async fn stored_values(&self, kind: &str) -> Result<Map<String, Value>, SettingError> {
        Ok(system_setting::get(&self.pool, &setting_name(kind))
            .await?
            .and_then(|s| s.value.as_object().cloned())
            .unwrap_or_default())
    }

    /// Every registered provider, in registry order.
    pub fn provider_infos(&self) -> Vec<crate::model::provider::ProviderInfo> {
        self.registry.kinds().map(|k| (k.info)()).collect()
    }

    /// A registered provider's schema.
    pub fn schema_of(&self, kind: &str) -> Option<crate::model::schema::ConfigSchema> {
        self.registry.get(kind).ok().map(|k| (k.schema)())
    }

    /// A provider's saved values (its defaults when never saved), secret fields left out.
    pub async fn public_config(&self, kind: &str) -> Result<Map<String, Value>, SettingError> {
        let Some(schema) = self.schema_of(kind) else {
            return Ok(Map::new());
        };
        let values = match system_setting::get(&self.pool, &setting_name(kind)).await? {
            Some(setting) => setting.value.as_object().cloned().unwrap_or_default(),
            None => schema.normalize(&Map::new()).unwrap_or_default(),
        };
        Ok(self.without_secrets(kind, values))
    }

    /// The active provider's health for a page or a status answer: the last probe's result
    /// while it is fresh; an older one at once while a new probe runs in the background;
    /// and only when there is none, a probe, cut off after [`HEALTH_DEADLINE`]. A frozen
    /// backend never holds a page.
    pub async fn active_health(&self) -> HealthReport {
        let Some((_, provider)) = self.active() else {
            return HealthReport {
                healthy: false,
                message: "No provider is running: the active provider's stored settings do not build. Save valid settings.".into(),
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

    /// The provider that runs code now, if any.
    pub fn active(&self) -> Option<(String, Arc<dyn SandboxProvider>)> {
        let active = self.loaded.active.read().expect("active provider lock");
        active
            .as_ref()
            .map(|a| (a.kind.clone(), a.provider.clone()))
    }

    /// Every registered provider with its schema and saved values; secrets left out.
    pub async fn settings(&self) -> Result<SandboxSettings, SettingError> {
        self.refresh().await?;
        let active_kind = self.stored_active_kind().await?.unwrap_or_default();
        let mut providers = Vec::new();
        for kind in self.registry.kinds() {
            let info = (kind.info)();
            let schema = (kind.schema)();
            let stored = system_setting::get(&self.pool, &setting_name(&info.kind)).await?;
            let mut values = match &stored {
                Some(setting) => setting.value.as_object().cloned().unwrap_or_default(),
                None => schema
                    .fields
                    .iter()
                    .filter_map(|f| f.default.clone().map(|d| (f.key.clone(), d)))
                    .collect(),
            };
            let mut secrets_set = Vec::new();
            for field in schema.fields.iter().filter(|f| f.kind == FieldKind::Secret) {
                if values
                    .remove(&field.key)
                    .is_some_and(|v| !v.as_str().unwrap_or_default().is_empty())
                {
                    secrets_set.push(field.key.clone());
                }
            }
            providers.push(ProviderCard {
                active: info.kind == active_kind,
                info,
                schema,
                values,
                secrets_set,
                version: stored.as_ref().map(|s| s.version),
                updated_at: stored.as_ref().map(|s| s.updated_at.clone()),
                updated_by: stored.and_then(|s| s.updated_by),
            });
        }
        let active_health = self.active_health().await;
        let active_languages = self
            .active()
            .map(|(_, p)| p.languages().to_vec())
            .unwrap_or_default();
        let active_pool = self.active().and_then(|(_, p)| p.pool_state());
        Ok(SandboxSettings {
            active_kind,
            active_health,
            active_languages,
            active_pool,
            providers,
        })
    }

    fn secret_keys(&self, kind: &str) -> Vec<String> {
        self.registry.get(kind).map_or_else(
            |_| Vec::new(),
            |k| {
                (k.schema)()
                    .fields
                    .into_iter()
                    .filter(|f| f.kind == FieldKind::Secret)
                    .map(|f| f.key)
                    .collect()
            },
        )
    }

    /// Stored secret fields decrypted, for building a provider.
    fn open_secrets(
        &self,
        kind: &str,
        mut values: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        for key in self.secret_keys(kind) {
            if let Some(Value::String(sealed)) = values.get(&key) {
                if SecretBox::is_sealed(sealed) {
                    let plain = self
                        .secrets
                        .open(sealed)
                        .map_err(|e| format!("{key}: {e}"))?;
                    values.insert(key, Value::String(plain));
                }
            }
        }
        Ok(values)
    }

    /// Secret fields encrypted, for storing.
    fn seal_secrets(&self, kind: &str, mut values: Map<String, Value>) -> Map<String, Value> {
        for key in self.secret_keys(kind) {
            if let Some(Value::String(plain)) = values.get(&key) {
                if !plain.is_empty() && !SecretBox::is_sealed(plain) {
                    let sealed = self.secrets.seal(plain);
                    values.insert(key, Value::String(sealed));
                }
            }
        }
        values
    }

    /// `values` without the provider's secret fields: what may travel back to a browser.
    pub fn without_secrets(
        &self,
        kind: &str,
        mut values: Map<String, Value>,
    ) -> Map<String, Value> {
        match self.registry.get(kind) {
            Ok(provider_kind) => {
                for field in (provider_kind.schema)()
                    .fields
                    .iter()
                    .filter(|f| f.kind == FieldKind::Secret)
                {
                    values.remove(&field.key);
                }
                values
            }
            Err(_) => Map::new(),
        }
    }

    /// Submitted values under the schema's keys (aliases renamed), with blank secret fields
    /// filled from the stored secrets — but only while every field that decides where the
    /// secrets go keeps its stored value. Otherwise each blank secret that has a stored value
    /// is an error on its own field: it must be typed again, so a stored secret is never sent
    /// to a destination it was not saved for. Unknown keys are refused, by name.
    async fn with_stored_secrets(
        &self,
        kind: &str,
        values: Map<String, Value>,
    ) -> Result<Result<Map<String, Value>, FieldErrors>, SettingError> {
        let Ok(provider_kind) = self.registry.get(kind) else {
            return Ok(Ok(values));
        };
        let schema = (provider_kind.schema)();
        let mut values = match schema.canonical(values) {
            Ok(values) => values,
            Err(errors) => return Ok(Err(errors)),
        };
        let stored = self.stored_values(kind).await?;
        let moved: Vec<&str> = schema
            .destinations()
            .filter(|field| {
                field.normalized(values.get(&field.key)) != field.normalized(stored.get(&field.key))
            })
            .map(|field| field.label.as_str())
            .collect();
        let mut errors = FieldErrors::new();
        for field in schema.fields.iter().filter(|f| f.kind == FieldKind::Secret) {
            let blank = values
                .get(&field.key)
                .is_none_or(|v| v.as_str().is_some_and(|s| s.is_empty()));
            let kept = stored
                .get(&field.key)
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()));
            if let (true, Some(secret)) = (blank, kept) {
                if moved.is_empty() {
                    values.insert(field.key.clone(), secret.clone());
                } else {
                    errors.insert(
                        field.key.clone(),
                        format!(
                            "{} changed, and the saved {} is only sent where it was saved for: type it again.",
                            moved.join(" and "),
                            field.label
                        ),
                    );
                }
            }
        }
        Ok(if errors.is_empty() {
            Ok(values)
        } else {
            Err(errors)
        })
    }

    /// Where a provider built from `values` sends its requests, for the audit: its
    /// destination fields as `key=value` (never a secret: secret fields are never
    /// destinations), or `this host` for providers that run code here.
    fn destination_of(&self, kind: &str, values: &Map<String, Value>) -> String {
        let Ok(provider_kind) = self.registry.get(kind) else {
            return String::new();
        };
        let parts: Vec<String> = (provider_kind.schema)()
            .destinations()
            .filter(|f| f.kind != FieldKind::Secret)
            .filter_map(|f| {
                let value = f.normalized(values.get(&f.key))?;
                let text = match value {
                    Value::String(text) if text.is_empty() => return None,
                    Value::String(text) => without_userinfo(text),
                    other => other.to_string(),
                };
                Some(format!("{}={}", f.key, text))
            })
            .collect();
        if parts.is_empty() {
            "this host".into()
        } else {
            parts.join(", ")
        }
    }

    /// Validates and saves a provider's settings; with `make_active`, also makes it the active
    /// provider. Nothing is saved on any error. Saving the active provider rebuilds it.
    /// `expected_version` (optimistic locking) is the version the form was opened at, `Some(None)`
    /// for a provider never saved; `None` overwrites whatever is stored (API and CLI).
    pub async fn save(
        &self,
        actor: &str,
        kind: &str,
        values: Map<String, Value>,
        expected_version: Option<Option<i64>>,
        make_active: bool,
    ) -> Result<SaveOutcome, SettingError> {
        let provider_kind = match self.registry.get(kind) {
            Ok(k) => k,
            Err(error) => return Ok(invalid(FORM_ERROR, error.to_string())),
        };
        let values = match self.with_stored_secrets(kind, values).await? {
            Ok(values) => values,
            Err(errors) => return Ok(SaveOutcome::Invalid { errors }),
        };
        let values = match self.open_secrets(kind, values) {
            Ok(values) => values,
            Err(message) => return Ok(invalid(FORM_ERROR, message)),
        };
        let provider = match (provider_kind.build)(&values) {
            Ok(provider) => provider,
            Err(SandboxError::ConfigInvalid { errors }) => {
                return Ok(SaveOutcome::Invalid { errors })
            }
            Err(error) => return Ok(invalid(FORM_ERROR, error.to_string())),
        };
        let normalized = match (provider_kind.schema)().normalize(&values) {
            Ok(normalized) => normalized,
            Err(errors) => return Ok(SaveOutcome::Invalid { errors }),
        };
        let name = setting_name(kind);
        // From here to the rebuild, one save at a time: concurrent saves otherwise leave the
        // running provider built from an older version than the stored one.
        let _swap = self.swap.lock().await;
        let stored = self.stored_values(kind).await?;
        let before = self.open_secrets(kind, stored.clone()).unwrap_or(stored);
        let sealed = Value::Object(self.seal_secrets(kind, normalized.clone()));
        let saved = match system_setting::put(&self.pool, &name, &sealed, actor, expected_version).await {
            Ok(saved) => saved,
            Err(SettingError::Conflict { current, .. }) => {
                return Ok(SaveOutcome::Conflict {
                    message: format!(
                        "These settings were changed by someone else since you opened them (now version {current}). \
                         Reload the page to see their changes; nothing was saved."
                    ),
                })
            }
            Err(other) => return Err(other),
        };
        let changed: Vec<String> = before
            .keys()
            .chain(normalized.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|key| before.get(*key) != normalized.get(*key))
            .cloned()
            .collect();
        settings_audit::record(&self.pool, actor, &name, Some(kind), "save", &changed).await?;

        let current_type = self.stored_active_kind().await?;
        let becomes_active = make_active && current_type.as_deref() != Some(kind);
        if becomes_active {
            system_setting::put(&self.pool, PROVIDER_TYPE, &json!(kind), actor, None).await?;
            settings_audit::record(
                &self.pool,
                actor,
                PROVIDER_TYPE,
                Some(kind),
                "activate",
                &[],
            )
            .await?;
        }
        // The running provider always comes from the stored type, so the stored type decides.
        let active = becomes_active || current_type.as_deref() == Some(kind);
        if active {
            let built_from = self.fingerprint().await?;
            *self.loaded.seen.write().expect("fingerprint lock") = built_from;
            self.replace_active(Some(Active {
                kind: kind.to_owned(),
                provider,
            }));
        } else {
            // Built only to validate: release whatever it opened.
            provider.shutdown().await;
        }
        Ok(SaveOutcome::Saved {
            version: saved.version,
            active,
        })
    }

    /// Builds a provider from unsaved values (stored secrets filled in), checks its health and
    /// runs a fixed script through it. Never saves anything.
    pub async fn test_connection(
        &self,
        kind: &str,
        values: Map<String, Value>,
        caller: &Caller,
    ) -> Result<ConnectionReport, SettingError> {
        let destination = self.destination_of(kind, &values);
        let report = self.test_connection_to(kind, values, caller).await?;
        let outcome = if report.passed {
            "passed"
        } else if !report.errors.is_empty() {
            "invalid settings"
        } else {
            "failed"
        };
        let detail = Map::from_iter([
            ("destination".to_owned(), json!(destination)),
            ("outcome".to_owned(), json!(outcome)),
        ]);
        settings_audit::record_event(
            &self.pool,
            &caller.actor(),
            &setting_name(kind),
            Some(kind),
            "test_connection",
            &detail,
        )
        .await?;
        Ok(report)
    }

    /// The test itself (`test_connection` records it in the audit).
    async fn test_connection_to(
        &self,
        kind: &str,
        values: Map<String, Value>,
        caller: &Caller,
    ) -> Result<ConnectionReport, SettingError> {
        let started = Instant::now();
        let mut report = ConnectionReport {
            passed: false,
            message: String::new(),
            health: None,
            exit_code: None,
            execution_time_ms: None,
            latency_ms: 0,
            stdout: String::new(),
            stderr: String::new(),
            errors: FieldErrors::new(),
        };
        let values = match self.with_stored_secrets(kind, values).await? {
            Ok(values) => values,
            Err(errors) => {
                report.message = "The settings are not valid; fix the marked fields.".into();
                report.errors = errors;
                return Ok(finish(report, started));
            }
        };
        let built = match self.open_secrets(kind, values) {
            Ok(values) => self.registry.build(kind, &values),
            Err(message) => Err(SandboxError::Backend(message)),
        };
        let provider = match built {
            Ok(provider) => provider,
            Err(SandboxError::ConfigInvalid { errors }) => {
                report.message = "The settings are not valid; fix the marked fields.".into();
                report.errors = errors;
                return Ok(finish(report, started));
            }
            Err(error) => {
                report.message = error.to_string();
                return Ok(finish(report, started));
            }
        };
        let health = probe(&provider).await;
        let healthy = health.healthy;
        report.message = health.message.clone();
        report.health = Some(health);
        if !healthy {
            provider.shutdown().await;
            return Ok(finish(report, started));
        }
        let language = if provider.languages().contains(&Language::Python) {
            Language::Python
        } else {
            provider.languages()[0]
        };
        let code = match language {
            Language::Python => TEST_SCRIPT,
            Language::Javascript => "function main({ probe }) { console.log('sandbox-console test connection'); return { probe }; }",
        };
        let request = ExecRequest {
            language,
            code: code.into(),
            arguments: Map::from_iter([("probe".to_owned(), json!("ok"))]),
            timeout_secs: None,
        };
        let deadline = provider.run_deadline(&request);
        let outcome = tokio::time::timeout(deadline, run_once(provider.as_ref(), &request))
            .await
            .unwrap_or(Err(SandboxError::Timeout(deadline)));
        // Built from unsaved values for this one test: release its sandboxes.
        provider.shutdown().await;
        self.record(caller, kind, &request, &outcome).await;
        match outcome {
            Ok(result) => {
                report.passed = result.status == ExecStatus::Success
                    && result.result.value == json!({ "probe": "ok" });
                report.message = if report.passed {
                    format!(
                        "Connected: the test script ran in {} ms.",
                        result.wall_time_ms
                    )
                } else {
                    format!(
                        "The provider answered, but the test script ended with status {:?}.",
                        result.status
                    )
                };
                report.exit_code = result.exit_code;
                report.execution_time_ms = Some(result.wall_time_ms);
                report.stdout = result.stdout;
                report.stderr = result.stderr;
            }
            Err(error) => report.message = format!("The test script could not run: {error}"),
        }
        Ok(finish(report, started))
    }

    /// Runs code through the active provider, and records the run for `caller`. The run
    /// happens in a task of its own: a caller that stops waiting (a client that hung up)
    /// changes nothing about its limits, its history row or its metrics.
    pub async fn execute(
        self: &Arc<Self>,
        request: &ExecRequest,
        caller: &Caller,
    ) -> Result<ExecutionResult, SandboxError> {
        if self.runs.tracker.is_closed() {
            return Err(SandboxError::ShuttingDown);
        }
        let (service, request, caller) = (self.clone(), request.clone(), caller.clone());
        let task = self
            .runs
            .tracker
            .spawn(async move { service.run_and_record(&request, &caller).await });
        task.await.unwrap_or_else(|crashed| {
            Err(SandboxError::Backend(format!("the run crashed: {crashed}")))
        })
    }

    async fn run_and_record(
        &self,
        request: &ExecRequest,
        caller: &Caller,
    ) -> Result<ExecutionResult, SandboxError> {
        if let Err(error) = self.refresh().await {
            tracing::warn!(%error, "could not check the stored sandbox settings; running with the loaded ones");
        }
        let started = Instant::now();
        let mut deadline = None;
        let (kind, mut outcome) = loop {
            let (kind, provider) = self.active().ok_or(SandboxError::NoActiveProvider)?;
            if !provider.languages().contains(&request.language) {
                return Err(SandboxError::Unsupported(request.language));
            }
            // One outer deadline for the whole run, handovers included.
            let deadline = *deadline.get_or_insert_with(|| provider.run_deadline(request));
            let left = deadline.saturating_sub(started.elapsed());
            let run = tokio::time::timeout(left, run_once(provider.as_ref(), request));
            // Cancelling or timing out drops the run's future: the providers' drop guards
            // then kill and remove its sandbox.
            let outcome = tokio::select! {
                biased;
                () = self.runs.cancel.cancelled() => Err(SandboxError::ShuttingDown),
                finished = run => finished.unwrap_or_else(|_| {
                    tracing::warn!(%kind, ?deadline, "a run outlived its outer deadline; abandoned");
                    Err(SandboxError::Timeout(deadline))
                }),
            };
            // Waited for a sandbox of a provider that a save replaced: nothing ran, so the
            // run goes to the new one (as often as saves come, within the deadline).
            if matches!(outcome, Err(SandboxError::Retired)) && started.elapsed() < deadline {
                tokio::task::yield_now().await;
                if let Err(error) = self.refresh().await {
                    tracing::warn!(%error, "could not check the stored sandbox settings");
                }
                continue;
            }
            break (kind, outcome);
        };
        if let Ok(result) = &mut outcome {
            result.metadata.insert("provider".into(), json!(kind));
        }
        self.record(caller, &kind, request, &outcome).await;
        outcome
    }

    /// Writes the history row of one run. A failed write is retried in the background (see
    /// `HistoryWriter`), never fatal: the caller still gets its result.
    async fn record(
        &self,
        caller: &Caller,
        kind: &str,
        request: &ExecRequest,
        outcome: &Result<ExecutionResult, SandboxError>,
    ) {
        let input_bytes =
            request.code.len() + serde_json::to_string(&request.arguments).map_or(0, |a| a.len());
        let (status, exit_code, duration_ms, output_bytes, error) = match outcome {
            Ok(result) => (
                result.status.id(),
                result.exit_code,
                result.wall_time_ms,
                result.stdout.len()
                    + result.stderr.len()
                    + result
                        .artifacts
                        .iter()
                        .map(|a| a.size as usize)
                        .sum::<usize>(),
                None,
            ),
            Err(error) => ("error", None, 0, 0, Some(error.to_string())),
        };
        let keep = match crate::server::history::settings(&self.pool).await {
            Ok(settings) if settings.keep_content => Some(settings.max_content_bytes as usize),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(%error, "could not read the history settings; keeping no content");
                None
            }
        };
        let (stdout, stderr) = match outcome {
            Ok(result) => (result.stdout.as_str(), result.stderr.as_str()),
            Err(_) => ("", error.as_deref().unwrap_or_default()),
        };
        let content = keep.map(|max| Content {
            code: crate::server::history::cut(&request.code, max),
            stdout: crate::server::history::cut(stdout, max),
            stderr: crate::server::history::cut(stderr, max),
        });
        let row = NewExecution {
            caller,
            provider: kind,
            language: request.language.id(),
            status,
            exit_code,
            duration_ms,
            code: &request.code,
            input_bytes,
            output_bytes,
            error: error.as_deref(),
            content,
        };
        if let Some(metrics) = &self.metrics {
            let ran = outcome.as_ref().ok();
            metrics.execution(
                kind,
                status,
                caller.source,
                ran.map(|r| r.wall_time_ms),
                ran.and_then(|r| r.metadata.get("queue_wait_ms").and_then(Value::as_u64)),
            );
        }
        self.history.record(&row).await;
    }
}

fn invalid(key: &str, message: String) -> SaveOutcome {
    SaveOutcome::Invalid {
        errors: FieldErrors::from([(key.to_owned(), message)]),
    }
}

/// A URL with any `user:password@` replaced by `***@`: credentials typed into an endpoint
/// (which the providers refuse) must not reach the audit either.
fn without_userinfo(text: String) -> String {
    match url::Url::parse(&text) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            let _ = url.set_password(None);
            let _ = url.set_username("***");
            url.to_string()
        }
        _ => text,
    }
}

fn finish(mut report: ConnectionReport, started: Instant) -> ConnectionReport {
    report.latency_ms = started.elapsed().as_millis() as u64;
    report
}

async fn seed(pool: &SqlitePool, name: &str, value: &Value) -> Result<(), SettingError> {
    match system_setting::put(pool, name, value, "system", Some(None)).await {
        Ok(_) | Err(SettingError::Conflict { .. }) => Ok(()),
        Err(other) => Err(other),
    }
}

async fn run_once(
    provider: &dyn SandboxProvider,
    request: &ExecRequest,
) -> Result<ExecutionResult, SandboxError> {
    let (result, destroyed) = crate::sandbox::run_once(provider, request).await;
    if let Err(error) = destroyed {
        tracing::warn!(%error, "could not destroy a sandbox instance");
    }
    result
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::*;
    use crate::{
        model::{
            provider::{HealthReport, ProviderInfo},
            schema::{ConfigSchema, FieldSpec},
        },
        sandbox::{registry::ProviderKind, Instance},
        server::db,
    };

    const TOKEN: &str = "plain-s3cr3t-value";

    /// A provider with a secret: healthy only when built with the right token.
    #[derive(Debug)]
    struct Vault {
        info: ProviderInfo,
        token: String,
    }

    #[async_trait]
    impl SandboxProvider for Vault {
        fn info(&self) -> &ProviderInfo {
            &self.info
        }
        fn languages(&self) -> &[Language] {
            &[Language::Python]
        }
        async fn health(&self) -> HealthReport {
            HealthReport {
                healthy: self.token == TOKEN,
                message: String::new(),
                details: Map::new(),
            }
        }
        async fn create_instance(&self, language: Language) -> Result<Instance, SandboxError> {
            Ok(Instance {
                id: "vault".into(),
                language,
                metadata: Map::new(),
            })
        }
        async fn execute(
            &self,
            _: &Instance,
            _: &ExecRequest,
        ) -> Result<ExecutionResult, SandboxError> {
            Err(SandboxError::Backend("the vault runs nothing".into()))
        }
        async fn destroy_instance(&self, _: Instance) -> Result<(), SandboxError> {
            Ok(())
        }
    }

    fn info() -> ProviderInfo {
        ProviderInfo {
            kind: "vault".into(),
            name: "Vault".into(),
            description: String::new(),
            tags: vec![],
        }
    }

    fn schema() -> ConfigSchema {
        ConfigSchema {
            fields: vec![
                FieldSpec::new("endpoint", FieldKind::String, "Endpoint").required(),
                FieldSpec::new("token", FieldKind::Secret, "Token").required(),
            ],
        }
    }

    fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, SandboxError> {
        let values = schema()
            .normalize(raw)
            .map_err(|errors| SandboxError::ConfigInvalid { errors })?;
        let token = values["token"].as_str().unwrap_or_default().to_owned();
        Ok(Arc::new(Vault {
            info: info(),
            token,
        }))
    }

    fn form(endpoint: &str, token: &str) -> Map<String, Value> {
        Map::from_iter([
            ("endpoint".to_owned(), json!(endpoint)),
            ("token".to_owned(), json!(token)),
        ])
    }

    /// Every byte SQLite keeps for the database (main file and write-ahead log).
    fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .flat_map(|e| std::fs::read(e.path()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn credentials_in_an_endpoint_never_reach_the_audit() {
        assert_eq!(
            without_userinfo("https://user:hunter2@executor:9385/".into()),
            "https://***@executor:9385/"
        );
        assert_eq!(
            without_userinfo("http://executor:9385".into()),
            "http://executor:9385"
        );
        assert_eq!(without_userinfo("cn-hangzhou".into()), "cn-hangzhou");
    }

    #[tokio::test]
    async fn secrets_are_stored_encrypted_never_shown_and_kept_when_left_blank() {
        let dir = tempfile::tempdir().unwrap();
        let pool = db::connect(&format!(
            "sqlite://{}",
            dir.path().join("test.db").display()
        ))
        .await
        .unwrap();
        db::migrate(&pool).await.unwrap();
        let registry = Registry::new().register(ProviderKind {
            info,
            schema,
            build,
        });
        let service = SandboxService::start(pool.clone(), registry, SecretBox::from_key(&[9; 32]))
            .await
            .unwrap();

        let first = service
            .save("admin", "vault", form("https://a", TOKEN), Some(None), true)
            .await
            .unwrap();

        assert_eq!(
            first,
            SaveOutcome::Saved {
                version: 1,
                active: true
            }
        );
        assert!(
            service.active().unwrap().1.health().await.healthy,
            "built with the plaintext token"
        );
        let bytes = database_bytes(dir.path());
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "the token is not in the database files"
        );
        let settings = service.settings().await.unwrap();
        assert!(
            !serde_json::to_string(&settings).unwrap().contains(TOKEN),
            "the token never goes to the browser"
        );
        assert_eq!(settings.providers[0].secrets_set, ["token"]);

        let second = service
            .save(
                "admin",
                "vault",
                form("https://b", ""),
                Some(Some(1)),
                false,
            )
            .await
            .unwrap();

        assert_eq!(
            second,
            SaveOutcome::Saved {
                version: 2,
                active: true
            }
        );
        assert!(
            service.active().unwrap().1.health().await.healthy,
            "a blank secret keeps the stored one"
        );
        let audit = settings_audit::recent(&pool, 1).await.unwrap();
        assert_eq!(audit[0].changed_keys, r#"["endpoint"]"#);
        let report = service
            .test_connection(
                "vault",
                form("https://c", ""),
                &Caller::admin("admin", "test_connection"),
            )
            .await
            .unwrap();
        assert_eq!(
            report.health.map(|h| h.healthy),
            Some(true),
            "test connection merges the stored secret"
        );
    }
}
