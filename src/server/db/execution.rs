//! Repository for `execution`: one row per run, whoever asked for it.

use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::AnyPool;

use crate::model::history::{ExecutionDetail, ExecutionSummary, HistoryFilter};

/// Who asked for a run, and through which door.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The admin's username, the API key's name, or the local user of the CLI.
    pub name: String,
    pub kind: CallerKind,
    pub source: Source,
}

/// What kind of caller: stored in `execution.caller_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallerKind {
    Admin,
    ApiKey,
    Cli,
}

/// The door a run or a change came through: stored in `execution.source`, and a metric
/// label (a fixed set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The settings page's trial run.
    Trial,
    /// Test connection, from the page or RAGFlow's admin API.
    TestConnection,
    /// `POST /api/v1/execute`.
    Rest,
    /// RAGFlow's `/run`.
    Run,
    /// The command line.
    Cli,
    /// RAGFlow's admin API.
    Admin,
    /// Dify's `/v1/sandbox/run`.
    Dify,
    /// A cell or command of a session (our API or E2B's).
    Session,
}

impl CallerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CallerKind::Admin => "admin",
            CallerKind::ApiKey => "api_key",
            CallerKind::Cli => "cli",
        }
    }
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Trial => "trial",
            Source::TestConnection => "test_connection",
            Source::Rest => "rest",
            Source::Run => "run",
            Source::Cli => "cli",
            Source::Admin => "admin",
            Source::Dify => "dify",
            Source::Session => "session",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who the settings audit names for a change: `alice`, `api-key:<name>`, `cli:<user>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor(String);

impl Actor {
    /// A signed-in administrator, by username.
    pub fn admin(username: &str) -> Self {
        Actor(username.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Caller {
    pub fn admin(name: &str, source: Source) -> Self {
        Caller {
            name: name.to_owned(),
            kind: CallerKind::Admin,
            source,
        }
    }

    pub fn api_key(name: &str, source: Source) -> Self {
        Caller {
            name: name.to_owned(),
            kind: CallerKind::ApiKey,
            source,
        }
    }

    pub fn cli(name: &str) -> Self {
        Caller {
            name: name.to_owned(),
            kind: CallerKind::Cli,
            source: Source::Cli,
        }
    }

    /// How the settings audit names this caller.
    pub fn actor(&self) -> Actor {
        Actor(match self.kind {
            CallerKind::ApiKey => format!("api-key:{}", self.name),
            CallerKind::Cli => format!("cli:{}", self.name),
            CallerKind::Admin => self.name.clone(),
        })
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
    /// Code and output to keep (already cut to size), when the history keeps content.
    pub content: Option<Content<'a>>,
    /// The run's egress report as JSON, when it ran on an allow-list.
    pub egress: Option<&'a str>,
    /// The session the run was a cell or command of.
    pub session: Option<&'a str>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Content<'a> {
    pub code: &'a str,
    pub stdout: &'a str,
    pub stderr: &'a str,
}

pub fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const SUMMARY: &str = "id, created_at, caller, caller_kind, source, provider, language, status, \
                       exit_code, duration_ms, input_bytes, output_bytes, replica, session_id";

/// Why a history query gave no rows: a filter the admin must fix, or the database.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    BadFilter(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM[:SS]` (a space for the `T` is fine), normalised.
pub fn parse_time(text: &str) -> Result<Option<String>, String> {
    let text = text.trim().replacen(' ', "T", 1);
    if text.is_empty() {
        return Ok(None);
    }
    let shape_ok = text.len() >= 10
        && text.len() <= 19
        && text.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            _ => c.is_ascii_digit(),
        })
        && matches!(text.len(), 10 | 16 | 19);
    if shape_ok {
        Ok(Some(text))
    } else {
        Err(format!(
            "{text:?} is not a time: use YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)."
        ))
    }
}

