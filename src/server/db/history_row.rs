//! A history row as it is written: owned, stamped with its own key and the time its run
//! ended when the run ends (not when the write succeeds), so it can wait in the spool and be
//! written later, in a batch, exactly once.

use serde::{Deserialize, Serialize};
use sqlx::AnyPool;

use super::execution::{sha256, NewExecution};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    /// Unique per row (`execution.row_key`): a row written twice is written once.
    pub key: String,
    /// When the run ended, by the console's clock.
    pub created_at: String,
    pub caller: String,
    pub caller_kind: String,
    pub source: String,
    pub provider: String,
    pub language: String,
    pub status: String,
    pub exit_code: Option<i32>,
    pub duration_ms: i64,
    pub code_sha256: String,
    pub input_bytes: i64,
    pub output_bytes: i64,
    pub error: Option<String>,
    pub code: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub egress: Option<String>,
    /// The session the run was a cell or command of.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// A fresh row key: 128 random bits.
fn new_key() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl HistoryRow {
    /// The row of `run`, stamped now.
    pub fn of(run: &NewExecution<'_>) -> Self {
        HistoryRow {
            key: new_key(),
            created_at: super::clock::now(),
            caller: run.caller.name.clone(),
            caller_kind: run.caller.kind.as_str().to_owned(),
            source: run.caller.source.as_str().to_owned(),
            provider: run.provider.to_owned(),
            language: run.language.to_owned(),
            status: run.status.to_owned(),
            exit_code: run.exit_code,
            duration_ms: run.duration_ms as i64,
            code_sha256: sha256(run.code),
            input_bytes: run.input_bytes as i64,
            output_bytes: run.output_bytes as i64,
            error: run.error.map(str::to_owned),
            code: run.content.as_ref().map(|c| c.code.to_owned()),
            stdout: run.content.as_ref().map(|c| c.stdout.to_owned()),
            stderr: run.content.as_ref().map(|c| c.stderr.to_owned()),
            egress: run.egress.map(str::to_owned),
            session_id: run.session.map(str::to_owned),
        }
    }
}

/// Writes `rows` in one transaction, noting `replica` beside each; a row whose key is there
/// already is skipped. Either every row is committed or none is.
pub async fn record_rows(
    pool: &AnyPool,
    rows: &[HistoryRow],
    replica: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for row in rows {
        sqlx::query(
            "insert into execution (caller, caller_kind, source, provider, language, status, \
             exit_code, duration_ms, code_sha256, input_bytes, output_bytes, error, code, \
             stdout, stderr, egress, created_at, updated_at, replica, row_key, session_id) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $17, $18, $19, $20) on conflict (row_key) do nothing",
        )
        .bind(&row.caller)
        .bind(&row.caller_kind)
        .bind(&row.source)
        .bind(&row.provider)
        .bind(&row.language)
        .bind(&row.status)
        .bind(row.exit_code)
        .bind(row.duration_ms)
        .bind(&row.code_sha256)
        .bind(row.input_bytes)
        .bind(row.output_bytes)
        .bind(&row.error)
        .bind(&row.code)
        .bind(&row.stdout)
        .bind(&row.stderr)
        .bind(&row.egress)
        .bind(&row.created_at)
        .bind(replica)
        .bind(&row.key)
        .bind(&row.session_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}
