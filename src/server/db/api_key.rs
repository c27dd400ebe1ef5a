//! Repository for `api_key`: keys are stored as SHA-256 hashes, looked up by hash.

use rand::{rngs::OsRng, RngCore};
use sqlx::AnyPool;
use std::time::Duration;

use super::clock;

use crate::model::api_key::{ApiKeyInfo, CreatedKey, Scope};

/// Every key starts with this, so leaked keys are easy to recognise (and to scan for).
pub const KEY_PREFIX: &str = "sck_";
/// How much of a key the list shows.
const SHOWN_CHARS: usize = KEY_PREFIX.len() + 8;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("a live key named {0:?} exists already; revoke it first or choose another name")]
    NameTaken(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    name: String,
    prefix: String,
    scopes: String,
    created_by: String,
    created_at: String,
    last_used_at: Option<String>,
    revoked_at: Option<String>,
    expires_at: Option<String>,
    last_used_address: Option<String>,
}

impl From<Row> for ApiKeyInfo {
    fn from(row: Row) -> Self {
        ApiKeyInfo {
            id: row.id,
            name: row.name,
            prefix: row.prefix,
            scopes: serde_json::from_str(&row.scopes).unwrap_or_default(),
            created_by: row.created_by,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
            revoked_at: row.revoked_at,
            expires_at: row.expires_at,
            last_used_address: row.last_used_address,
        }
    }
}

const COLUMNS: &str =
    "id, name, prefix, scopes, created_by, created_at, last_used_at, revoked_at, \
                       expires_at, last_used_address";

pub fn hash(key: &str) -> String {
    super::execution::sha256(key)
}

fn generate() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 30];
    OsRng.fill_bytes(&mut bytes);
    format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// Creates a key; the returned `key` is never stored and cannot be shown again.
