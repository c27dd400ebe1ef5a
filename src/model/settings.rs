//! What the sandbox-settings page shows and sends.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{
    provider::{HealthReport, ProviderInfo},
    schema::{ConfigSchema, FieldErrors},
};

/// One provider card with its form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderCard {
    pub info: ProviderInfo,
    pub schema: ConfigSchema,
    pub active: bool,
    /// Saved values, or the schema defaults when nothing is saved; secrets are never included.
    pub values: Map<String, Value>,
    /// Secret fields that have a stored value ("set — leave blank to keep").
    pub secrets_set: Vec<String>,
    /// Version of the saved settings, to send back with a save; `None` when never saved.
    pub version: Option<i64>,
    pub updated_at: Option<String>,
    pub updated_by: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SandboxSettings {
    pub active_kind: String,
    /// A fresh health check of the active provider, or why there is none.
    pub active_health: HealthReport,
    /// Languages the active provider runs (empty when none is running).
    pub active_languages: Vec<crate::model::execution::Language>,
    /// The active provider's pool (busy of size), for providers that have one.
    #[serde(default)]
    pub active_pool: Option<crate::model::provider::PoolState>,
    pub providers: Vec<ProviderCard>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SaveOutcome {
    Saved {
        version: i64,
        active: bool,
        /// The saved version this save brought back (a restore).
        #[serde(default)]
        restored_from: Option<i64>,
        /// What the save takes away that runs had (packages of the environment it left).
        #[serde(default)]
        warning: Option<String>,
    },
    /// The save would have put a provider that fails its health check in charge of every
    /// run; nothing was saved. "Activate anyway" and "Save anyway (inactive)" are the
    /// explicit second steps.
    Unhealthy {
        health: HealthReport,
        /// The provider is the active one (else the save asked to make it active).
        active: bool,
        /// The save asked to make the provider active.
        make_active: bool,
    },
    /// Kept as a saved version (`id`) of the active provider's settings without being
    /// applied: the running settings are unchanged.
    Kept { id: i64 },
    /// Nothing was saved.
    Invalid { errors: FieldErrors },
    /// Someone saved in between; nothing was saved.
    Conflict { message: String },
}

/// What "Test connection" found, on unsaved values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectionReport {
    pub passed: bool,
    /// What happened, in a sentence.
    pub message: String,
    /// The raw failure chain behind a message that was put in plain words.
    #[serde(default)]
    pub detail: Option<String>,
    pub health: Option<HealthReport>,
    pub exit_code: Option<i32>,
    pub execution_time_ms: Option<u64>,
    /// Round trip of the whole test, health check included.
    pub latency_ms: u64,
    pub stdout: String,
    pub stderr: String,
    /// Field errors when the values did not even validate.
    pub errors: FieldErrors,
}

/// What a trial-run form held, to show it again with its result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialInput {
    pub language: String,
    pub code: String,
    pub arguments: String,
    pub timeout_secs: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FlashOutcome {
    Save(SaveOutcome),
    Test(ConnectionReport),
    /// A restore of saved version `id`.
    Restore {
        id: i64,
        outcome: SaveOutcome,
    },
    Trial {
        input: TrialInput,
        result: Result<crate::model::execution::ExecutionResult, String>,
        /// Where each of the result's artifacts downloads from, in order.
        #[serde(default)]
        downloads: Vec<String>,
    },
}

/// The outcome of a plain (JavaScript-off) form post, kept in the session for the one page
/// view the browser is redirected to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SandboxFlash {
    pub kind: String,
    /// The submitted values (secrets removed), so the form shows what was typed.
    pub values: Map<String, Value>,
    /// What the trial form held (both forms post together), so neither loses what was typed.
    #[serde(default)]
    pub trial: Option<TrialInput>,
    pub outcome: FlashOutcome,
}

/// One saved version of a provider's settings, for the History tab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingVersion {
    /// Restore names a version by this.
    pub id: i64,
    /// The settings' version it became; `None` when it was kept without being applied.
    pub version: Option<i64>,
    /// It is what is stored now.
    pub current: bool,
    /// `save`, `restore` or `kept`.
    pub action: String,
    pub restored_from: Option<i64>,
    pub saved_by: Option<String>,
    pub saved_at: String,
    /// The oldest version kept: there is nothing to compare it with.
    pub first: bool,
    /// What differs from the version before it.
    pub changes: Vec<ValueChange>,
}

/// One field that differs between two versions. Secret values are never shown: only that
/// they changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueChange {
    pub key: String,
    pub label: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub secret: bool,
}
