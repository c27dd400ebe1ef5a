//! `/metrics` (an admin session or an `admin` key on the main address; open on
//! `--metrics-listen`) and the middleware that counts every routed request.

use std::time::Instant;

use axum::{
    extract::{MatchedPath, Request, State},
    http::{header, HeaderMap, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    Extension,
};

use crate::{
    model::{admin::AdminInfo, api_key::Scope},
    server::state::AppState,
};

/// Counts every routed request (static files and 404s are not routes).
pub async fn track_http(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.http_request(
        &method,
        route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

fn exposition(state: &AppState) -> Response {
    if let Some((kind, provider)) = state.sandbox.active() {
        if let Some(pool) = provider.pool_state() {
            state.metrics.set_pool(&kind, &pool);
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

/// `GET /metrics` on the main address: an admin session or an `admin` key.
#[tracing::instrument(name = "GET /metrics", skip_all)]
pub async fn metrics(
    State(state): State<AppState>,
    admin: Option<Extension<AdminInfo>>,
    headers: HeaderMap,
) -> Response {
    if admin.is_none() {
        if let Err(refusal) = state.api_keys.authorize(&headers, Scope::Admin).await {
            return (refusal.status(), refusal.message()).into_response();
        }
    }
    exposition(&state)
}

/// `GET /metrics` on `--metrics-listen`: no auth; only this route is served there.
pub async fn open_metrics(State(state): State<AppState>) -> Response {
    exposition(&state)
}

pub async fn not_found() -> StatusCode {
    StatusCode::NOT_FOUND
}