/// The `where` clause of a filter (placeholders `$1`, `$2`, …), with its bound values in order.
fn conditions(filter: &HistoryFilter) -> Result<(String, Vec<String>), String> {
    let mut clauses = vec!["1 = 1".to_owned()];
    let mut binds = Vec::new();
    for (column, value) in [
        ("provider", &filter.provider),
        ("status", &filter.status),
        ("caller", &filter.caller),
        ("replica", &filter.replica),
        ("session_id", &filter.session),
    ] {
        if !value.trim().is_empty() {
            binds.push(value.trim().to_owned());
            clauses.push(format!("{column} = ${}", binds.len()));
        }
    }
    if let Some(from) = parse_time(&filter.from)? {
        binds.push(from);
        clauses.push(format!("created_at >= ${}", binds.len()));
    }
    if let Some(to) = parse_time(&filter.to)? {
        // Inclusive of the whole day (or minute) named.
        binds.push(to);
        clauses.push(format!(
            "substr(created_at, 1, length(${n})) <= ${n}",
            n = binds.len()
        ));
    }
    Ok((clauses.join(" and "), binds))
}

/// How many runs match `filter`. `Err(message)` for a bad filter.
pub async fn count(pool: &AnyPool, filter: &HistoryFilter) -> Result<i64, QueryError> {
    let (clause, binds) = conditions(filter).map_err(QueryError::BadFilter)?;
    let sql = format!("select count(*) from execution where {clause}");
    let mut count = sqlx::query_scalar::<_, i64>(&sql);
    for bind in &binds {
        count = count.bind(bind);
    }
    Ok(count.fetch_one(pool).await?)
}

/// Runs matching `filter`, newest first.
pub async fn search(
    pool: &AnyPool,
    filter: &HistoryFilter,
    limit: u32,
    offset: u64,
) -> Result<Vec<ExecutionSummary>, QueryError> {
    let (clause, binds) = conditions(filter).map_err(QueryError::BadFilter)?;
    let sql = format!(
        "select {SUMMARY} from execution where {clause} order by created_at desc, id desc limit ${} offset ${}",
        binds.len() + 1,
        binds.len() + 2
    );
    let mut rows = sqlx::query_as::<_, ExecutionSummary>(&sql);
    for bind in &binds {
        rows = rows.bind(bind);
    }
    let rows = rows
        .bind(i64::from(limit))
        .bind(offset as i64)
        .fetch_all(pool)
        .await?;
    Ok(rows)
}

