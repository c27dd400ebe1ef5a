//! What the overview page shows about this installation.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SystemOverview {
    pub version: String,
    /// Human description of the database, e.g. `SQLite (data/sandbox-console.db)`.
    pub database: String,
    pub admin_count: i64,
    pub active_sessions: i64,
    /// RFC 3339 UTC timestamp of this process' start.
    pub started_at: String,
    pub uptime_secs: u64,
    /// History rows this console has not yet written (the database refused them; they wait
    /// in the spool on this console's disk).
    #[serde(default)]
    pub history_backlog: u64,
    /// Sandbox sessions open now (held for API keys).
    #[serde(default)]
    pub sandbox_sessions: u64,
}