pub async fn create(
    pool: &AnyPool,
    name: &str,
    scopes: &[Scope],
    created_by: &str,
    expires_in_days: Option<u32>,
) -> Result<CreatedKey, KeyError> {
    let key = generate();
    let mut scopes = scopes.to_vec();
    scopes.sort();
    scopes.dedup();
    // An explicit transaction: a `returning` row read in autocommit mode is no proof that
    // the write was committed (sqlx#2099); the commit's own result is.
    let row: Result<Row, sqlx::Error> = async {
        let mut tx = pool.begin().await?;
        let row = sqlx::query_as(&format!(
            "insert into api_key (name, prefix, key_hash, scopes, created_by, expires_at) \
             values ($1, $2, $3, $4, $5, $6) returning {COLUMNS}"
        ))
        .bind(name)
        .bind(&key[..SHOWN_CHARS])
        .bind(hash(&key))
        .bind(serde_json::to_string(&scopes).unwrap_or_else(|_| "[]".into()))
        .bind(created_by)
        .bind(
            expires_in_days.map(|days| clock::after(Duration::from_secs(u64::from(days) * 86_400))),
        )
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }
    .await;
    match row {
        Ok(row) => Ok(CreatedKey {
            info: row.into(),
            key,
        }),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            Err(KeyError::NameTaken(name.to_owned()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Every key, live ones first, newest first.
pub async fn list(pool: &AnyPool) -> Result<Vec<ApiKeyInfo>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "select {COLUMNS} from api_key order by revoked_at is not null, id desc"
    ))
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Revokes a live key; `None` when there is no live key with this id.
pub async fn revoke(pool: &AnyPool, id: i64) -> Result<Option<ApiKeyInfo>, sqlx::Error> {
    // Committed explicitly: see `create`.
    let mut tx = pool.begin().await?;
    let row: Option<Row> = sqlx::query_as(&format!(
        "update api_key set revoked_at = $1, updated_at = $1 \
         where id = $2 and revoked_at is null returning {COLUMNS}"
    ))
    .bind(clock::now())
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.map(Into::into))
}

/// The live (not revoked, not expired) key `key` is, if any; records its use and the client
/// address it came from (at most once a minute, to spare writes).
pub async fn authenticate(
    pool: &AnyPool,
    key: &str,
    address: Option<&str>,
) -> Result<Option<ApiKeyInfo>, sqlx::Error> {
    if !key.starts_with(KEY_PREFIX) {
        return Ok(None);
    }
    // Timestamps are fixed-width UTC text, so text comparison orders them.
    let found: Option<Row> = sqlx::query_as(&format!(
        "select {COLUMNS} from api_key where key_hash = $1 and revoked_at is null \
         and (expires_at is null or expires_at > $2)"
    ))
    .bind(hash(key))
    .bind(clock::now())
    .fetch_optional(pool)
    .await?;
    let Some(row) = found else {
        return Ok(None);
    };
    let minute_ago = clock::before(Duration::from_secs(60));
    let stale = row
        .last_used_at
        .as_deref()
        .is_none_or(|used| used < minute_ago.as_str());
    if stale {
        // Only a note of when the key was last used: a database that cannot take it (full,
        // locked past the busy timeout) must not refuse a valid key.
        if let Err(error) = sqlx::query(
            "update api_key set last_used_at = $1, \
             last_used_address = coalesce($2, last_used_address) where id = $3",
        )
        .bind(clock::now())
        .bind(address)
        .bind(row.id)
        .execute(pool)
        .await
        {
            tracing::warn!(%error, key = %row.name, "could not record an API key's last use");
        }
    }
    Ok(Some(row.into()))
}

/// How long the API rate limit looks back.
pub const RATE_WINDOW: Duration = Duration::from_secs(60);

/// Counts one request of key `key_id` against `per_minute` in a sliding minute shared by
/// every replica on this database: `Ok(Err(wait))` when the key has used up its minute (the
/// request is then not counted). Requests of one key are counted one at a time (an advisory
/// lock per key on PostgreSQL, the write lock on SQLite), so replicas never both take the
/// last slot; the key's requests older than the minute are forgotten on the way.
pub async fn count_request(
    pool: &AnyPool,
    key_id: i64,
    per_minute: u32,
) -> Result<Result<(), Duration>, sqlx::Error> {
    let now = clock::unix_millis();
    let since = now - RATE_WINDOW.as_millis() as i64;
    let mut tx = match super::Backend::of(pool) {
        super::Backend::Sqlite => super::begin_write(pool).await?,
        super::Backend::Postgres => {
            let mut tx = pool.begin().await?;
            sqlx::query("select pg_advisory_xact_lock($1, $2)")
                .bind(super::lock::RATE_CLASS)
                .bind((key_id & 0x7fff_ffff) as i32)
                .execute(&mut *tx)
                .await?;
            tx
        }
    };
    sqlx::query("delete from api_request where key_id = $1 and at_ms <= $2")
        .bind(key_id)
        .bind(since)
        .execute(&mut *tx)
        .await?;
    let (count, oldest): (i64, Option<i64>) =
        sqlx::query_as("select count(*), min(at_ms) from api_request where key_id = $1")
            .bind(key_id)
            .fetch_one(&mut *tx)
            .await?;
    if count >= i64::from(per_minute) {
        tx.commit().await?;
        let waited = Duration::from_millis((now - oldest.unwrap_or(now)).max(0) as u64);
        return Ok(Err(RATE_WINDOW.saturating_sub(waited)));
    }
    sqlx::query("insert into api_request (key_id, at_ms) values ($1, $2)")
        .bind(key_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Ok(()))
}

/// Forgets counted requests older than the rate limit's minute (a background job).
pub async fn forget_old_requests(pool: &AnyPool) -> Result<u64, sqlx::Error> {
    let since = clock::unix_millis() - RATE_WINDOW.as_millis() as i64;
    Ok(sqlx::query("delete from api_request where at_ms <= $1")
        .bind(since)
        .execute(pool)
        .await?
        .rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_long_random_and_hash_to_hex() {
        let (a, b) = (generate(), generate());
        assert_ne!(a, b);
        assert!(
            a.starts_with(KEY_PREFIX) && a.len() == KEY_PREFIX.len() + 40,
            "{a}"
        );
        assert_eq!(hash("x").len(), 64);
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// The count replicas share: each key has its own minute, a refused request is not
    /// counted, and the wait runs to when the oldest request leaves the minute.
    #[tokio::test]
    async fn requests_counted_in_the_database_are_limited_per_key_and_minute() {
        let (_dir, pool) = crate::server::db::scratch().await;

        assert!(count_request(&pool, 1, 2).await.unwrap().is_ok());
        assert!(count_request(&pool, 1, 2).await.unwrap().is_ok());
        let wait = count_request(&pool, 1, 2).await.unwrap().unwrap_err();
        assert!(
            wait > Duration::from_secs(55) && wait <= RATE_WINDOW,
            "{wait:?}"
        );
        assert!(
            count_request(&pool, 2, 2).await.unwrap().is_ok(),
            "another key"
        );
        let counted: i64 = sqlx::query_scalar("select count(*) from api_request where key_id = 1")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(counted, 2, "the refused request is not counted");

        // A minute later the requests are forgotten.
        sqlx::query("update api_request set at_ms = at_ms - 61000")
            .execute(&pool)
            .await
            .unwrap();
        assert!(count_request(&pool, 1, 2).await.unwrap().is_ok());
        assert_eq!(
            forget_old_requests(&pool).await.unwrap(),
            1,
            "key 2's request"
        );
    }
}
