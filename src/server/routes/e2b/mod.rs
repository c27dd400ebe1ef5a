//! E2B compatibility: the unmodified E2B SDKs (`e2b`, `e2b-code-interpreter`) drive sessions
//! with `E2B_API_URL=http://<console>/e2b` and `E2B_SANDBOX_URL=http://<console>/e2b/sandbox`.
//! The contract is what the SDK 2.63 sends on the wire (research notes,
//! `e2b-sdk-wire-2026-12-06.md`): the control plane ([`control`]), and one address for every
//! sandbox, which the `E2b-Sandbox-Id` header names: the code interpreter ([`interpreter`]),
//! envd's files ([`envd`]) and its Connect RPCs ([`connect`]).
//!
//! An E2B sandbox is one of our sessions. The control plane takes one of our API keys
//! (`X-API-Key`, the `execute` scope) and sees only that key's sessions; sandbox calls carry the
//! session's own access token (`X-Access-Token`, from the create answer) except where the SDK
//! sends none (`/contexts`, `/health`): there the sandbox id, 128 random bits that only its
//! creator is told, names it.

mod connect;
mod control;
mod envd;
mod interpreter;

use std::sync::Arc;

use axum::{
    extract::DefaultBodyLimit,
    http::{HeaderMap, StatusCode},
    middleware,
    response::{IntoResponse, Response},
    routing::{any, delete, get, post},
    Json, Router,
};
use serde_json::json;

use crate::server::{routes::metrics, sessions::Held, state::AppState};

/// The envd version the sessions claim: 0.6.4 turns on what the SDK 2.63 uses.
pub const ENVD_VERSION: &str = "0.6.4";
/// The one template: a Python code interpreter.
pub const TEMPLATE: &str = "code-interpreter-v1";

/// An error as E2B's APIs answer one: JSON with `code` and `message` (without both the SDK
/// raises a raw KeyError instead of its own exception).
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({ "code": status.as_u16(), "message": message.into() });
    (status, Json(body)).into_response()
}

/// A sandbox call refused before it reached the sandbox.
pub(crate) struct Refused(StatusCode, &'static str);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

/// The session a sandbox call names, and whether it carried the session's token (when
/// `token` is required). A gone or unknown sandbox is E2B's 502: "not running".
pub(crate) fn sandbox(
    state: &AppState,
    headers: &HeaderMap,
    token: bool,
) -> Result<Arc<Held>, Refused> {
    let id = headers
        .get("e2b-sandbox-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(held) = state.sessions.by_id(id) else {
        return Err(Refused(
            StatusCode::BAD_GATEWAY,
            "The sandbox was not found: it was killed, timed out, or never existed",
        ));
    };
    if token {
        let presented = headers
            .get("x-access-token")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !constant_time_eq(presented.as_bytes(), held.access_token.as_bytes()) {
            return Err(Refused(
                StatusCode::UNAUTHORIZED,
                "the sandbox's access token is missing or wrong",
            ));
        }
    }
    Ok(held)
}

/// The string-valued entries of a JSON object (E2B's `metadata`, a command's `envs`); others
/// are dropped.
pub(crate) fn strings_of(value: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, v)| v.is_string())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// E2B's routes in the API's OpenAPI document (E2B's own contract, as served here).
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    control::create,
    control::list,
    control::info,
    control::kill,
    control::set_timeout,
    control::connect,
    control::pause,
    control::resume,
    interpreter::execute,
    interpreter::create_context,
    interpreter::list_contexts,
    interpreter::restart_context,
    interpreter::remove_context,
    envd::health,
    envd::read,
    envd::write,
    connect::rpc,
))]
pub struct E2bDoc;

/// E2B's routes, under `/e2b` (the API URL) and `/e2b/sandbox` (the sandbox URL).
pub fn router(state: AppState, max_body_bytes: usize) -> Router {
    Router::new()
        .route(
            "/e2b/v2/sandboxes",
            post(control::create).get(control::list),
        )
        .route("/e2b/v2/sandboxes/{id}/connect", post(control::connect))
        .route(
            "/e2b/sandboxes/{id}",
            get(control::info).delete(control::kill),
        )
        .route("/e2b/sandboxes/{id}/timeout", post(control::set_timeout))
        .route("/e2b/sandboxes/{id}/pause", post(control::pause))
        .route("/e2b/sandboxes/{id}/resume", post(control::resume))
        .route("/e2b/sandbox/execute", post(interpreter::execute))
        .route(
            "/e2b/sandbox/contexts",
            post(interpreter::create_context).get(interpreter::list_contexts),
        )
        .route(
            "/e2b/sandbox/contexts/{id}",
            delete(interpreter::remove_context),
        )
        .route(
            "/e2b/sandbox/contexts/{id}/restart",
            post(interpreter::restart_context),
        )
        .route("/e2b/sandbox/health", get(envd::health))
        .route("/e2b/sandbox/files", get(envd::read).post(envd::write))
        .route("/e2b/sandbox/{service}/{method}", post(connect::rpc))
        .route("/e2b/{*rest}", any(not_found))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track_http,
        ))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "this E2B call is not served by sandbox-console (see the README's E2B section)",
    )
}
