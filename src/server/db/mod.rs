//! Database access: connecting, migrating, and one small repository module per table.

pub mod admin_user;
pub mod api_key;
pub mod execution;
pub mod settings_audit;
pub mod system_setting;

use std::{path::PathBuf, str::FromStr, time::Duration};

use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    SqlitePool,
};

/// Name of the tower-sessions table (created by `migrations/0003_session.sql`).
pub const SESSION_TABLE: &str = "session";

/// Opens (creating if needed) the SQLite database with WAL and foreign keys on.
pub async fn connect(url: &str) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5));
    SqlitePoolOptions::new()
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(options)
        .await
}

/// Applies the migrations in `migrations/` (embedded at compile time).
pub async fn migrate(pool: &SqlitePool) -> Result<(), sqlx::migrate::MigrateError> {
    sqlx::migrate!("./migrations").run(pool).await
}

/// The file behind a SQLite URL, or `None` for in-memory databases.
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    let options = SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    let text = path.to_string_lossy();
    (!text.is_empty() && text != ":memory:" && !url.contains("mode=memory"))
        .then(|| path.to_path_buf())
}

/// Is the database usable right now? Checks that a SQLite file still exists (a deleted file
/// keeps working through open connections while every write is lost) and that a query runs.
pub async fn ping(pool: &SqlitePool, file: Option<&std::path::Path>) -> Result<(), String> {
    if let Some(file) = file {
        if !file.exists() {
            return Err(format!("database file {} is missing", file.display()));
        }
    }
    let query = sqlx::query_scalar::<_, i64>("select 1").fetch_one(pool);
    match tokio::time::timeout(Duration::from_secs(2), query).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("database did not answer within 2 s".into()),
    }
}

/// Sessions that have not expired yet.
pub async fn active_session_count(pool: &SqlitePool) -> Result<i64, sqlx::Error> {
    let sql = format!("select count(*) from {SESSION_TABLE} where expiry_date > unixepoch()");
    sqlx::query_scalar(&sql).fetch_one(pool).await
}

/// Removes expired sessions; run periodically by the server.
pub async fn delete_expired_sessions(pool: &SqlitePool) -> Result<u64, sqlx::Error> {
    let sql = format!("delete from {SESSION_TABLE} where expiry_date <= unixepoch()");
    Ok(sqlx::query(&sql).execute(pool).await?.rows_affected())
}
