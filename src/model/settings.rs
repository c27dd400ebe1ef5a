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
    },
    /// Nothing was saved.
    Invalid {
        errors: FieldErrors,
    },
    /// Someone saved in between; nothing was saved.
    Conflict {
        message: String,
    },
}

/// What "Test connection" found, on unsaved values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectionReport {
    pub passed: bool,
    pub message: String,
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
    pub outcome: FlashOutcome,
}
