//! How a provider kind presents itself, and what its health check found.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Identity of a provider kind, shown on its card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderInfo {
    /// Stable id, used in settings names (`sandbox.<kind>`) and APIs.
    pub kind: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// The result of a health check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    pub healthy: bool,
    /// One sentence for the admin: what works, or why not.
    pub message: String,
    /// Provider-specific facts (pool sizes, kernel features, latency, ...).
    #[serde(default)]
    pub details: Map<String, Value>,
}

/// How many sandboxes a provider may run at once and how many are running, for providers
/// that have such a pool (local run slots, docker containers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolState {
    pub size: u64,
    pub busy: u64,
}

/// The provider that runs code now, as the settings page, the dashboard and the API show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActiveStatus {
    /// `None` when no provider runs (the active provider's stored settings do not build).
    pub running: Option<RunningProvider>,
    /// Its latest health check (cached for a few seconds), or why nothing runs.
    pub health: HealthReport,
    pub pool: Option<PoolState>,
}

/// Who the running provider is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunningProvider {
    pub kind: String,
    pub name: String,
    pub languages: Vec<crate::model::execution::Language>,
}
