//! Database access: connecting, migrating, and one small repository module per table.

pub mod admin_session;
pub mod admin_user;
pub mod api_key;
pub mod artifact;
pub mod background_job;
pub mod clock;
pub mod environment;
pub mod execution;
#[cfg(test)]
mod execution_reads_tests;
pub mod history_row;
pub mod login_limit;
pub mod setting_version;
pub mod settings_audit;
pub mod system_setting;

use std::{borrow::Cow, path::PathBuf, str::FromStr, time::Duration};

use sqlx::{
    any::{AnyConnectOptions, AnyPoolOptions},
    sqlite::SqliteConnectOptions,
    Any, AnyConnection, AnyPool, Connection, Executor, Transaction,
};

/// Name of the tower-sessions table (created by the `0003_session` migrations).
pub const SESSION_TABLE: &str = "session";

/// Which database a pool talks to: the few places where SQLite and PostgreSQL need different
/// words ask this; every other query is written once, in the words both take (`$1`
/// placeholders, times bound from [`clock`], 0/1 integers for yes/no).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The backend a database URL names; `None` for a scheme the console does not speak.
    pub fn of_url(url: &str) -> Option<Self> {
        let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
        match scheme {
            "sqlite" => Some(Backend::Sqlite),
            "postgres" | "postgresql" => Some(Backend::Postgres),
            _ => None,
        }
    }

    /// The database `url` names, or the error every opener gives for anything else.
    pub fn require(url: &str) -> Result<Self, sqlx::Error> {
        Self::of_url(url).ok_or_else(|| {
            sqlx::Error::Configuration(
                format!(
                    "the database URL must start with sqlite:// or postgres://, not {}",
                    redacted_url(url)
                )
                .into(),
            )
        })
    }

    /// The backend behind `pool`.
    pub fn of(pool: &AnyPool) -> Self {
        match pool.connect_options().database_url.scheme() {
            "postgres" | "postgresql" => Backend::Postgres,
            _ => Backend::Sqlite,
        }
    }

    /// How the overview names it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }

    /// Whole seconds since the Unix epoch of a time stored as text (`created_at`).
    pub fn epoch_seconds(self, column: &str) -> String {
        match self {
            Backend::Sqlite => format!("cast(strftime('%s', {column}) as integer)"),
            Backend::Postgres => {
                format!("cast(floor(extract(epoch from cast({column} as timestamptz))) as bigint)")
            }
        }
    }
}

/// A database URL with its password (in the user part, or as a `password`/`sslpassword`
/// parameter) replaced by `redacted`, for logs and error messages.
pub fn redacted_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return url.split('@').next_back().unwrap_or_default().to_owned();
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("redacted"));
    }
    let secret = |key: &str| matches!(key, "password" | "sslpassword");
    if parsed.query_pairs().any(|(key, _)| secret(&key)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if secret(&key) {
                    "redacted".into()
                } else {
                    value
                };
                (key.into_owned(), value.into_owned())
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// Opens the database `url` names (`sqlite://…` or `postgres://…`) with a pool of 8.
pub async fn connect(url: &str) -> Result<AnyPool, sqlx::Error> {
    connect_with(url, 8).await
}

/// [`connect`] with a pool of `max_connections`.
///
/// SQLite: the file is created here (mode 0600), once, not by each new pooled connection: a
/// database file that disappears later must make the console unready (`/readyz`), not be
/// replaced by an empty one behind everyone's back. Connections use WAL, foreign keys and a
/// 5 s busy timeout. PostgreSQL: each statement may take at most 30 s.
pub async fn connect_with(url: &str, max_connections: u32) -> Result<AnyPool, sqlx::Error> {
    sqlx::any::install_default_drivers();
    let backend = Backend::require(url)?;
    let options = match backend {
        Backend::Sqlite => {
            let file = sqlite_file(url);
            if let Some(file) = &file {
                private_file(file)?;
            }
            // Checked here, so a bad URL is refused with SQLite's own message.
            SqliteConnectOptions::from_str(url)?;
            AnyConnectOptions::from_str(url)?
        }
        Backend::Postgres => AnyConnectOptions::from_str(url)?,
    };
    AnyPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(5))
        .after_connect(move |conn, _| Box::pin(prepare(conn, backend, false)))
        // The check a SQLite connection needs after some errors; PostgreSQL ends its own
        // transactions cleanly, and a ping per release would double its round trips.
        .after_release(move |conn, _| {
            Box::pin(async move {
                match backend {
                    Backend::Sqlite => still_in_step(conn).await,
                    Backend::Postgres => Ok(true),
                }
            })
        })
        .connect_with(options)
        .await
}

