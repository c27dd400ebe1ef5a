//! Repository for `admin_session`: one row per signed-in browser, so an admin can list their
//! sessions and sign the others out.

use std::time::Duration;

use sqlx::AnyPool;

use super::clock;

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct SessionRow {
    pub id: String,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: String,
    pub last_seen_at: String,
}

pub async fn insert(
    pool: &AnyPool,
    id: &str,
    admin_id: i64,
    address: Option<&str>,
    user_agent: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into admin_session (id, admin_id, address, user_agent, created_at, last_seen_at) \
         values ($1, $2, $3, $4, $5, $5)",
    )
    .bind(id)
    .bind(admin_id)
    .bind(address)
    .bind(user_agent)
    .bind(clock::now())
    .execute(pool)
    .await?;
    Ok(())
}

/// Whether session `id` of `admin_id` still exists; marks it seen (at most once a minute).
/// Only a stale mark writes, and a write that fails (a database locked past its busy
/// timeout) is logged, not an error: it must never sign anyone out or fail a page.
pub async fn touch(pool: &AnyPool, id: &str, admin_id: i64) -> Result<bool, sqlx::Error> {
    let seen: Option<String> = sqlx::query_scalar(
        "select last_seen_at from admin_session where id = $1 and admin_id = $2",
    )
    .bind(id)
    .bind(admin_id)
    .fetch_optional(pool)
    .await?;
    let stale = seen
        .as_deref()
        .is_some_and(|seen| seen < clock::before(Duration::from_secs(60)).as_str());
    if stale {
        if let Err(error) = sqlx::query("update admin_session set last_seen_at = $1 where id = $2")
            .bind(clock::now())
            .bind(id)
            .execute(pool)
            .await
        {
            tracing::warn!(%error, "could not note when a session was last seen");
        }
    }
    Ok(seen.is_some())
}

/// `admin_id`'s sessions seen within `idle_minutes`, newest first (older rows are deleted).
pub async fn list(
    pool: &AnyPool,
    admin_id: i64,
    idle_minutes: u32,
) -> Result<Vec<SessionRow>, sqlx::Error> {
    let cutoff = clock::before(Duration::from_secs(u64::from(idle_minutes) * 60));
    sqlx::query("delete from admin_session where admin_id = $1 and last_seen_at < $2")
        .bind(admin_id)
        .bind(&cutoff)
        .execute(pool)
        .await?;
    sqlx::query_as(
        "select id, address, user_agent, created_at, last_seen_at from admin_session \
         where admin_id = $1 order by last_seen_at desc, created_at desc",
    )
    .bind(admin_id)
    .fetch_all(pool)
    .await
}

/// Signed-in browsers of every admin, seen within `idle_minutes`: what each Account page
/// lists, counted together (a signed-out or idle session is not one).
pub async fn count_active(pool: &AnyPool, idle_minutes: u32) -> Result<i64, sqlx::Error> {
    let cutoff = clock::before(Duration::from_secs(u64::from(idle_minutes) * 60));
    sqlx::query_scalar("select count(*) from admin_session where last_seen_at >= $1")
        .bind(&cutoff)
        .fetch_one(pool)
        .await
}

/// Deletes `admin_id`'s sessions except `keep` (all of them when `keep` is `None`); returns
/// how many went.
pub async fn delete_others(
    pool: &AnyPool,
    admin_id: i64,
    keep: Option<&str>,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query("delete from admin_session where admin_id = $1 and id <> $2")
        .bind(admin_id)
        .bind(keep.unwrap_or(""))
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

/// Deletes one session row (sign-out).
pub async fn delete(pool: &AnyPool, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("delete from admin_session where id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}
