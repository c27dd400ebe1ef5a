//! Admin sessions on top of tower-sessions with the SQLite store.

use serde::{Deserialize, Serialize};
use sqlx::SqlitePool;
use tower_sessions::{
    cookie::SameSite, session::Error as SessionError, Expiry, Session, SessionManagerLayer,
};
use tower_sessions_sqlx_store::SqliteStore;

use crate::{
    model::admin::AdminInfo,
    server::db::{admin_session, admin_user, admin_user::AdminUser},
};

pub const COOKIE_NAME: &str = "sandbox_console_session";
const ADMIN_KEY: &str = "admin";

/// What a session remembers: who signed in, under which password epoch, and its own row in
/// `admin_session` (gone: signed out from another browser).
#[derive(Debug, Serialize, Deserialize)]
struct SessionAdmin {
    id: i64,
    epoch: i64,
    #[serde(default)]
    sid: String,
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

/// Where a sign-in came from, for the admin's list of sessions.
pub struct Client<'a> {
    pub address: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

/// Marks the session as signed in as `user`, under a new session id (no session fixation),
/// and lists it among the admin's sessions.
pub async fn sign_in(
    session: &Session,
    pool: &SqlitePool,
    user: &AdminUser,
    client: Client<'_>,
) -> Result<(), AuthError> {
    use rand::RngCore;
    session.cycle_id().await?;
    let mut bytes = [0u8; 18];
    rand::thread_rng().fill_bytes(&mut bytes);
    let sid: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let user_agent = client
        .user_agent
        .map(|ua| ua.chars().take(200).collect::<String>());
    admin_session::insert(pool, &sid, user.id, client.address, user_agent.as_deref()).await?;
    session
        .insert(
            ADMIN_KEY,
            SessionAdmin {
                id: user.id,
                epoch: user.session_epoch,
                sid,
            },
        )
        .await?;
    Ok(())
}

/// This session's own id among the admin's sessions.
pub async fn session_id(session: &Session) -> Result<Option<String>, AuthError> {
    Ok(session
        .get::<SessionAdmin>(ADMIN_KEY)
        .await?
        .map(|remembered| remembered.sid))
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
    let user = admin_user::find_by_id(pool, remembered.id)
        .await?
        .filter(|user| user.session_epoch == remembered.epoch && user.disabled_at.is_none());
    let listed = match &user {
        Some(user) => admin_session::touch(pool, &remembered.sid, user.id).await?,
        None => false,
    };
    match user {
        Some(user) if listed => Ok(Some(AdminInfo {
            id: user.id,
            username: user.username,
            must_change_password: user.must_change_password,
            theme: user.theme,
            locale: user.locale,
        })),
        _ => {
            session.flush().await?;
            Ok(None)
        }
    }
}

/// Deletes the session record and clears the cookie.
pub async fn sign_out(session: &Session, pool: &SqlitePool) -> Result<(), AuthError> {
    if let Some(sid) = session_id(session).await? {
        admin_session::delete(pool, &sid).await?;
    }
    session.flush().await?;
    Ok(())
}
