//! Probes for orchestrators: `/healthz` (the process answers) and `/readyz` (it can serve).

use axum::{extract::State, http::StatusCode, response::IntoResponse, Json};
use serde_json::json;

use crate::server::{db, state::AppState};

pub async fn healthz() -> impl IntoResponse {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    // Rows the database refused and that wait in the spool: reported in every answer; not a
    // reason of their own to send traffic elsewhere (none is lost; they are written as the
    // database takes them).
    let backlog = state.sandbox.history_backlog();
    if let Err(error) = db::ping(&state.pool, state.database_file.as_deref()).await {
        tracing::warn!(%error, "readiness check failed");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "unavailable", "database": error,
                         "history_backlog": backlog })),
        );
    }
    // A replica whose key cannot open the stored secrets would fail every run of those
    // providers: it is not ready.
    if let Err(error) = state.sandbox.stored_secrets_open().await {
        tracing::warn!(%error, "readiness check failed");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(
                json!({ "status": "unavailable", "database": "ok", "secret_key": error,
                         "history_backlog": backlog }),
            ),
        );
    }
    (
        StatusCode::OK,
        Json(
            json!({ "status": "ready", "database": "ok", "secret_key": "ok",
                     "history_backlog": backlog }),
        ),
    )
}
