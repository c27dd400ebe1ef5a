//! Builds the application: database, migrations, first admin, router, listener.
//! `main` and the tests both go through `Application::build`.

use std::{
    future::Future,
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use anyhow::Context;
use axum::Router;
use leptos::config::{Env, LeptosOptions};
use tokio::{net::TcpListener, task::JoinHandle};

use crate::{
    sandbox::providers,
    server::{
        auth::{
            account,
            api_key::ApiKeys,
            origin::OriginPolicy,
            password,
            rate_limit::{SharedLoginLimiter, SignInLimits},
            session,
        },
        config::Config,
        db, descriptors,
        environments::EnvironmentService,
        history,
        metrics::Metrics,
        routes::{self, admission::PageAdmission},
        sandbox::SandboxService,
        secrets::SecretBox,
        serve::{self, Limits},
        state::AppState,
    },
};

pub struct Application {
    listener: TcpListener,
    /// `--metrics-listen`: `/metrics` without authentication, nothing else.
    metrics_listener: Option<TcpListener>,
    router: Router,
    state: AppState,
    housekeeping: JoinHandle<()>,
    limits: Limits,
    /// After a stop signal: how long runs and requests get before they are cancelled.
    grace: Duration,
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_registry(config, providers::registry()).await
    }

    /// `build` with the given providers; tests add fakes of SaaS providers this way.
    pub async fn build_with_registry(
        config: Config,
        registry: crate::sandbox::registry::Registry,
    ) -> anyhow::Result<Self> {
        let url = config.database_url();
        require_shared_secret_key(&config)?;
        let run_dir = config.run_dir.clone().unwrap_or_default();
        if !run_dir.as_os_str().is_empty() {
            std::fs::create_dir_all(&run_dir)
                .with_context(|| format!("cannot create the run folder {}", run_dir.display()))?;
        }
        let registry = registry.update_context(|context| context.run_dir = run_dir);
        let descriptors = descriptors::raise_descriptor_limit();
        let pool = open_database(&config).await?;

        if let Some(first) = account::ensure_first_admin(
            &pool,
            &config.admin_username,
            config.admin_password.as_deref(),
        )
        .await
        .context("cannot create the first administrator")?
        {
            announce_first_admin(&first, &config);
        }
        password::warm_up().await;
        let secrets = SecretBox::load(&config.data_dir, config.secret_key.as_deref())
            .context("cannot load the key that encrypts stored secrets")?;
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let local_addr = listener.local_addr()?;
        let origin = OriginPolicy::new(config.public_url.as_deref(), local_addr)
            .map_err(anyhow::Error::msg)?;
        if origin.trusts_host_header() {
            tracing::warn!(
                "listening on a wildcard address without --public-url: the Origin check takes \
                 the host from each request; set --public-url to the address browsers use"
            );
        }
        let limits = Limits {
            header_read: Duration::from_secs(config.header_read_timeout_secs.max(1)),
            idle: Duration::from_secs(config.idle_timeout_secs.max(1)),
            body_stall: Duration::from_secs(config.stall_timeout_secs.max(1)),
            body_total: Duration::from_secs(config.body_timeout_secs.max(1)),
            max_connections: descriptors::effective_max_connections(
                config.max_connections,
                descriptors,
            ),
            max_per_address: config.max_connections_per_address.max(1),
            // Runs are cancelled at the grace; their answers (and the rest) get a little more.
            drain: Duration::from_secs(config.shutdown_grace_secs) + DRAIN_AFTER_GRACE,
            trusted_proxies: config.trusted_proxies.clone().into(),
        };
        if limits.max_connections < config.max_connections {
            tracing::warn!(
                configured = config.max_connections,
                effective = limits.max_connections,
                descriptors,
                "the open-files limit caps the connections served at once"
            );
        }
        let metrics_listener = match config.metrics_listen {
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address} for metrics"))?,
            ),
            None => None,
        };

        let metrics = Arc::new(Metrics::new());
        let console = console_addresses(local_addr, metrics_listener.as_ref());
        let environments = Arc::new(
            EnvironmentService::for_config(pool.clone(), &config, &registry, console.clone())
                .await
                .context("cannot load the package environments")?,
        );
        let sandbox = Arc::new(
            SandboxService::start_with(
                pool.clone(),
                registry,
                secrets.clone(),
                Some(environments.catalog()),
                console,
            )
            .await
            .context("cannot load the sandbox settings")?
            .with_metrics(metrics.clone())
            .with_replica(&config.history_replica(false))
            .with_history_spool(config.data_dir.join(HISTORY_SPOOL))
            .with_warm_up(),
        );
        environments.set_verifier(sandbox.clone());
        environments.keep_collecting(Duration::from_secs(300));
        if config.build_default_environment {
            match environments.build_default_if_needed().await {
                Ok(Some(build)) => tracing::info!(
                    build,
                    "building the default environment in the background; runs use the bare \
                     interpreter until it is ready"
                ),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot start building the default environment")
                }
            }
        }

        let env = match std::env::var("LEPTOS_ENV").as_deref() {
            Ok("DEV" | "dev" | "development") => Env::DEV,
            _ => Env::PROD,
        };
        let leptos_options = LeptosOptions::builder()
            .output_name("sandbox-console")
            .site_root("target/site")
            .site_pkg_dir("pkg")
            .site_addr(local_addr)
            .env(env)
            .build();
        let state = AppState {
            database_file: (db::Backend::of_url(&url) == Some(db::Backend::Sqlite))
                .then(|| db::sqlite_file(&url))
                .flatten(),
            pool: pool.clone(),
            leptos_options,
            login_limiter: Arc::new({
                let rule = config.login.limiter();
                match db::Backend::of(&pool) {
                    db::Backend::Sqlite => SignInLimits::Memory(rule),
                    db::Backend::Postgres => {
                        SignInLimits::Shared(SharedLoginLimiter::new(rule, pool.clone()))
                    }
                }
            }),
            api_keys: Arc::new(ApiKeys::new(pool.clone(), config.api_rate_limit)),
            metrics,
            sessions: {
                let sessions = crate::server::sessions::SandboxSessions::new(
                    sandbox.clone(),
                    config.sandbox_sessions.clone(),
                );
                sessions.keep_reaping();
                sessions
            },
            sandbox,
            environments,
            origin: Arc::new(origin),
            secrets,
            started: (Instant::now(), SystemTime::now()),
            session_idle_minutes: config.session_idle_minutes,
            replica: config.replica().into(),
        };

        let store = session::Store::open(&url, 4).await.with_context(|| {
            format!(
                "cannot open the session store on {}",
                db::redacted_url(&url)
            )
        })?;
        let sessions = session::layer(store, config.secure_cookies, config.session_idle_minutes);
        let admission = PageAdmission::new(
            config.max_page_requests,
            Duration::from_secs(config.page_queue_secs.max(1)),
            state.metrics.clone(),
        );
        let router = routes::router(
            state.clone(),
            config.api_max_body_bytes,
            sessions,
            admission,
        );
        let every = Duration::from_secs(config.housekeeping_secs.max(1));
        let replica: Arc<str> = state.replica.clone();
        let housekeeping = tokio::spawn(async move {
            tokio::join!(
                each_round(pool.clone(), "sweep", every, replica.clone(), sweep_expired),
                each_round(pool, "retention", every, replica, history::apply_retention),
            );
        });
        Ok(Self {
            listener,
            metrics_listener,
            router,
            state,
            housekeeping,
            limits,
            grace: Duration::from_secs(config.shutdown_grace_secs),
        })
    }

    pub fn port(&self) -> u16 {
        self.local_addr().port()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Where `--metrics-listen` serves `/metrics`, if it was asked for.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until SIGINT or SIGTERM, then finishes in-flight requests and closes the database.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    pub async fn run_until(
        self,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let Self {
            listener,
            metrics_listener,
            router,
            state,
            housekeeping,
            limits,
            grace,
        } = self;
        // At the stop signal the listener closes; runs in flight get `grace`, then they are
        // cancelled (sandboxes killed and removed, history rows written), so their requests
        // answer and the drain ends.
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async move {
            stop.await;
            let _ = stopping_tx.send(());
        };
        let runs = {
            let sandbox = state.sandbox.clone();
            let sessions = state.sessions.clone();
            tokio::spawn(async move {
                if stopping_rx.await.is_ok() {
                    // Sessions end at once: their cells answer, and their sandboxes go.
                    sessions.close_all().await;
                    let cancelled = sandbox.finish_runs(grace).await;
                    if cancelled > 0 {
                        tracing::warn!(cancelled, "runs cancelled at shutdown");
                    }
                }
            })
        };
        let metrics_server = metrics_listener.map(|listener| {
            let router = routes::metrics_only(state.clone());
            let limits = limits.clone();
            tokio::spawn(async move {
                let forever = std::future::pending();
                if let Err(error) = serve::serve(listener, router, limits, forever).await {
                    tracing::error!(%error, "the metrics listener stopped");
                }
            })
        });
        let result = serve::serve(listener, router, limits, stop).await;
        housekeeping.abort();
        runs.abort();
        state.sessions.close_all().await;
        state.sandbox.shutdown().await;
        if let Some(server) = metrics_server {
            server.abort();
        }
        // Connections still held by requests cut off after the drain would keep close() waiting.
        if tokio::time::timeout(Duration::from_secs(5), state.pool.close())
            .await
            .is_err()
        {
            tracing::warn!("the database pool did not close within 5 s");
        }
        tracing::info!("stopped");
        result
    }
}

