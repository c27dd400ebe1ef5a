//! Administrator accounts: creating them, resetting passwords, and the first admin on start-up.

use sqlx::SqlitePool;

use crate::server::{
    auth::password::{self, PasswordError},
    db::{admin_user, admin_user::AdminUser},
};

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("invalid username {0:?}: use 1 to 64 letters, digits, '.', '_', '-' or '@'")]
    InvalidUsername(String),
    #[error(transparent)]
    Password(#[from] PasswordError),
    #[error("an administrator named {0:?} already exists")]
    Exists(String),
    #[error("there is no administrator named {0:?}")]
    NotFound(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

pub fn validate_username(username: &str) -> Result<(), AccountError> {
    let ok = (1..=64).contains(&username.len())
        && username
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    if ok {
        Ok(())
    } else {
        Err(AccountError::InvalidUsername(username.to_owned()))
    }
}

/// Creates an administrator. Usernames are stored in lower case and compared without case.
pub async fn create_admin(
    pool: &SqlitePool,
    username: &str,
    password: String,
) -> Result<AdminUser, AccountError> {
    let username = username.trim().to_lowercase();
    validate_username(&username)?;
    let hash = password::hash(password).await?;
    admin_user::insert(pool, &username, &hash)
        .await?
        .ok_or(AccountError::Exists(username))
}

/// Sets a new password and signs the administrator out of every session.
pub async fn reset_password(
    pool: &SqlitePool,
    username: &str,
    password: String,
) -> Result<(), AccountError> {
    let username = username.trim().to_lowercase();
    let hash = password::hash(password).await?;
    if admin_user::set_password(pool, &username, &hash).await? {
        Ok(())
    } else {
        Err(AccountError::NotFound(username))
    }
}

/// The administrator made on a first start, and the password to show if it was generated.
pub struct FirstAdmin {
    pub username: String,
    pub generated_password: Option<String>,
}

/// Creates the first administrator when there is none yet.
pub async fn ensure_first_admin(
    pool: &SqlitePool,
    username: &str,
    password: Option<&str>,
) -> Result<Option<FirstAdmin>, AccountError> {
    if admin_user::count(pool).await? > 0 {
        return Ok(None);
    }
    let generated_password = password.is_none().then(password::generate);
    let chosen = password
        .map(str::to_owned)
        .or_else(|| generated_password.clone())
        .unwrap_or_default();
    let user = create_admin(pool, username, chosen).await?;
    Ok(Some(FirstAdmin {
        username: user.username,
        generated_password,
    }))
}