/// What every new connection is told first.
async fn prepare(
    conn: &mut AnyConnection,
    backend: Backend,
    read_only: bool,
) -> Result<(), sqlx::Error> {
    let setup = match (backend, read_only) {
        (Backend::Sqlite, false) => {
            "pragma journal_mode = wal; pragma synchronous = normal; \
             pragma foreign_keys = on; pragma busy_timeout = 5000"
        }
        (Backend::Sqlite, true) => "pragma busy_timeout = 5000",
        (Backend::Postgres, false) => "set statement_timeout = '30s'",
        (Backend::Postgres, true) => {
            "set statement_timeout = '30s'; set default_transaction_read_only = on"
        }
    };
    conn.execute(setup).await?;
    Ok(())
}

fn with_param(url: &str, key: &str, value: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{key}={value}")
}

/// Whether a connection given back to the pool may be handed out again. sqlx counts the
/// transactions it opened; after some errors (a full disk, a trigger's `RAISE(ROLLBACK)`)
/// SQLite ends the transaction itself, sqlx's rollback then fails, and its count stays above
/// zero. Its next `begin` would open a savepoint instead, and a later refused commit leaves
/// that savepoint open, so every "commit" after it answers Ok, commits nothing and keeps the
/// write lock. Such a connection is closed (which rolls back whatever it holds).
async fn still_in_step(conn: &mut AnyConnection) -> Result<bool, sqlx::Error> {
    // The rollback of a dropped transaction is queued; a round trip lets it run first.
    conn.ping().await?;
    let in_step = !conn.is_in_transaction();
    if !in_step {
        tracing::warn!("a database connection lost track of its transaction; it is closed");
    }
    Ok(in_step)
}

/// A transaction for a read followed by a write that must not interleave with another
/// such (a version check then a save). SQLite: `BEGIN IMMEDIATE`, which takes the write lock
/// at once (a read transaction that must become a write one later fails with "database is
/// locked" instead of waiting). PostgreSQL: a transaction holding one advisory lock for
/// its duration, so such writers queue one behind the other as on SQLite.
pub async fn begin_write(pool: &AnyPool) -> Result<Transaction<'static, Any>, sqlx::Error> {
    begin_locked(pool, lock::WRITE).await
}

/// [`begin_write`] for writers that only need to queue behind each other: on PostgreSQL they
/// take the advisory lock `key` instead of [`lock::WRITE`] (SQLite has one write lock).
pub async fn begin_locked(
    pool: &AnyPool,
    key: i64,
) -> Result<Transaction<'static, Any>, sqlx::Error> {
    match Backend::of(pool) {
        Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
        Backend::Postgres => {
            let mut tx = pool.begin().await?;
            sqlx::query("select pg_advisory_xact_lock($1)")
                .bind(key)
                .execute(&mut *tx)
                .await?;
            Ok(tx)
        }
    }
}

/// A yes/no column, kept as 0/1 on both databases (SQLite has no boolean type, and through
/// sqlx's Any driver its integers stay integers): a `bool` field reads it with
/// `#[sqlx(try_from = "Flag")]`, and a bind writes `i64::from(value)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag(pub bool);

impl sqlx::Type<Any> for Flag {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <i64 as sqlx::Type<Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <i64 as sqlx::Type<Any>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, Any> for Flag {
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        <i64 as sqlx::Decode<Any>>::decode(value).map(|n| Flag(n != 0))
    }
}

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0
    }
}

