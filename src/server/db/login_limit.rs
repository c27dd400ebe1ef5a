//! Repository for `login_failure` and `login_known`: the sign-in limits' memory when
//! replicas share the database (see `auth::rate_limit::SharedLoginLimiter`).

use sqlx::AnyConnection;

/// Forgets failures older than `since_ms` (Unix milliseconds).
pub async fn forget_before(conn: &mut AnyConnection, since_ms: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query("delete from login_failure where at_ms <= $1")
        .bind(since_ms)
        .execute(conn)
        .await?
        .rows_affected())
}

/// The failures counted against `keys`, oldest first: (key, Unix milliseconds).
pub async fn failures(
    conn: &mut AnyConnection,
    keys: &[String],
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let list = (1..=keys.len())
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql =
        format!("select key, at_ms from login_failure where key in ({list}) order by at_ms, id");
    let mut query = sqlx::query_as(&sql);
    for key in keys {
        query = query.bind(key);
    }
    query.fetch_all(conn).await
}

/// Counts a failure against `key` at `at_ms`; its id, to take it back.
pub async fn record(conn: &mut AnyConnection, key: &str, at_ms: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("insert into login_failure (key, at_ms) values ($1, $2) returning id")
        .bind(key)
        .bind(at_ms)
        .fetch_one(conn)
        .await
}

/// Takes back the failures `ids`.
pub async fn take_back(conn: &mut AnyConnection, ids: &[i64]) -> Result<(), sqlx::Error> {
    for id in ids {
        sqlx::query("delete from login_failure where id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Moves the failures `ids` to `at_ms`: an attempt counted when it began is timed from when
/// it was known to have failed.
pub async fn restamp(conn: &mut AnyConnection, ids: &[i64], at_ms: i64) -> Result<(), sqlx::Error> {
    for id in ids {
        sqlx::query("update login_failure set at_ms = $1 where id = $2")
            .bind(at_ms)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Forgets every failure counted against `key`.
pub async fn forgive(conn: &mut AnyConnection, key: &str) -> Result<(), sqlx::Error> {
    sqlx::query("delete from login_failure where key = $1")
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}

/// Whether `account` signed in from `address` after `since_ms`.
pub async fn is_known(
    conn: &mut AnyConnection,
    account: &str,
    address: &str,
    since_ms: i64,
) -> Result<bool, sqlx::Error> {
    let found: Option<i64> = sqlx::query_scalar(
        "select at_ms from login_known where account = $1 and address = $2 and at_ms > $3",
    )
    .bind(account)
    .bind(address)
    .bind(since_ms)
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// Remembers that `account` signed in from `address` at `at_ms`, keeping the newest `keep`
/// addresses of the account.
pub async fn remember(
    conn: &mut AnyConnection,
    account: &str,
    address: &str,
    at_ms: i64,
    keep: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into login_known (account, address, at_ms) values ($1, $2, $3) \
         on conflict (account, address) do update set at_ms = excluded.at_ms",
    )
    .bind(account)
    .bind(address)
    .bind(at_ms)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "delete from login_known where account = $1 and at_ms < coalesce( \
         (select at_ms from login_known where account = $1 order by at_ms desc limit 1 offset $2), 0)",
    )
    .bind(account)
    .bind(keep - 1)
    .execute(conn)
    .await?;
    Ok(())
}
