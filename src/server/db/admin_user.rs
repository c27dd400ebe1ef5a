//! Repository for `admin_user`: the people who may sign in to the console.

use sqlx::SqlitePool;

#[derive(Clone, sqlx::FromRow)]
pub struct AdminUser {
    pub id: i64,
    pub username: String,
    pub password_hash: String,
    /// Bumped on every password reset; sessions made under an older epoch are void.
    pub session_epoch: i64,
}

impl std::fmt::Debug for AdminUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminUser")
            .field("id", &self.id)
            .field("username", &self.username)
            .field("session_epoch", &self.session_epoch)
            .finish_non_exhaustive()
    }
}

const COLUMNS: &str = "id, username, password_hash, session_epoch";

pub async fn count(pool: &SqlitePool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select count(*) from admin_user")
        .fetch_one(pool)
        .await
}

/// Looks a user up by name, ignoring case.
pub async fn find_by_username(
    pool: &SqlitePool,
    username: &str,
) -> Result<Option<AdminUser>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {COLUMNS} from admin_user where username = ?"
    ))
    .bind(username)
    .fetch_optional(pool)
    .await
}

pub async fn find_by_id(pool: &SqlitePool, id: i64) -> Result<Option<AdminUser>, sqlx::Error> {
    sqlx::query_as(&format!("select {COLUMNS} from admin_user where id = ?"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Inserts a user; a name that exists already (in any case) is `Ok(None)`.
pub async fn insert(
    pool: &SqlitePool,
    username: &str,
    password_hash: &str,
) -> Result<Option<AdminUser>, sqlx::Error> {
    // Committed explicitly: a `returning` row read in autocommit mode is no proof that the
    // write was committed (sqlx#2099).
    let mut tx = pool.begin().await?;
    let user = sqlx::query_as(&format!(
        "insert into admin_user (username, password_hash) values (?, ?) \
         on conflict (username) do nothing returning {COLUMNS}"
    ))
    .bind(username)
    .bind(password_hash)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(user)
}

/// Replaces the password hash and voids every existing session. `false` when no such user.
pub async fn set_password(
    pool: &SqlitePool,
    username: &str,
    password_hash: &str,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "update admin_user set password_hash = ?, session_epoch = session_epoch + 1, \
         updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') where username = ?",
    )
    .bind(password_hash)
    .bind(username)
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub async fn record_login(pool: &SqlitePool, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update admin_user set last_login_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') where id = ?",
    )
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}
