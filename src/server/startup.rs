//! Builds the application: database, migrations, first admin, router, listener.
//! `main` and the tests both go through `Application::build`.

use std::{
    future::Future,
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use anyhow::Context;
use axum::{
    extract::{Request, State},
    http::{header, HeaderValue},
    middleware,
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use leptos::{
    config::{Env, LeptosOptions},
    prelude::provide_context,
};
use leptos_axum::{generate_route_list, LeptosRoutes};
use tokio::{net::TcpListener, task::JoinHandle};
use tower_http::{
    compression::CompressionLayer, set_header::SetResponseHeaderLayer, trace::TraceLayer,
};
use tower_sessions_sqlx_store::SqliteStore;

use crate::{
    app::{shell, App},
    sandbox::providers,
    server::{
        api::{self, auth::ApiLimiter},
        assets,
        auth::{account, gate::gate, password, rate_limit::LoginLimiter, routes, session},
        config::Config,
        db, health, history,
        metrics::{self, Metrics},
        sandbox_settings::SandboxService,
        secrets::SecretBox,
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
        let pool = open_database(&config).await?;

        if let Some(first) = account::ensure_first_admin(
            &pool,
            &config.admin_username,
            config.admin_password.as_deref(),
        )
        .await
        .context("cannot create the first administrator")?
        {
            announce_first_admin(&first);
        }
        password::warm_up().await;
        let secrets = SecretBox::load(&config.data_dir, config.secret_key.as_deref())
            .context("cannot load the key that encrypts stored secrets")?;
        let metrics = Arc::new(Metrics::new());
        let sandbox = SandboxService::start(pool.clone(), registry, secrets)
            .await
            .context("cannot load the sandbox settings")?
            .with_metrics(metrics.clone())
            .with_warm_up();

        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let local_addr = listener.local_addr()?;
        let metrics_listener = match config.metrics_listen {
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address} for metrics"))?,
            ),
            None => None,
        };

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
            database_file: db::sqlite_file(&url),
            pool: pool.clone(),
            leptos_options,
            login_limiter: Arc::new(LoginLimiter::new(
                config.login_max_failures,
                config.login_max_failures_per_address,
                Duration::from_secs(config.login_window_secs),
            )),
            api_limiter: Arc::new(ApiLimiter::new(config.api_rate_limit)),
            metrics,
            sandbox: Arc::new(sandbox),
            started: (Instant::now(), SystemTime::now()),
        };

        let store = SqliteStore::new(pool.clone())
            .with_table_name(db::SESSION_TABLE)
            .map_err(anyhow::Error::msg)?;
        let sessions = session::layer(store, config.secure_cookies, config.session_idle_minutes);
        let router = router(state.clone(), config.api_max_body_bytes).layer(sessions);
        let housekeeping = tokio::spawn(async move {
            tokio::join!(
                sweep_expired_sessions(pool.clone()),
                history::keep_trimmed(pool, Duration::from_secs(600)),
            );
        });
        Ok(Self {
            listener,
            metrics_listener,
            router: add_outer_layers(router),
            state,
            housekeeping,
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
        } = self;
        let metrics_server = metrics_listener.map(|listener| {
            let router = Router::new()
                .route("/metrics", get(metrics::open_metrics))
                .fallback(metrics::not_found)
                .with_state(state.clone());
            tokio::spawn(async move {
                if let Err(error) = axum::serve(listener, router).await {
                    tracing::error!(%error, "the metrics listener stopped");
                }
            })
        });
        let service = router.into_make_service_with_connect_info::<SocketAddr>();
        let result = axum::serve(listener, service)
            .with_graceful_shutdown(stop)
            .await;
        housekeeping.abort();
        state.sandbox.shutdown().await;
        if let Some(server) = metrics_server {
            server.abort();
        }
        state.pool.close().await;
        tracing::info!("stopped");
        result
    }
}

/// Creates the data directory, opens the database and applies pending migrations.
pub async fn open_database(config: &Config) -> anyhow::Result<sqlx::SqlitePool> {
    std::fs::create_dir_all(&config.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            config.data_dir.display()
        )
    })?;
    let url = config.database_url();
    let pool = db::connect(&url)
        .await
        .with_context(|| format!("cannot open the database {url}"))?;
    db::migrate(&pool)
        .await
        .context("cannot apply the database migrations")?;
    Ok(pool)
}

fn router(state: AppState, api_max_body_bytes: usize) -> Router<()> {
    let routes = generate_route_list(App);
    let context = {
        let state = state.clone();
        move || provide_context(state.clone())
    };
    let page = {
        let options = state.leptos_options.clone();
        move || shell(options.clone())
    };
    let (api, _) = api::routes(api_max_body_bytes);
    Router::new()
        .merge(api)
        .route("/readyz", get(health::readyz))
        .route("/admin/history/export.csv", get(history::export_csv))
        .route("/admin/history/export.json", get(history::export_json))
        .route("/metrics", get(metrics::metrics))
        .route("/auth/login", post(routes::login))
        .route("/auth/logout", post(routes::logout))
        .leptos_routes_with_context(&state, routes, context, page)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track_http,
        ))
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(state.clone(), gate))
        .with_state(state)
}

fn add_outer_layers(router: Router) -> Router {
    router
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
}

/// Static files first; anything else renders the app, whose router shows the 404 page.
async fn fallback(State(state): State<AppState>, request: Request) -> Response {
    if let Some(file) = assets::serve(request.uri().path(), request.headers()) {
        return file;
    }
    if api::owns(request.uri().path()) {
        return api::not_found().await.into_response();
    }
    let options = state.leptos_options.clone();
    let render = leptos_axum::render_app_async_with_context(
        move || provide_context(state.clone()),
        move || shell(options.clone()),
    );
    render(request).await.into_response()
}

fn announce_first_admin(first: &account::FirstAdmin) {
    match &first.generated_password {
        Some(password) => {
            let rule = "=".repeat(72);
            // Name the binary as it was started (e.g. ./target/debug/sandbox-console under `make run`).
            let program = std::env::args()
                .next()
                .unwrap_or_else(|| "sandbox-console".to_owned());
            println!(
                "{rule}\n  First start: created the administrator '{user}'.\n  One-time password: {password}\n  \
                 It is shown only now. Set your own with:\n    {program} admin reset-password --username {user}\n{rule}",
                user = first.username
            );
        }
        None => {
            tracing::info!(username = %first.username, "created the first administrator with the password from ADMIN_PASSWORD")
        }
    }
}

async fn sweep_expired_sessions(pool: sqlx::SqlitePool) {
    let mut every = tokio::time::interval(Duration::from_secs(600));
    loop {
        every.tick().await;
        match db::delete_expired_sessions(&pool).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(n, "deleted expired sessions"),
            Err(error) => tracing::warn!(%error, "could not delete expired sessions"),
        }
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