/// Replicas on one PostgreSQL database (and commands run against it) must all open the
/// secrets any of them sealed: a key file per data directory would give each its own.
pub fn require_shared_secret_key(config: &Config) -> anyhow::Result<()> {
    let url = config.database_url();
    if db::Backend::of_url(&url) == Some(db::Backend::Postgres) && config.secret_key.is_none() {
        anyhow::bail!(
            "with a PostgreSQL database, set SANDBOX_CONSOLE_SECRET_KEY (32 random bytes, \
             base64, e.g. `openssl rand -base64 32`) to the same value on every replica and \
             command: it encrypts the provider secrets they share"
        );
    }
    Ok(())
}

/// After the shutdown grace, requests get this much longer to write their answers (a
/// cancelled run's 503, a page) before their connections are closed.
const DRAIN_AFTER_GRACE: Duration = Duration::from_secs(5);

/// Creates the data directory (0700) and the database (0600: it holds live session ids; its
/// `-wal`/`-shm` files take the same mode from it), opens it and applies pending migrations.
pub async fn open_database(config: &Config) -> anyhow::Result<sqlx::AnyPool> {
    db::private_data_dir(&config.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            config.data_dir.display()
        )
    })?;
    let url = config.database_url();
    let pool = db::connect_with(&url, config.database_connections)
        .await
        .with_context(|| format!("cannot open the database {}", db::redacted_url(&url)))?;
    db::migrate(&pool)
        .await
        .context("cannot apply the database migrations")?;
    Ok(pool)
}

