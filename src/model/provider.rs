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
    /// Running a program.
    pub busy: u64,
    /// Starting a container to keep warm (docker): neither busy nor ready yet.
    #[serde(default)]
    pub warming: u64,
    /// Runs waiting in line for a slot.
    #[serde(default)]
    pub waiting: u64,
    /// Its Python sandboxes started ahead of their runs, when it starts some.
    #[serde(default)]
    pub ahead: Option<AheadState>,
}

/// A pool of sandboxes started ahead: how many wait ready for a run, how many are starting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AheadState {
    pub ready: u64,
    pub warming: u64,
}

impl AheadState {
    /// In the words every page uses: "Python started ahead: 1 ready, 1 warming".
    pub fn describe(&self) -> String {
        format!(
            "Python started ahead: {} ready, {} warming",
            self.ready, self.warming
        )
    }
}

impl PoolState {
    /// The pool in the words every page uses: "1 busy, 1 warming, 2 idle of 4".
    pub fn describe(&self) -> String {
        pool_words(self.busy, self.warming, self.size)
    }
}

/// A pool (or one language's part of it) in the words every page uses.
pub fn pool_words(busy: u64, warming: u64, size: u64) -> String {
    let idle = size.saturating_sub(busy + warming);
    if warming > 0 {
        format!("{busy} busy, {warming} warming, {idle} idle of {size}")
    } else {
        format!("{busy} busy, {idle} idle of {size}")
    }
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

#[cfg(test)]
mod pool_tests {
    use super::{pool_words, PoolState};

    #[test]
    fn warming_slots_are_neither_busy_nor_idle() {
        assert_eq!(pool_words(0, 0, 4), "0 busy, 4 idle of 4");
        assert_eq!(pool_words(1, 2, 4), "1 busy, 2 warming, 1 idle of 4");
        let state = PoolState {
            size: 2,
            busy: 2,
            warming: 0,
            waiting: 3,
            ahead: None,
        };
        assert_eq!(state.describe(), "2 busy, 0 idle of 2");
    }
}
