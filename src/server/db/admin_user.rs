//! Repository for `admin_user`: the people who may sign in to the console.

use sqlx::AnyPool;

use super::clock;

#[derive(Clone, sqlx::FromRow)]
pub struct AdminUser {
    pub id: i64,
    pub username: String,
    pub password_hash: String,
    /// Bumped on every password reset; sessions made under an older epoch are void.
    pub session_epoch: i64,
    /// A generated password (first start, reset by another admin) waits to be replaced.
    #[sqlx(try_from = "super::Flag")]
    pub must_change_password: bool,
    /// Set while the account is disabled: it cannot sign in.
    pub disabled_at: Option<String>,
    /// `auto`, `light` or `dark`.
    pub theme: String,
    /// `auto` (the browser's Accept-Language), `en` or `zh-CN`.
    pub locale: String,
}

/// An administrator as the Administrators page lists them.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct AdminRow {
    pub id: i64,
    pub username: String,
    #[sqlx(try_from = "super::Flag")]
    pub must_change_password: bool,
    pub disabled_at: Option<String>,
    pub last_login_at: Option<String>,
    pub created_at: String,
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

const COLUMNS: &str =
    "id, username, password_hash, session_epoch, must_change_password, disabled_at, theme, locale";

pub async fn count(pool: &AnyPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select count(*) from admin_user")
        .fetch_one(pool)
        .await
}

/// Looks a user up by name, ignoring case.
pub async fn find_by_username(
    pool: &AnyPool,
    username: &str,
) -> Result<Option<AdminUser>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {COLUMNS} from admin_user where lower(username) = lower($1)"
    ))
    .bind(username)
    .fetch_optional(pool)
    .await
}

pub async fn find_by_id(pool: &AnyPool, id: i64) -> Result<Option<AdminUser>, sqlx::Error> {
    sqlx::query_as(&format!("select {COLUMNS} from admin_user where id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Inserts a user; a name that exists already (in any case) is `Ok(None)`.
pub async fn insert(
    pool: &AnyPool,
    username: &str,
    password_hash: &str,
) -> Result<Option<AdminUser>, sqlx::Error> {
    // Committed explicitly: a `returning` row read in autocommit mode is no proof that the
    // write was committed (sqlx#2099).
    let mut tx = pool.begin().await?;
    let user = sqlx::query_as(&format!(
        "insert into admin_user (username, password_hash) values ($1, $2) \
         on conflict do nothing returning {COLUMNS}"
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
    pool: &AnyPool,
    username: &str,
    password_hash: &str,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "update admin_user set password_hash = $1, must_change_password = 0, session_epoch = session_epoch + 1, \
         updated_at = $2 where lower(username) = lower($3)",
    )
    .bind(password_hash)
    .bind(clock::now())
    .bind(username)
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub async fn record_login(pool: &AnyPool, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("update admin_user set last_login_at = $1 where id = $2")
        .bind(clock::now())
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Every administrator, by name.
pub async fn list(pool: &AnyPool) -> Result<Vec<AdminRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, username, must_change_password, disabled_at, last_login_at, created_at \
         from admin_user order by username",
    )
    .fetch_all(pool)
    .await
}

/// Replaces `id`'s password hash, voids every session made before, and says whether the new
/// password must be changed at the next sign-in (a generated one). `false` when no such user.
pub async fn set_password_of(
    pool: &AnyPool,
    id: i64,
    password_hash: &str,
    must_change: bool,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "update admin_user set password_hash = $1, must_change_password = $2, \
         session_epoch = session_epoch + 1, updated_at = $3 where id = $4",
    )
    .bind(password_hash)
    .bind(i64::from(must_change))
    .bind(clock::now())
    .bind(id)
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// The next password `id` signs in with must be replaced first (a generated one).
pub async fn require_password_change(pool: &AnyPool, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("update admin_user set must_change_password = 1 where id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Disables (`true`) or enables an account; disabling voids its sessions. `false` when no
/// such user.
pub async fn set_disabled(pool: &AnyPool, id: i64, disabled: bool) -> Result<bool, sqlx::Error> {
    let result = if disabled {
        sqlx::query(
            "update admin_user set disabled_at = $1, session_epoch = session_epoch + 1 where id = $2",
        )
        .bind(clock::now())
    } else {
        sqlx::query("update admin_user set disabled_at = null where id = $1")
    }
    .bind(id)
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Stores `id`'s theme choice (`auto`, `light` or `dark`).
pub async fn set_theme(pool: &AnyPool, id: i64, theme: &str) -> Result<(), sqlx::Error> {
    sqlx::query("update admin_user set theme = $1 where id = $2")
        .bind(theme)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Stores `id`'s language choice (`auto`, `en` or `zh-CN`).
pub async fn set_locale(pool: &AnyPool, id: i64, locale: &str) -> Result<(), sqlx::Error> {
    sqlx::query("update admin_user set locale = $1 where id = $2")
        .bind(locale)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}
