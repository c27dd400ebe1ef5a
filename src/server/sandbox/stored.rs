//! Stored provider configs: their names, seeding, reading them for a page, and saving one
//! (the setting, its audit rows and the active type in one transaction).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};
use sqlx::{AnyExecutor, AnyPool};

use super::{secrets::NotMerged, SandboxService};
use crate::{
    model::{
        schema::{FieldErrors, FORM_ERROR},
        settings::{ProviderCard, SandboxSettings, SaveOutcome, SettingVersion, ValueChange},
    },
    sandbox::Error as SandboxError,
    server::db::{
        execution::Actor,
        setting_version::{self, NewVersion},
        settings_audit,
        system_setting::{self, Expected, SettingError},
    },
};

pub const PROVIDER_TYPE: &str = "sandbox.provider_type";
/// The provider a fresh installation starts with.
pub const DEFAULT_KIND: &str = "local";

pub(super) fn setting_name(kind: &str) -> String {
    format!("sandbox.{kind}")
}

/// Stores `value` under `name` unless something is stored already (a first start); a
/// provider's seeded settings are its first version.
pub(super) async fn seed(pool: &AnyPool, name: &str, value: &Value) -> Result<(), SettingError> {
    let mut tx = pool.begin().await?;
    let saved = match system_setting::put_in(&mut tx, name, value, "system", Expected::Absent).await
    {
        Ok(saved) => saved,
        Err(SettingError::Conflict { .. }) => return Ok(()),
        Err(other) => return Err(other),
    };
    if let Some(kind) = name
        .strip_prefix("sandbox.")
        .filter(|_| name != PROVIDER_TYPE)
    {
        setting_version::insert(
            &mut tx,
            NewVersion {
                setting: name,
                provider: kind,
                version: Some(saved.version),
                value,
                action: "save",
                restored_from: None,
                saved_by: "system",
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

fn conflict(current: i64) -> SaveOutcome {
    SaveOutcome::Conflict {
        message: format!(
            "These settings were changed by someone else since you opened them (now version {current}). \
             Reload the page to see their changes; nothing was saved."
        ),
    }
}

fn invalid(key: &str, message: String) -> SaveOutcome {
    SaveOutcome::Invalid {
        errors: FieldErrors::from([(key.to_owned(), message)]),
    }
}

impl SandboxService {
    /// The kind `sandbox.provider_type` names, if set.
    pub async fn stored_active_kind(&self) -> Result<Option<String>, SettingError> {
        active_kind_in(&self.pool).await
    }

    /// A provider's stored values, secrets still sealed (empty when never saved).
    /// One field of `kind`'s saved settings, when they are saved.
    pub async fn stored_field(&self, kind: &str, key: &str) -> Option<Value> {
        self.stored_values(&self.pool, kind)
            .await
            .ok()
            .and_then(|values| values.get(key).cloned())
    }

    /// The time limit of one run on `kind` (its `timeout_secs`, saved or default); 60 s for
    /// providers without one. Sessions apply it to each cell and command.
    pub async fn run_time_limit(&self, kind: &str) -> u32 {
        let saved = self.stored_field(kind, "timeout_secs").await;
        let default = self
            .schema_of(kind)
            .and_then(|schema| schema.field("timeout_secs").and_then(|f| f.default.clone()));
        saved
            .or(default)
            .and_then(|v| v.as_u64())
            .map_or(60, |secs| secs.clamp(1, 600) as u32)
    }

    pub(super) async fn stored_values(
        &self,
        db: impl AnyExecutor<'_>,
        kind: &str,
    ) -> Result<Map<String, Value>, SettingError> {
        Ok(system_setting::get(db, &setting_name(kind))
            .await?
            .and_then(|s| s.value.as_object().cloned())
            .unwrap_or_default())
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

    /// Every registered provider with its schema and saved values; secrets left out.
    #[tracing::instrument(skip_all)]
    pub async fn settings(&self) -> Result<SandboxSettings, SettingError> {
        self.refresh().await?;
        let active_kind = self.stored_active_kind().await?.unwrap_or_default();
        let mut providers = Vec::new();
        for kind in self.registry.kinds() {
            let info = (kind.info)();
            let schema = (kind.schema)();
            let stored = system_setting::get(&self.pool, &setting_name(&info.kind)).await?;
            let values = match &stored {
                Some(setting) => setting.value.as_object().cloned().unwrap_or_default(),
                None => schema
                    .fields
                    .iter()
                    .filter_map(|f| f.default.clone().map(|d| (f.key.clone(), d)))
                    .collect(),
            };
            let (values, secrets_set) = self.strip_secrets(&info.kind, values);
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
        let status = self.active_status().await;
        Ok(SandboxSettings {
            active_kind,
            active_health: status.health,
            active_languages: status.running.map(|r| r.languages).unwrap_or_default(),
            active_pool: status.pool,
            providers,
        })
    }

    /// Validates and saves a provider's settings; with `make_active`, also makes it the active
    /// provider. Nothing is saved on any error: the setting, its version row, its audit rows
    /// and the active type are written in one transaction. Saving the active provider
    /// rebuilds it. `expected` is the version the form was opened at ([`Expected::Any`] for
    /// the API and the CLI). `gate` says what happens when the save would put a provider that
    /// fails its health check in charge of every run.
    #[tracing::instrument(skip(self, values), fields(actor = %actor, kind = %kind))]
    pub async fn save(
        &self,
        actor: &Actor,
        kind: &str,
        values: Map<String, Value>,
        expected: Expected,
        make_active: bool,
        gate: Gate,
    ) -> Result<SaveOutcome, SettingError> {
        if let Err(error) = self.registry.get(kind) {
            return Ok(invalid(FORM_ERROR, error.to_string()));
        }
        let values = match self.with_stored_secrets(kind, values).await {
            Ok(values) => values,
            Err(NotMerged::Invalid(errors)) => return Ok(SaveOutcome::Invalid { errors }),
            Err(NotMerged::Store(error)) => return Err(error),
        };
        let values = match self.open_secrets(kind, values) {
            Ok(values) => values,
            Err(error) => return Ok(invalid(FORM_ERROR, error.to_string())),
        };
        self.save_values(actor, kind, values, expected, make_active, gate, None)
            .await
    }

    /// Makes the saved version `id` of `kind`'s settings the current one again, as a new
    /// version (audited as a restore). It is checked as a save is: against today's schema,
    /// and, when `kind` is the active provider, by its health check unless `gate` says
    /// otherwise. `expected` is the version the page showed as current.
    #[tracing::instrument(skip(self), fields(actor = %actor, kind = %kind))]
    pub async fn restore(
        &self,
        actor: &Actor,
        kind: &str,
        id: i64,
        expected: Expected,
        gate: Gate,
    ) -> Result<SaveOutcome, SettingError> {
        let stored = setting_version::get(&self.pool, id).await?;
        let Some(stored) = stored.filter(|v| v.provider == kind) else {
            return Ok(invalid(
                FORM_ERROR,
                format!("{kind} has no saved version #{id}; nothing was restored."),
            ));
        };
        let values = stored.value.as_object().cloned().unwrap_or_default();
        let values = match self.open_secrets(kind, values) {
            Ok(values) => values,
            Err(error) => {
                return Ok(invalid(
                    FORM_ERROR,
                    format!(
                        "Version #{id}'s secrets cannot be opened ({error}); nothing was restored."
                    ),
                ))
            }
        };
        self.save_values(actor, kind, values, expected, false, gate, Some(id))
            .await
    }

    /// The newest saved versions of `kind`'s settings, newest first, each with what changed
    /// from the one before it (secret values never: only that they changed).
    pub async fn versions(&self, kind: &str) -> Result<Vec<SettingVersion>, SettingError> {
        const SHOWN: i64 = 50;
        let Some(schema) = self.schema_of(kind) else {
            return Ok(Vec::new());
        };
        let name = setting_name(kind);
        let current = system_setting::get(&self.pool, &name)
            .await?
            .map(|s| s.version);
        let rows = setting_version::list(&self.pool, &name, SHOWN + 1).await?;
        let empty = Map::new();
        Ok(rows
            .iter()
            .enumerate()
            .take(SHOWN as usize)
            .map(|(n, row)| {
                let after = row.value.as_object().unwrap_or(&empty);
                let before = rows.get(n + 1).and_then(|r| r.value.as_object());
                let changes = before.map_or_else(Vec::new, |before| {
                    schema
                        .fields
                        .iter()
                        .filter(|f| before.get(&f.key) != after.get(&f.key))
                        .map(|f| {
                            let secret = f.kind.is_secret();
                            let shown = |v: Option<&Value>| match v {
                                _ if secret => None,
                                None | Some(Value::Null) => None,
                                Some(Value::String(s)) => Some(s.clone()),
                                Some(other) => Some(other.to_string()),
                            };
                            ValueChange {
                                key: f.key.clone(),
                                label: f.label.clone(),
                                before: shown(before.get(&f.key)),
                                after: shown(after.get(&f.key)),
                                secret,
                            }
                        })
                        .collect()
                });
                SettingVersion {
                    id: row.id,
                    version: row.version,
                    current: row.version.is_some() && row.version == current,
                    action: row.action.clone(),
                    restored_from: row.restored_from,
                    saved_by: row.saved_by.clone(),
                    saved_at: row.saved_at.clone(),
                    first: before.is_none() && n + 1 >= rows.len(),
                    changes,
                }
            })
            .collect())
    }

    /// The common end of a save and a restore: `values` are complete (secrets open).
    #[allow(clippy::too_many_arguments)]
    async fn save_values(
        &self,
        actor: &Actor,
        kind: &str,
        values: Map<String, Value>,
        expected: Expected,
        make_active: bool,
        gate: Gate,
        restored_from: Option<i64>,
    ) -> Result<SaveOutcome, SettingError> {
        let Ok(provider_kind) = self.registry.get(kind) else {
            return Ok(invalid(FORM_ERROR, format!("unknown provider {kind:?}")));
        };
        let provider = match self.registry.build(kind, &values) {
            Ok(provider) => provider,
            Err(SandboxError::ConfigInvalid { errors }) => {
                return Ok(SaveOutcome::Invalid { errors })
            }
            Err(error) => return Ok(invalid(FORM_ERROR, error.to_string())),
        };
        let normalized = match (provider_kind.schema)().normalize(&values) {
            Ok(normalized) => normalized,
            Err(errors) => {
                provider.shutdown().await;
                return Ok(SaveOutcome::Invalid { errors });
            }
        };
        let name = setting_name(kind);
        // A stale form loses before any health check (the write checks again, atomically).
        if let Expected::Version(version) = expected {
            let current = system_setting::get(&self.pool, &name)
                .await?
                .map_or(0, |s| s.version);
            if current != version {
                provider.shutdown().await;
                return Ok(conflict(current));
            }
        }
        let is_active = self.stored_active_kind().await?.as_deref() == Some(kind);
        let goes_live = is_active || make_active;
        let mut apply = Apply::Write {
            make_active,
            warned: gate == Gate::AfterWarning,
        };
        match gate {
            Gate::HealthyOnly if goes_live => {
                // Outside the swap lock: a health check may take its whole deadline.
                let health = self.health_of(&provider).await;
                if !health.healthy {
                    provider.shutdown().await;
                    return Ok(SaveOutcome::Unhealthy {
                        health,
                        active: is_active,
                        make_active,
                    });
                }
            }
            Gate::Inactive if is_active => apply = Apply::KeepOnly,
            Gate::Inactive => {
                apply = Apply::Write {
                    make_active: false,
                    warned: false,
                }
            }
            _ => {}
        }
        // From here to the rebuild, one save at a time: concurrent saves otherwise leave the
        // running provider built from an older version than the stored one.
        let _swap = self.swap.lock().await;
        let written = self
            .write(
                actor,
                kind,
                &name,
                &normalized,
                expected,
                apply,
                restored_from,
            )
            .await;
        let written = match written {
            Ok(written) => written,
            Err(SettingError::Conflict { current, .. }) => {
                provider.shutdown().await;
                return Ok(conflict(current));
            }
            Err(other) => {
                provider.shutdown().await;
                return Err(other);
            }
        };
        match written {
            Written::Kept { id } => {
                provider.shutdown().await;
                Ok(SaveOutcome::Kept { id })
            }
            Written::Saved { version, active } => {
                if active {
                    self.install(kind, version, provider).await?;
                } else {
                    // Built only to validate: release whatever it opened.
                    provider.shutdown().await;
                }
                Ok(SaveOutcome::Saved {
                    version,
                    active,
                    restored_from,
                    warning: None,
                })
            }
        }
    }

    /// The writes of one save, in one transaction: the setting, its version row and audit
    /// row, and the active type with its own audit row when it changes; or, for a version
    /// kept without being applied, only its version and audit rows.
    #[allow(clippy::too_many_arguments)]
    async fn write(
        &self,
        actor: &Actor,
        kind: &str,
        name: &str,
        normalized: &Map<String, Value>,
        expected: Expected,
        apply: Apply,
        restored_from: Option<i64>,
    ) -> Result<Written, SettingError> {
        // A write transaction from the start: it reads before it writes, and on SQLite a read
        // transaction that must become a write one fails at once (SQLITE_BUSY) when another
        // writer (a history row) went first.
        let mut tx = crate::server::db::begin_write(&self.pool).await?;
        let stored = self.stored_values(&mut *tx, kind).await?;
        let before = self.open_secrets(kind, stored.clone()).unwrap_or(stored);
        let sealed = Value::Object(self.seal_secrets(kind, normalized.clone()));
        let actor = actor.as_str();
        let changed: Vec<String> = before
            .keys()
            .chain(normalized.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|key| before.get(*key) != normalized.get(*key))
            .cloned()
            .collect();
        let Apply::Write {
            make_active,
            warned,
        } = apply
        else {
            if let Expected::Version(version) = expected {
                let current = system_setting::get(&mut *tx, name)
                    .await?
                    .map_or(0, |s| s.version);
                if current != version {
                    return Err(SettingError::Conflict {
                        name: name.to_owned(),
                        current,
                    });
                }
            }
            let id = setting_version::insert(
                &mut tx,
                NewVersion {
                    setting: name,
                    provider: kind,
                    version: None,
                    value: &sealed,
                    action: "kept",
                    restored_from,
                    saved_by: actor,
                },
            )
            .await?;
            settings_audit::record(&mut *tx, actor, name, Some(kind), "keep", &changed).await?;
            tx.commit().await?;
            return Ok(Written::Kept { id });
        };
        let saved = system_setting::put_in(&mut tx, name, &sealed, actor, expected).await?;
        let action = if restored_from.is_some() {
            "restore"
        } else {
            "save"
        };
        setting_version::insert(
            &mut tx,
            NewVersion {
                setting: name,
                provider: kind,
                version: Some(saved.version),
                value: &sealed,
                action,
                restored_from,
                saved_by: actor,
            },
        )
        .await?;
        // "Activate anyway" is no ordinary save: the audit says the health check failed.
        let detail: serde_json::Map<String, Value> = match warned {
            true => serde_json::Map::from_iter([(
                "health_check".to_owned(),
                json!("failed; applied anyway"),
            )]),
            false => serde_json::Map::new(),
        };
        settings_audit::record_with_detail(
            &mut *tx,
            actor,
            name,
            Some(kind),
            action,
            &changed,
            &detail,
        )
        .await?;
        let current_type = active_kind_in(&mut *tx).await?;
        let becomes_active = make_active && current_type.as_deref() != Some(kind);
        if becomes_active {
            system_setting::put_in(&mut tx, PROVIDER_TYPE, &json!(kind), actor, Expected::Any)
                .await?;
            settings_audit::record_with_detail(
                &mut *tx,
                actor,
                PROVIDER_TYPE,
                Some(kind),
                "activate",
                &[],
                &detail,
            )
            .await?;
        }
        tx.commit().await?;
        // The running provider always comes from the stored type, so the stored type decides.
        Ok(Written::Saved {
            version: saved.version,
            active: becomes_active || current_type.as_deref() == Some(kind),
        })
    }
}

/// What a save does when it would put a provider that fails its health check in charge of
/// every run (saving the active provider, or making one active).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Nothing is saved: the outcome carries the health report (the console's forms).
    HealthyOnly,
    /// Saved and applied, healthy or not (the APIs, the CLI).
    Anyway,
    /// "Activate anyway": saved and applied after the admin was shown a failed health check;
    /// the audit says so.
    AfterWarning,
    /// Saved without going live ("Save anyway (inactive)"): an inactive provider stays
    /// inactive; the active provider's new values are kept as a version, not applied.
    Inactive,
}

#[derive(Clone, Copy)]
enum Apply {
    /// `warned`: applied although the admin was shown a failed health check.
    Write {
        make_active: bool,
        warned: bool,
    },
    KeepOnly,
}

enum Written {
    Saved { version: i64, active: bool },
    Kept { id: i64 },
}

async fn active_kind_in(db: impl AnyExecutor<'_>) -> Result<Option<String>, SettingError> {
    Ok(system_setting::get(db, PROVIDER_TYPE)
        .await?
        .and_then(|s| s.value.as_str().map(str::to_owned)))
}
