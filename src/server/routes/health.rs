//! Probes for orchestrators: `/healthz` (the process answers) and `/readyz` (it can serve).

use axum::{extract::State, http::StatusCode, response::IntoResponse, Json};
use serde_json::json;

use crate::server::{db, state::AppState};

pub async fn healthz() -> impl IntoResponse {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    match db::ping(&state.pool, state.database_file.as_deref()).await {
        Ok(()) => (
            StatusCode::OK,
            Json(json!({ "status": "ready", "database": "ok" })),
        ),
        Err(error) => {
            tracing::warn!(%error, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "database": error })),
            )
        }
    }
}
