//! Administrator accounts: creating them, resetting passwords, and the first admin on start-up.

use sqlx::AnyPool;

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
    pool: &AnyPool,
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
    pool: &AnyPool,
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
    pool: &AnyPool,
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
    let user = match create_admin(pool, username, chosen).await {
        Ok(user) => user,
        // Another replica on the same database made it first (and showed its password).
        Err(AccountError::Exists(_)) => return Ok(None),
        Err(error) => return Err(error),
    };
    // A generated password has been shown in a terminal and a log: it lasts one sign-in.
    if generated_password.is_some() {
        admin_user::require_password_change(pool, user.id).await?;
    }
    Ok(Some(FirstAdmin {
        username: user.username,
        generated_password,
    }))
}

/// Changes `id`'s own password after checking the current one. Every other session of the
/// account is signed out (the caller signs this one in again).
pub async fn change_password(
    pool: &AnyPool,
    id: i64,
    current: String,
    new: String,
) -> Result<AdminUser, ChangeError> {
    let user = admin_user::find_by_id(pool, id)
        .await?
        .ok_or(ChangeError::Gone)?;
    if !password::verify(Some(user.password_hash.clone()), current).await? {
        return Err(ChangeError::WrongCurrent);
    }
    if password::verify(Some(user.password_hash.clone()), new.clone()).await? {
        return Err(ChangeError::Same);
    }
    let hash = password::hash(new).await?;
    admin_user::set_password_of(pool, id, &hash, false).await?;
    admin_user::find_by_id(pool, id)
        .await?
        .ok_or(ChangeError::Gone)
}

/// Gives `id` a generated password, shown once to the admin who asked; it must be changed at
/// the next sign-in, and every session of the account is signed out.
pub async fn reset_to_generated(pool: &AnyPool, id: i64) -> Result<String, AccountError> {
    let generated = password::generate();
    let hash = password::hash(generated.clone()).await?;
    if admin_user::set_password_of(pool, id, &hash, true).await? {
        Ok(generated)
    } else {
        Err(AccountError::NotFound(id.to_string()))
    }
}

/// Adds an administrator with a generated password (shown once; changed at first sign-in).
pub async fn add_with_generated(
    pool: &AnyPool,
    username: &str,
) -> Result<(AdminUser, String), AccountError> {
    let generated = password::generate();
    let user = create_admin(pool, username, generated.clone()).await?;
    admin_user::require_password_change(pool, user.id).await?;
    Ok((user, generated))
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("The current password is not right.")]
    WrongCurrent,
    #[error("The new password is the one you have: choose another.")]
    Same,
    #[error("the account no longer exists")]
    Gone,
    #[error(transparent)]
    Password(#[from] PasswordError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}
