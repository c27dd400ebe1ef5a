//! Admin sessions on top of tower-sessions, stored in the console's database (SQLite or
//! PostgreSQL, the same `session` table the migrations create): a session made on one
//! replica is valid on all of them.

use serde::{Deserialize, Serialize};
use sqlx::AnyPool;
use tower_sessions::{
    cookie::SameSite, session::Error as SessionError, Expiry, Session, SessionManagerLayer,
};
use tower_sessions::{
    session::{Id, Record},
    session_store, SessionStore,
};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

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

/// The session store on the console's database: tower-sessions-sqlx-store's own store for
/// each database, over its own small pool (the store needs a typed pool; the console's other
/// queries go through sqlx's Any driver).
#[derive(Clone, Debug)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Store {
    /// Opens the store on the database `url` names, with at most `connections` connections.
    pub async fn open(url: &str, connections: u32) -> Result<Self, sqlx::Error> {
        use std::{str::FromStr, time::Duration};
        let connections = connections.max(1);
        match crate::server::db::Backend::of_url(url) {
            Some(crate::server::db::Backend::Postgres) => {
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(connections)
                    .acquire_timeout(Duration::from_secs(5))
                    .connect_with(sqlx::postgres::PgConnectOptions::from_str(url)?)
                    .await?;
                // The table the migrations made lives in the connection's current schema.
                let schema: String = sqlx::query_scalar("select current_schema()")
                    .fetch_one(&pool)
                    .await?;
                let store = PostgresStore::new(pool)
                    .with_schema_name(&schema)
                    .and_then(|store| store.with_table_name(crate::server::db::SESSION_TABLE))
                    .map_err(|why| sqlx::Error::Configuration(why.into()))?;
                Ok(Store::Postgres(store))
            }
            _ => {
                let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)?
                    .busy_timeout(Duration::from_secs(5));
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(connections)
                    .acquire_timeout(Duration::from_secs(5))
                    .connect_with(options)
                    .await?;
                let store = SqliteStore::new(pool)
                    .with_table_name(crate::server::db::SESSION_TABLE)
                    .map_err(|why| sqlx::Error::Configuration(why.into()))?;
                Ok(Store::Sqlite(store))
            }
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for Store {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            Store::Sqlite(store) => store.create(record).await,
            Store::Postgres(store) => store.create(record).await,
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            Store::Sqlite(store) => store.save(record).await,
            Store::Postgres(store) => store.save(record).await,
        }
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            Store::Sqlite(store) => store.load(id).await,
            Store::Postgres(store) => store.load(id).await,
        }
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            Store::Sqlite(store) => store.delete(id).await,
            Store::Postgres(store) => store.delete(id).await,
        }
    }
}

/// The session layer: `HttpOnly`, `SameSite=Strict`, `Secure` when configured, idle expiry.
pub fn layer(store: Store, secure: bool, idle_minutes: u32) -> SessionManagerLayer<Store> {
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
    pool: &AnyPool,
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
    pool: &AnyPool,
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
pub async fn sign_out(session: &Session, pool: &AnyPool) -> Result<(), AuthError> {
    if let Some(sid) = session_id(session).await? {
        admin_session::delete(pool, &sid).await?;
    }
    session.flush().await?;
    Ok(())
}
