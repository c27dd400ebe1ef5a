//! The execution history as the console shows it, its filters, and its settings.

use serde::{Deserialize, Serialize};

/// Filters of the history list; blank means "any". Times are UTC, `YYYY-MM-DD` or
/// `YYYY-MM-DDTHH:MM`; `to` is inclusive of its whole day or minute.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryFilter {
    pub provider: String,
    pub status: String,
    pub caller: String,
    /// The console replica that ran the run (replicas on one PostgreSQL).
    pub replica: String,
    /// The session whose cells and commands to show.
    pub session: String,
    pub from: String,
    pub to: String,
}

impl HistoryFilter {
    /// The filter as a query string (without `?`), for links that keep it.
    pub fn query(&self) -> String {
        [
            ("provider", &self.provider),
            ("status", &self.status),
            ("caller", &self.caller),
            ("replica", &self.replica),
            ("session", &self.session),
            ("from", &self.from),
            ("to", &self.to),
        ]
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| format!("{k}={}", super::url::percent_encode(v.trim())))
        .collect::<Vec<_>>()
        .join("&")
    }
}

/// One run in the list (also the row the history queries read).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ExecutionSummary {
    pub id: i64,
    pub created_at: String,
    pub caller: String,
    pub caller_kind: String,
    pub source: String,
    pub provider: String,
    pub language: String,
    pub status: String,
    pub exit_code: Option<i64>,
    pub duration_ms: i64,
    pub input_bytes: i64,
    pub output_bytes: i64,
    /// The console replica that ran it ('' for runs recorded before replicas were named).
    #[serde(default)]
    pub replica: String,
    /// The session it was a cell or command of.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// One run in full.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecutionDetail {
    pub summary: ExecutionSummary,
    pub code_sha256: String,
    pub error: Option<String>,
    /// Kept only while the history keeps content.
    pub code: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// What the run did on the network, when it ran on an allow-list.
    #[serde(default)]
    pub egress: Option<crate::model::egress::EgressReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage {
    pub entries: Vec<ExecutionSummary>,
    pub filter: HistoryFilter,
    /// 1-based.
    pub page: u32,
    pub pages: u32,
    pub total: i64,
    /// Values seen in the history, for the filter menus.
    pub providers: Vec<String>,
    pub statuses: Vec<String>,
    /// Console replicas that ran runs (named ones only); the page names the replica of each
    /// run once there is more than one.
    pub replicas: Vec<String>,
    pub settings: HistorySettings,
}

/// Runs per page.
pub const PAGE_SIZE: u32 = 50;

/// What the history keeps, and for how long.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistorySettings {
    /// Keep code, stdout and stderr with each run (off: only hash and sizes).
    pub keep_content: bool,
    /// Each of code, stdout and stderr is cut at this many bytes.
    pub max_content_bytes: u32,
    /// Runs older than this are deleted.
    pub retention_days: u32,
    /// Beyond this many runs, the oldest are deleted.
    pub max_rows: u32,
}

impl Default for HistorySettings {
    fn default() -> Self {
        HistorySettings {
            keep_content: false,
            max_content_bytes: 64 * 1024,
            retention_days: 30,
            max_rows: 100_000,
        }
    }
}

impl HistorySettings {
    /// Checks ranges; the message names the field.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=1024 * 1024).contains(&self.max_content_bytes) {
            return Err("Keep at most 1 to 1048576 bytes of code and of each output.".into());
        }
        if !(1..=3650).contains(&self.retention_days) {
            return Err("Keep runs for 1 to 3650 days.".into());
        }
        if !(100..=10_000_000).contains(&self.max_rows) {
            return Err("Keep 100 to 10000000 runs.".into());
        }
        Ok(())
    }
}

/// The outcome of the last plain form post on the history page, once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HistoryFlash {
    Saved,
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_query_strings_without_blanks() {
        let filter = HistoryFilter {
            provider: "local".into(),
            caller: "ragflow prod".into(),
            from: "2026-12-01T10:00".into(),
            ..Default::default()
        };
        assert_eq!(
            filter.query(),
            "provider=local&caller=ragflow%20prod&from=2026-12-01T10:00"
        );
        assert_eq!(HistoryFilter::default().query(), "");
    }

    #[test]
    fn settings_ranges_are_checked() {
        assert!(HistorySettings::default().check().is_ok());
        let days = HistorySettings {
            retention_days: 0,
            ..Default::default()
        };
        assert!(days.check().unwrap_err().contains("days"));
    }
}
