//! The doors: every HTTP handler and middleware that is not a Leptos page or server function.
//! They read requests, call services with plain values, and translate the answers; only
//! files under this folder (plus `startup`, `serve` and `state`) may touch axum.

pub mod admission;
pub mod api;
pub mod artifacts;
pub mod assets;
pub mod auth;
pub mod e2b;
pub mod exports;
pub mod gate;
pub mod headers;
pub mod health;
pub mod metrics;
pub mod rpc;

use axum::{
    extract::{Request, State},
    http::{header, HeaderValue},
    middleware,
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::{
    compression::CompressionLayer, set_header::SetResponseHeaderLayer, trace::TraceLayer,
};
use tower_sessions::SessionManagerLayer;

use self::admission::PageAdmission;
use crate::{
    app::{shell, App},
    server::state::AppState,
};

/// Every route of the main address: the pages behind their middleware (the gate, sessions,
/// page admission), the API beside them behind its own (`api::router`), and the headers
/// every answer carries.
pub fn router(
    state: AppState,
    api_max_body_bytes: usize,
    sessions: SessionManagerLayer<crate::server::auth::session::Store>,
    admission: PageAdmission,
) -> Router {
    let api = api::router(state.clone(), api_max_body_bytes, sessions.clone());
    let e2b = e2b::router(state.clone(), api_max_body_bytes)
        .layer(middleware::from_fn_with_state(state.clone(), api::guard));
    let pages = routes(state, api_max_body_bytes)
        .layer(sessions)
        .layer(middleware::from_fn_with_state(admission, admission::admit))
        .layer(middleware::from_fn(headers::explain_empty_errors));
    add_outer_layers(pages.merge(api).merge(e2b))
}

/// `--metrics-listen`: `/metrics` without authentication, nothing else.
pub fn metrics_only(state: AppState) -> Router {
    add_outer_layers(
        Router::new()
            .route("/metrics", get(metrics::open_metrics))
            .fallback(metrics::not_found)
            .with_state(state),
    )
}

fn routes(state: AppState, api_max_body_bytes: usize) -> Router<()> {
    let routes = generate_route_list(App);
    let context = {
        let state = state.clone();
        move || provide_request_context(state.clone())
    };
    let page = {
        let options = state.leptos_options.clone();
        move || shell(options.clone())
    };
    Router::new()
        .route("/readyz", get(health::readyz))
        .route("/admin/history/export.csv", get(exports::export_csv))
        .route("/admin/history/export.json", get(exports::export_json))
        .route("/admin/audit/export.csv", get(exports::export_audit_csv))
        .route("/admin/artifacts/{id}", get(artifacts::download))
        .route("/metrics", get(metrics::metrics))
        .route("/auth/login", post(auth::login))
        .route("/auth/logout", post(auth::logout))
        .leptos_routes_with_context(&state, routes, context, page)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track_http,
        ))
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(
            rpc::RpcLimit(api_max_body_bytes),
            rpc::guard,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), gate::gate))
        .with_state(state)
}

/// What every Leptos render and server function finds in its context: the state, and the
/// request's CSP nonce (which `HydrationScripts` and the resource scripts then carry).
fn provide_request_context(state: AppState) {
    provide_context(state);
    let nonce = leptos::prelude::use_context::<http::request::Parts>()
        .as_ref()
        .and_then(headers::request_nonce);
    if let Some(nonce) = nonce {
        provide_context(nonce);
    }
}

fn add_outer_layers(router: Router) -> Router {
    router
        .layer(middleware::from_fn(headers::content_security_policy))
        .layer(middleware::from_fn(headers::no_store_by_default))
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
    let options = state.leptos_options.clone();
    let render = leptos_axum::render_app_async_with_context(
        move || provide_request_context(state.clone()),
        move || shell(options.clone()),
    );
    render(request).await.into_response()
}
