//! Repository for `execution`: one row per run, whoever asked for it.

use sha2::{Digest, Sha256};
use sqlx::SqlitePool;

/// Who asked for a run, and through which door.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The admin's username, the API key's name, or the local user of the CLI.
    pub name: String,
    /// `admin`, `api_key` or `cli`.
    pub kind: &'static str,
    /// `trial`, `test_connection`, `rest`, `run` (RAGFlow) or `cli`.
    pub source: &'static str,
}

impl Caller {
    pub fn admin(name: &str, source: &'static str) -> Self {
        Caller {
            name: name.to_owned(),
            kind: "admin",
            source,
        }
    }

    pub fn api_key(name: &str, source: &'static str) -> Self {
        Caller {
            name: name.to_owned(),
            kind: "api_key",
            source,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct NewExecution<'a> {
    pub caller: &'a Caller,
    pub provider: &'a str,
    pub language: &'a str,
    /// The result status, or `error` when the provider failed.
    pub status: &'a str,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub code: &'a str,
    pub input_bytes: usize,
    pub output_bytes: usize,
    pub error: Option<&'a str>,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct ExecutionRow {
    pub id: i64,
    pub caller: String,
    pub caller_kind: String,
    pub source: String,
    pub provider: String,
    pub language: String,
    pub status: String,
    pub exit_code: Option<i64>,
    pub duration_ms: i64,
    pub code_sha256: String,
    pub input_bytes: i64,
    pub output_bytes: i64,
    pub error: Option<String>,
    pub created_at: String,
}

pub fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub async fn record(pool: &SqlitePool, run: &NewExecution<'_>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "insert into execution (caller, caller_kind, source, provider, language, status, exit_code, \
         duration_ms, code_sha256, input_bytes, output_bytes, error) \
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id",
    )
    .bind(&run.caller.name)
    .bind(run.caller.kind)
    .bind(run.caller.source)
    .bind(run.provider)
    .bind(run.language)
    .bind(run.status)
    .bind(run.exit_code)
    .bind(run.duration_ms as i64)
    .bind(sha256(run.code))
    .bind(run.input_bytes as i64)
    .bind(run.output_bytes as i64)
    .bind(run.error)
    .fetch_one(pool)
    .await
}

/// The newest runs first.
pub async fn recent(pool: &SqlitePool, limit: i64) -> Result<Vec<ExecutionRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, caller, caller_kind, source, provider, language, status, exit_code, duration_ms, \
         code_sha256, input_bytes, output_bytes, error, created_at from execution order by id desc limit ?",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
}