pub async fn detail(pool: &AnyPool, id: i64) -> Result<Option<ExecutionDetail>, sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct Extra {
        code_sha256: String,
        error: Option<String>,
        code: Option<String>,
        stdout: Option<String>,
        stderr: Option<String>,
        egress: Option<String>,
    }
    let summary: Option<ExecutionSummary> =
        sqlx::query_as(&format!("select {SUMMARY} from execution where id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await?;
    let Some(summary) = summary else {
        return Ok(None);
    };
    let extra: Extra = sqlx::query_as(
        "select code_sha256, error, code, stdout, stderr, egress from execution where id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await?;
    Ok(Some(ExecutionDetail {
        summary,
        code_sha256: extra.code_sha256,
        error: extra.error,
        code: extra.code,
        stdout: extra.stdout,
        stderr: extra.stderr,
        egress: extra
            .egress
            .and_then(|text| serde_json::from_str(&text).ok()),
    }))
}

/// The distinct values of a column, for filter menus.
pub async fn distinct(pool: &AnyPool, column: &str) -> Result<Vec<String>, sqlx::Error> {
    let column = match column {
        "provider" | "status" | "replica" => column,
        _ => return Ok(Vec::new()),
    };
    // A loose index scan: each step seeks the next value in the column's index, so the cost
    // grows with the number of distinct values, not of rows.
    sqlx::query_scalar(&format!(
        "with recursive seen (v) as ( \
           select min({column}) from execution \
           union all \
           select (select min({column}) from execution where {column} > seen.v) from seen where seen.v is not null \
         ) select v from seen where v is not null order by v"
    ))
    .fetch_all(pool)
    .await
}

/// Deletes runs older than `days` and, beyond `max_rows`, the oldest; returns how many.
pub async fn enforce_retention(
    pool: &AnyPool,
    days: u32,
    max_rows: u32,
) -> Result<u64, sqlx::Error> {
    let old = sqlx::query("delete from execution where created_at < $1")
        .bind(super::clock::before(Duration::from_secs(
            u64::from(days) * 86_400,
        )))
        .execute(pool)
        .await?
        .rows_affected();
    let surplus = sqlx::query(
        "delete from execution where id <= (select id from execution order by id desc limit 1 offset $1)",
    )
    .bind(i64::from(max_rows))
    .execute(pool)
    .await?
    .rows_affected();
    Ok(old + surplus)
}

/// Where the last hour starts, to the minute, as the history filter takes it
/// (`2026-12-03T10:15`, UTC).
pub fn last_hour_start() -> String {
    super::clock::minute_before(Duration::from_secs(3600))
}

/// Runs in the last hour, by status, most frequent first.
pub async fn last_hour_by_status(pool: &AnyPool) -> Result<Vec<(String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "select status, count(*) as n from execution \
         where created_at >= $1 group by status order by n desc, status",
    )
    .bind(super::clock::before(Duration::from_secs(3600)))
    .fetch_all(pool)
    .await
}

/// p50 and p95 (nearest rank) of the durations of runs that ran (not provider errors) in the
/// last `minutes`, per bucket (`bucket_minutes` wide, 0 = oldest) that had runs: `(bucket,
/// runs, p50_ms, p95_ms)`. Computed in SQL: no row leaves the database.
pub async fn recent_latency(
    pool: &AnyPool,
    minutes: u32,
    bucket_minutes: u32,
) -> Result<Vec<(i64, i64, i64, i64)>, sqlx::Error> {
    // Each run's bucket is its age in whole buckets, counted from the window's start; the
    // age comes from its time text, read the same way on every database.
    let since = u64::from(minutes) * 60;
    let last = i64::from(minutes / bucket_minutes.max(1)) - 1;
    sqlx::query_as(&format!(
        "with runs as ( \
           select case when ({age} - $1) / $2 > $3 then $3 else ({age} - $1) / $2 end as bucket, \
                  duration_ms from execution \
           where created_at >= $4 and status != 'error' \
         ), ranked as ( \
           select bucket, duration_ms, \
                  row_number() over (partition by bucket order by duration_ms) as r, \
                  count(*) over (partition by bucket) as n \
           from runs \
         ) \
         select bucket, max(n), \
                max(case when r = (50 * n + 99) / 100 then duration_ms end), \
                max(case when r = (95 * n + 99) / 100 then duration_ms end) \
         from ranked group by bucket order by bucket",
        age = super::Backend::of(pool).epoch_seconds("created_at"),
    ))
    .bind(super::clock::unix_now() - since as i64)
    .bind(i64::from(bucket_minutes) * 60)
    // A run in this very second ends the window: it belongs to the last bucket.
    .bind(last)
    .bind(super::clock::before(Duration::from_secs(since)))
    .fetch_all(pool)
    .await
}

/// The latest runs that did not succeed.
pub async fn recent_failures(
    pool: &AnyPool,
    limit: u32,
) -> Result<Vec<ExecutionSummary>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {SUMMARY} from execution where status != 'success' order by id desc limit $1"
    ))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_a_day_or_a_minute() {
        assert_eq!(parse_time(" 2026-12-01 "), Ok(Some("2026-12-01".into())));
        assert_eq!(
            parse_time("2026-12-01 10:30"),
            Ok(Some("2026-12-01T10:30".into()))
        );
        assert_eq!(parse_time(""), Ok(None));
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("2026-12-01T10").is_err());
    }
}