/// Keys of the PostgreSQL advisory locks the console takes (one number space per database).
pub mod lock {
    /// Serialises read-then-write transactions ([`super::begin_write`]).
    pub const WRITE: i64 = 0x5343_0001;
    /// With a key's id, serialises the counting of that key's requests (the two-number
    /// form of the lock, a space of its own).
    pub const RATE_CLASS: i32 = 0x5343_0002;
    /// Serialises the sign-in limits' checks (apart from settings saves).
    pub const SIGN_IN: i64 = 0x5343_0003;
}

/// Opens an existing database for reading only, for commands that change nothing: `None`
/// when its SQLite file does not exist (nothing is created, not even the data directory).
pub async fn connect_read_only(url: &str) -> Result<Option<AnyPool>, sqlx::Error> {
    sqlx::any::install_default_drivers();
    let backend = Backend::require(url)?;
    let url: Cow<str> = match backend {
        Backend::Sqlite => {
            if sqlite_file(url).is_some_and(|file| !file.exists()) {
                return Ok(None);
            }
            Cow::Owned(with_param(url, "mode", "ro"))
        }
        Backend::Postgres => Cow::Borrowed(url),
    };
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .after_connect(move |conn, _| Box::pin(prepare(conn, backend, true)))
        .connect_with(AnyConnectOptions::from_str(&url)?)
        .await?;
    Ok(Some(pool))
}

/// Applies the migrations for the pool's database (`migrations/sqlite` or
/// `migrations/postgres`, embedded at compile time). On PostgreSQL sqlx holds an advisory lock
/// while it migrates, so replicas that start together migrate once.
pub async fn migrate(pool: &AnyPool) -> Result<(), sqlx::migrate::MigrateError> {
    match Backend::of(pool) {
        Backend::Sqlite => sqlx::migrate!("./migrations/sqlite").run(pool).await,
        Backend::Postgres => sqlx::migrate!("./migrations/postgres").run(pool).await,
    }
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
pub async fn ping(pool: &AnyPool, file: Option<&std::path::Path>) -> Result<(), String> {
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
            "insert into readiness (id, checked_at) values (1, $1) \
             on conflict (id) do update set checked_at = excluded.checked_at, updated_at = excluded.checked_at",
        )
        .bind(clock::now())
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

/// The session store keeps `expiry_date` as Unix seconds on SQLite and as a `timestamptz` on
/// PostgreSQL: the expression for "the moment `$1` seconds after the epoch".
fn session_time(pool: &AnyPool) -> &'static str {
    match Backend::of(pool) {
        Backend::Sqlite => "$1",
        Backend::Postgres => "to_timestamp($1)",
    }
}

/// Removes expired sessions; run periodically by the server.
pub async fn delete_expired_sessions(pool: &AnyPool) -> Result<u64, sqlx::Error> {
    let sql = format!(
        "delete from {SESSION_TABLE} where expiry_date <= {}",
        session_time(pool)
    );
    Ok(sqlx::query(&sql)
        .bind(clock::unix_now())
        .execute(pool)
        .await?
        .rows_affected())
}

/// A migrated SQLite database in a temporary directory, for unit tests.
#[cfg(test)]
pub async fn scratch() -> (tempfile::TempDir, AnyPool) {
    let dir = tempfile::tempdir().unwrap();
    let pool = connect(&format!(
        "sqlite://{}",
        dir.path().join("test.db").display()
    ))
    .await
    .unwrap();
    migrate(&pool).await.unwrap();
    (dir, pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_are_logged_without_their_passwords() {
        assert_eq!(
            redacted_url("postgres://console:hunter2@db.internal:5432/sandbox"),
            "postgres://console:redacted@db.internal:5432/sandbox"
        );
        let shown = redacted_url("postgres://console@db/sandbox?password=hunter2&sslmode=require");
        assert!(
            !shown.contains("hunter2") && shown.contains("sslmode=require"),
            "{shown}"
        );
        assert_eq!(
            redacted_url("sqlite:///var/lib/console/sandbox-console.db"),
            "sqlite:///var/lib/console/sandbox-console.db"
        );
    }

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