fn announce_first_admin(first: &account::FirstAdmin, config: &Config) {
    match &first.generated_password {
        Some(password) => {
            let rule = "=".repeat(72);
            // Name the binary as it was started (e.g. ./target/debug/sandbox-console under `make run`).
            let program = std::env::args()
                .next()
                .unwrap_or_else(|| "sandbox-console".to_owned());
            // The reset hint names this console's own database, wherever it is run from.
            let store = match &config.database_url {
                Some(url) => format!("--database-url '{}'", db::redacted_url(url)),
                None => format!("--data-dir '{}'", config.data_dir.display()),
            };
            println!(
                "{rule}\n  First start: created the administrator '{user}'.\n  One-time password: {password}\n  \
                 It is shown only now, and must be changed at the first sign-in.\n  \
                 To set one from a shell instead:\n    {program} {store} admin reset-password --username {user}\n{rule}",
                user = first.username
            );
        }
        None => {
            tracing::info!(username = %first.username, "created the first administrator with the password from ADMIN_PASSWORD")
        }
    }
}

/// Sign-in events the audit keeps (the newest).
const KEEP_SIGN_INS: i64 = 100_000;

/// Runs `job` now and then every `every`, in each round on whichever replica claims the round
/// in `background_job` first: N replicas on one database run it once a round, not N times.
async fn each_round<Job, Done>(
    pool: sqlx::AnyPool,
    name: &'static str,
    every: Duration,
    replica: Arc<str>,
    job: Job,
) where
    Job: Fn(sqlx::AnyPool) -> Done,
    Done: std::future::Future<Output = ()>,
{
    let mut ticks = tokio::time::interval(every);
    // A replica whose clock ticks a little early must still find the next round free.
    let round = every.mul_f64(0.9);
    loop {
        ticks.tick().await;
        match db::background_job::claim(&pool, name, round, &replica).await {
            Ok(true) => job(pool.clone()).await,
            Ok(false) => tracing::debug!(job = name, "another replica ran this round"),
            Err(error) => tracing::warn!(%error, job = name, "could not claim a background job"),
        }
    }
}

/// Deletes expired sessions, trial artifacts and API request counts, and trims the sign-in
/// events (a background job).
async fn sweep_expired(pool: sqlx::AnyPool) {
    match db::delete_expired_sessions(&pool).await {
        Ok(0) => {}
        Ok(n) => tracing::debug!(n, "deleted expired sessions"),
        Err(error) => tracing::warn!(%error, "could not delete expired sessions"),
    }
    match db::artifact::delete_expired(&pool).await {
        Ok(0) => {}
        Ok(n) => tracing::debug!(n, "deleted expired artifacts"),
        Err(error) => tracing::warn!(%error, "could not delete expired artifacts"),
    }
    match db::settings_audit::trim_sign_ins(&pool, KEEP_SIGN_INS).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(n, "trimmed old sign-in events from the audit"),
        Err(error) => tracing::warn!(%error, "could not trim the sign-in events"),
    }
    match db::api_key::forget_old_requests(&pool).await {
        Ok(0) => {}
        Ok(n) => tracing::debug!(n, "forgot API requests older than a minute"),
        Err(error) => tracing::warn!(%error, "could not forget old API requests"),
    }
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}

/// The history spool's folder in the data directory.
pub const HISTORY_SPOOL: &str = "history-spool";

/// Where this console listens (the main address and the metrics one), for the providers:
/// sandboxes on an allow-list never reach them.
fn console_addresses(main: SocketAddr, metrics: Option<&TcpListener>) -> Vec<SocketAddr> {
    let mut addresses = vec![main];
    addresses.extend(metrics.and_then(|m| m.local_addr().ok()));
    addresses
}
