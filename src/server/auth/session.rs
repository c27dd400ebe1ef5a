//! Admin sessions on top of tower-sessions with the SQLite store.

use serde::{Deserialize, Serialize};
use sqlx::SqlitePool;
use tower_sessions::{
    cookie::SameSite, session::Error as SessionError, Expiry, Session, SessionManagerLayer,
};
use tower_sessions_sqlx_store::SqliteStore;

use crate::{
    model::admin::AdminInfo,
    server::db::{admin_user, admin_user::AdminUser},
};

pub const COOKIE_NAME: &str = "sandbox_console_session";
const ADMIN_KEY: &str = "admin";

/// What a session remembers: who signed in, and under which password epoch.
#[derive(Debug, Serialize, Deserialize)]
struct SessionAdmin {
    id: i64,
    epoch: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("session store: {0}")]
    Session(#[from] SessionError),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

/// The session layer: `HttpOnly`, `SameSite=Strict`, `Secure` when configured, idle expiry.
pub fn layer(
    store: SqliteStore,
    secure: bool,
    idle_minutes: u32,
) -> SessionManagerLayer<SqliteStore> {
    SessionManagerLayer::new(store)
        .with_name(COOKIE_NAME)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_secure(secure)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(time::Duration::minutes(i64::from(
            idle_minutes,
        ))))
}

/// Marks the session as signed in as `user`, under a new session id (no session fixation).
pub async fn sign_in(session: &Session, user: &AdminUser) -> Result<(), AuthError> {
    session.cycle_id().await?;
    session
        .insert(
            ADMIN_KEY,
            SessionAdmin {
                id: user.id,
                epoch: user.session_epoch,
            },
        )
        .await?;
    Ok(())
}

/// The admin this session belongs to, if it is signed in, the account still exists and its
/// password was not reset since. A void session is deleted on the spot.
pub async fn signed_in_admin(
    session: &Session,
    pool: &SqlitePool,
) -> Result<Option<AdminInfo>, AuthError> {
    let Some(remembered) = session.get::<SessionAdmin>(ADMIN_KEY).await? else {
        return Ok(None);
    };
    match admin_user::find_by_id(pool, remembered.id).await? {
        Some(user) if user.session_epoch == remembered.epoch => Ok(Some(AdminInfo {
            id: user.id,
            username: user.username,
        })),
        _ => {
            session.flush().await?;
            Ok(None)
        }
    }
}

/// Deletes the session record and clears the cookie.
pub async fn sign_out(session: &Session) -> Result<(), AuthError> {
    session.flush().await?;
    Ok(())
}
