//! State shared by every handler and server function.

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Instant, SystemTime},
};

use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use sqlx::AnyPool;
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

use crate::{
    model::overview::SystemOverview,
    server::{
        auth::{api_key::ApiKeys, origin::OriginPolicy, rate_limit::SignInLimits},
        db,
        metrics::Metrics,
        sandbox::SandboxService,
        secrets::SecretBox,
    },
};

#[derive(Clone, Debug)]
pub struct AppState {
    pub pool: AnyPool,
    pub leptos_options: LeptosOptions,
    pub login_limiter: Arc<SignInLimits>,
    /// API keys, with their scopes and per-key rate limit.
    pub api_keys: Arc<ApiKeys>,
    pub sandbox: Arc<SandboxService>,
    /// Sandbox sessions held for API keys.
    pub sessions: Arc<crate::server::sessions::SandboxSessions>,
    /// Package environments: specs, builds, the store.
    pub environments: Arc<crate::server::environments::EnvironmentService>,
    pub metrics: Arc<Metrics>,
    /// Where state-changing browser requests may come from.
    pub origin: Arc<OriginPolicy>,
    /// Seals what must not sit in the database in clear (provider secrets, a one-time key
    /// waiting in a session).
    pub secrets: SecretBox,
    /// The SQLite file, watched by `/readyz`; `None` for in-memory databases and PostgreSQL.
    pub database_file: Option<PathBuf>,
    pub started: (Instant, SystemTime),
    /// This console's name among replicas on one database.
    pub replica: Arc<str>,
    /// Sessions idle this long are signed out (and no longer listed on the Account page).
    pub session_idle_minutes: u32,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl AppState {
    pub async fn overview(&self) -> Result<SystemOverview, sqlx::Error> {
        let database = match (db::Backend::of(&self.pool), &self.database_file) {
            (db::Backend::Sqlite, Some(file)) => format!("SQLite ({})", file.display()),
            (db::Backend::Sqlite, None) => "SQLite (in memory)".to_owned(),
            (db::Backend::Postgres, _) => {
                let url = &self.pool.connect_options().database_url;
                format!(
                    "PostgreSQL ({}{})",
                    url.host_str().unwrap_or("local socket"),
                    url.path()
                )
            }
        };
        let started_at = OffsetDateTime::from(self.started.1)
            .replace_nanosecond(0)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
            .format(&Rfc3339)
            .unwrap_or_default();
        Ok(SystemOverview {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            database,
            admin_count: db::admin_user::count(&self.pool).await?,
            active_sessions: db::admin_session::count_active(&self.pool, self.session_idle_minutes)
                .await?,
            started_at,
            uptime_secs: self.started.0.elapsed().as_secs(),
            history_backlog: self.sandbox.history_backlog() as u64,
            sandbox_sessions: self.sessions.all().len() as u64,
        })
    }
}
