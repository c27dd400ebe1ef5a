//! Stored provider configs: their names, seeding, reading them for a page, and saving one
//! (the setting, its audit rows and the active type in one transaction).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};
use sqlx::{SqliteExecutor, SqlitePool};

use super::{secrets::NotMerged, SandboxService};
use crate::{
    model::{
        schema::{FieldErrors, FORM_ERROR},
        settings::{ProviderCard, SandboxSettings, SaveOutcome},
    },
    sandbox::Error as SandboxError,
    server::db::{
        execution::Actor,
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

/// Stores `value` under `name` unless something is stored already (a first start).
pub(super) async fn seed(pool: &SqlitePool, name: &str, value: &Value) -> Result<(), SettingError> {
    match system_setting::put(pool, name, value, "system", Expected::Absent).await {
        Ok(_) | Err(SettingError::Conflict { .. }) => Ok(()),
        Err(other) => Err(other),
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
    pub(super) async fn stored_values(
        &self,
        db: impl SqliteExecutor<'_>,
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
    /// provider. Nothing is saved on any error: the setting, its audit rows and the active type
    /// are written in one transaction. Saving the active provider rebuilds it. `expected` is
    /// the version the form was opened at ([`Expected::Any`] for the API and the CLI).
    #[tracing::instrument(skip(self, values), fields(actor = %actor, kind = %kind))]
    pub async fn save(
        &self,
        actor: &Actor,
        kind: &str,
        values: Map<String, Value>,
        expected: Expected,
        make_active: bool,
    ) -> Result<SaveOutcome, SettingError> {
        let provider_kind = match self.registry.get(kind) {
            Ok(k) => k,
            Err(error) => return Ok(invalid(FORM_ERROR, error.to_string())),
        };
        let values = match self.with_stored_secrets(kind, values).await {
            Ok(values) => values,
            Err(NotMerged::Invalid(errors)) => return Ok(SaveOutcome::Invalid { errors }),
            Err(NotMerged::Store(error)) => return Err(error),
        };
        let values = match self.open_secrets(kind, values) {
            Ok(values) => values,
            Err(error) => return Ok(invalid(FORM_ERROR, error.to_string())),
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
            Err(errors) => return Ok(SaveOutcome::Invalid { errors }),
        };
        let name = setting_name(kind);
        // From here to the rebuild, one save at a time: concurrent saves otherwise leave the
        // running provider built from an older version than the stored one.
        let _swap = self.swap.lock().await;
        let written = self
            .write(actor, kind, &name, &normalized, expected, make_active)
            .await;
        let (version, active) = match written {
            Ok(written) => written,
            Err(SettingError::Conflict { current, .. }) => {
                provider.shutdown().await;
                return Ok(SaveOutcome::Conflict {
                    message: format!(
                        "These settings were changed by someone else since you opened them (now version {current}). \
                         Reload the page to see their changes; nothing was saved."
                    ),
                });
            }
            Err(other) => {
                provider.shutdown().await;
                return Err(other);
            }
        };
        if active {
            self.install(kind, provider).await?;
        } else {
            // Built only to validate: release whatever it opened.
            provider.shutdown().await;
        }
        Ok(SaveOutcome::Saved { version, active })
    }

    /// The writes of one save, in one transaction: the setting, its audit row, and the
    /// active type with its own audit row when it changes. Returns the new version and
    /// whether the saved provider is (now) the active one.
    async fn write(
        &self,
        actor: &Actor,
        kind: &str,
        name: &str,
        normalized: &Map<String, Value>,
        expected: Expected,
        make_active: bool,
    ) -> Result<(i64, bool), SettingError> {
        // IMMEDIATE: it reads before it writes, and a read transaction that must become a
        // write one fails at once (SQLITE_BUSY) when another writer (a history row) went first.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let stored = self.stored_values(&mut *tx, kind).await?;
        let before = self.open_secrets(kind, stored.clone()).unwrap_or(stored);
        let sealed = Value::Object(self.seal_secrets(kind, normalized.clone()));
        let actor = actor.as_str();
        let saved = system_setting::put_in(&mut tx, name, &sealed, actor, expected).await?;
        let changed: Vec<String> = before
            .keys()
            .chain(normalized.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|key| before.get(*key) != normalized.get(*key))
            .cloned()
            .collect();
        settings_audit::record(&mut *tx, actor, name, Some(kind), "save", &changed).await?;
        let current_type = active_kind_in(&mut *tx).await?;
        let becomes_active = make_active && current_type.as_deref() != Some(kind);
        if becomes_active {
            system_setting::put_in(&mut tx, PROVIDER_TYPE, &json!(kind), actor, Expected::Any)
                .await?;
            settings_audit::record(&mut *tx, actor, PROVIDER_TYPE, Some(kind), "activate", &[])
                .await?;
        }
        tx.commit().await?;
        // The running provider always comes from the stored type, so the stored type decides.
        Ok((
            saved.version,
            becomes_active || current_type.as_deref() == Some(kind),
        ))
    }
}

async fn active_kind_in(db: impl SqliteExecutor<'_>) -> Result<Option<String>, SettingError> {
    Ok(system_setting::get(db, PROVIDER_TYPE)
        .await?
        .and_then(|s| s.value.as_str().map(str::to_owned)))
}
