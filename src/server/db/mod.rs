//! Database access: connecting, migrating, and one small repository module per table.

pub mod admin_session;
pub mod admin_user;
pub mod api_key;
pub mod artifact;
pub mod environment;
pub mod execution;
pub mod setting_version;
pub mod settings_audit;
pub mod system_setting;

use std::{path::PathBuf, str::FromStr, time::Duration};

use sqlx::{
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    SqlitePool,
};

/// Name of the tower-sessions table (created by `migrations/0003_session.sql`).
pub const SESSION_TABLE: &str = "session";

/// Opens (creating if needed, mode 0600) the SQLite database with WAL and foreign keys on.
/// The file is created here, once, not by each new pooled connection: a database file that
/// disappears later must make the console unready (`/readyz`), not be replaced by an empty one
/// behind everyone's back.
pub async fn connect(url: &str) -> Result<SqlitePool, sqlx::Error> {
    connect_with(url, 8).await
}

/// [`connect`] with a pool of `max_connections`.
pub async fn connect_with(url: &str, max_connections: u32) -> Result<SqlitePool, sqlx::Error> {
    let file = sqlite_file(url);
    if let Some(file) = &file {
        private_file(file)?;
    }
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(file.is_none())
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5));
    SqlitePoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(5))
        .after_release(|conn, _| Box::pin(still_in_step(conn)))
        .connect_with(options)
        .await
}

/// Whether a connection given back to the pool may be handed out again. sqlx counts the
/// transactions it opened; after some errors (a full disk, a trigger's `RAISE(ROLLBACK)`)
/// SQLite ends the transaction itself, sqlx's rollback then fails, and its count stays above
/// zero. Its next `begin` would open a savepoint instead, and a later refused commit leaves
/// that savepoint open, so every "commit" after it answers Ok, commits nothing and keeps the
/// write lock. Such a connection is closed (which rolls back whatever it holds).
async fn still_in_step(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    use sqlx::Connection;
    // The rollback of a dropped transaction is queued; a round trip lets it run first.
    conn.ping().await?;
    let in_step = !conn.is_in_transaction();
    if !in_step {
        tracing::warn!("a database connection lost track of its transaction; it is closed");
    }
    Ok(in_step)
}

/// Opens an existing database for reading only, for commands that change nothing: `None`
/// when its file does not exist (nothing is created, not even the data directory).
pub async fn connect_read_only(url: &str) -> Result<Option<SqlitePool>, sqlx::Error> {
    if sqlite_file(url).is_some_and(|file| !file.exists()) {
        return Ok(None);
    }
    let options = SqliteConnectOptions::from_str(url)?
        .read_only(true)
        .create_if_missing(false)
        .busy_timeout(Duration::from_secs(5));
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(options)
        .await?;
    Ok(Some(pool))
}

/// Applies the migrations in `migrations/` (embedded at compile time).
pub async fn migrate(pool: &SqlitePool) -> Result<(), sqlx::migrate::MigrateError> {
    sqlx::migrate!("./migrations").run(pool).await
}

/// Creates the data directory with mode 0700 (it holds the database and the secret key). An
/// existing directory is left as it is (it may be shared, e.g. /var/lib); if others can read
/// it, that is logged.
pub fn private_data_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    } else if std::fs::metadata(dir)?.permissions().mode() & 0o077 != 0 {
        tracing::warn!(
            dir = %dir.display(),
            "the data directory is readable by other users; consider chmod 700"
        );
    }
    Ok(())
}

/// Creates the SQLite file with mode 0600 before SQLite does (it would use 0644, and gives the
/// `-wal` and `-shm` files the mode of the database file), and narrows an existing database
/// and its `-wal`/`-shm` to 0600: they hold live session ids.
pub fn private_file(file: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if !file.exists() {
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(file)
        {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut path = file.as_os_str().to_owned();
        path.push(suffix);
        let path = std::path::PathBuf::from(path);
        if let Ok(meta) = std::fs::metadata(&path) {
            if meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            }
        }
    }
    Ok(())
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
/// keeps working through open connections while every write is lost), that a query runs and
/// that a write commits.
pub async fn ping(pool: &SqlitePool, file: Option<&std::path::Path>) -> Result<(), String> {
    if let Some(file) = file {
        if !file.exists() {
            return Err(format!("database file {} is missing", file.display()));
        }
    }
    let query = sqlx::query_scalar::<_, i64>("select 1").fetch_one(pool);
    match tokio::time::timeout(Duration::from_secs(2), query).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => return Err(error.to_string()),
        Err(_) => return Err("database did not answer within 2 s".into()),
    }
    // A database that reads but cannot write (full disk, a write lock held elsewhere) loses
    // history and refuses saves: only a committed write tells.
    let write = async {
        let mut tx = pool.begin().await?;
        sqlx::query(
            "insert into readiness (id, checked_at) values (1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) \
             on conflict (id) do update set checked_at = excluded.checked_at, updated_at = excluded.checked_at",
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    };
    match tokio::time::timeout(Duration::from_secs(2), write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("database refuses writes: {error}")),
        Err(_) => Err("database did not take a write within 2 s (locked?)".into()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite ends a transaction on its own after some errors (SQLITE_FULL, or a trigger's
    /// `RAISE(ROLLBACK)` as here); sqlx's own count of open transactions then stays at one.
    /// A connection in that state must not be handed out again: its next `begin` would open a
    /// savepoint whose "commit" commits nothing while it keeps the write lock.
    #[tokio::test]
    async fn a_transaction_sqlite_ended_on_its_own_never_swallows_the_next_commit() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        private_file(&dir.path().join("t.db")).unwrap();
        let pool = connect_with(&url, 1).await.unwrap();
        sqlx::query(
            "create table refused (x); create table kept (x); \
             create table parent (id integer primary key); \
             create table child (parent references parent (id) deferrable initially deferred); \
             create trigger no before insert on refused begin select raise(rollback, 'no'); end;",
        )
        .execute(&pool)
        .await
        .unwrap();

        let mut tx = pool.begin().await.unwrap();
        let refused = sqlx::query("insert into refused values (1)")
            .execute(&mut *tx)
            .await;
        assert!(refused.is_err(), "the trigger refuses the insert");
        drop(tx);
        // A commit refused while SQLite keeps the transaction open (a deferred foreign key, as a
        // full disk does).
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("insert into child values (7)")
            .execute(&mut *tx)
            .await
            .unwrap();
        assert!(
            tx.commit().await.is_err(),
            "the dangling reference is refused"
        );

        let mut tx = pool.begin().await.unwrap();
        sqlx::query("insert into kept values (1)")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        pool.close().await;

        let fresh = connect_with(&url, 1).await.unwrap();
        let kept: i64 = sqlx::query_scalar("select count(*) from kept")
            .fetch_one(&fresh)
            .await
            .unwrap();
        assert_eq!(kept, 1, "a commit that said Ok is on disk");
    }
}
