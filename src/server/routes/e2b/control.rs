//! E2B's control plane (`E2B_API_URL=http://<console>/e2b`): create (`POST /v2/sandboxes`,
//! answered 201), list, info, kill, set_timeout, connect; pause and resume are refused, as
//! sessions here cannot be paused. Authenticated by `X-API-Key` = one of our API keys.

use std::time::Duration;

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::{json, Value};

use super::{error, ENVD_VERSION, TEMPLATE};
use crate::{
    model::{api_key::Scope, execution::Language},
    sandbox::Error as SandboxError,
    server::{
        auth::api_key::Refusal,
        sessions::{Held, Owner, SessionError},
        state::AppState,
    },
};

/// E2B's default sandbox timeout, when create names none.
const DEFAULT_TIMEOUT_SECS: u64 = 300;

async fn owner(state: &AppState, headers: &HeaderMap) -> Result<Owner, Response> {
    match state.api_keys.authorize(headers, Scope::Execute).await {
        Ok(key) => Ok(Owner {
            key_id: key.id,
            key_name: key.name,
        }),
        Err(Refusal::RateLimited(wait)) => {
            let mut answer = error(
                StatusCode::TOO_MANY_REQUESTS,
                "the API key is over its rate limit",
            );
            retry_after(&mut answer, wait);
            Err(answer)
        }
        Err(Refusal::Unauthenticated(_)) => Err(error(StatusCode::UNAUTHORIZED, "Invalid API key")),
        Err(refusal) => Err(error(refusal.status(), refusal.message())),
    }
}

fn retry_after(answer: &mut Response, wait: Duration) {
    let secs = wait.as_secs().max(1).to_string();
    if let Ok(value) = HeaderValue::from_str(&secs) {
        answer.headers_mut().insert(header::RETRY_AFTER, value);
    }
}

fn sandbox_error(error_: SessionError) -> Response {
    match error_ {
        SessionError::Full(message) => {
            let mut answer = error(StatusCode::TOO_MANY_REQUESTS, message);
            retry_after(&mut answer, Duration::from_secs(10));
            answer
        }
        SessionError::NotFound => error(StatusCode::NOT_FOUND, "sandbox not found"),
        SessionError::Sandbox(SandboxError::Stateless(kind)) => error(
            StatusCode::BAD_REQUEST,
            format!(
                "the active provider ({kind}) runs stateless only: it cannot hold an E2B sandbox"
            ),
        ),
        SessionError::Sandbox(SandboxError::NoActiveProvider | SandboxError::ShuttingDown) => {
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "no sandbox provider can take sandboxes right now",
            )
        }
        SessionError::Sandbox(other) => {
            tracing::warn!(error = %other, "an E2B sandbox could not be created");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the sandbox could not be started",
            )
        }
    }
}

/// The create answer: what the SDK needs to reach the sandbox.
fn created(held: &Held) -> Value {
    json!({
        "templateID": template(held),
        "sandboxID": held.id,
        "clientID": "sandbox-console",
        "envdVersion": ENVD_VERSION,
        "envdAccessToken": held.access_token,
        "trafficAccessToken": null,
        "domain": null,
        "alias": template(held),
    })
}

fn template(held: &Held) -> String {
    held.metadata
        .get("__template")
        .and_then(Value::as_str)
        .unwrap_or(TEMPLATE)
        .to_owned()
}

/// A sandbox in a listing or an info answer.
fn listed(held: &Held) -> Value {
    use crate::server::db::clock;
    let mut metadata = held.metadata.clone();
    metadata.remove("__template");
    json!({
        "templateID": template(held),
        "alias": template(held),
        "sandboxID": held.id,
        "clientID": "sandbox-console",
        "startedAt": clock::before(held.age()),
        "endAt": clock::after(held.remaining()),
        "cpuCount": 1,
        "memoryMB": 0,
        "diskSizeMB": 0,
        "state": "running",
        "envdVersion": ENVD_VERSION,
        "metadata": metadata,
    })
}

/// `Sandbox.create()`: opens a session; 201 with the sandbox's id and envd access token.
#[utoipa::path(post, path = "/e2b/v2/sandboxes", tag = "e2b", operation_id = "e2b_create", request_body(content = String, content_type = "application/json", description = "`{templateID, timeout?, metadata?, envVars?}`"), security(("e2b_key" = ["execute"])), responses((status = 201, description = "`{templateID, sandboxID, clientID, envdVersion, envdAccessToken, trafficAccessToken, domain, alias}`"), (status = 401, description = "`{code: 401, message}`: no key or a wrong one"), (status = 429, description = "Too many sessions (`Retry-After`)")))]
pub async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let owner = match owner(&state, &headers).await {
        Ok(owner) => owner,
        Err(answer) => return answer,
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(Value::Object(request)) => Value::Object(request),
        _ => return error(StatusCode::BAD_REQUEST, "the body must be a JSON object"),
    };
    let timeout = request["timeout"].as_u64().unwrap_or(DEFAULT_TIMEOUT_SECS);
    let mut metadata = super::strings_of(&request["metadata"]);
    if let Some(template) = request["templateID"].as_str() {
        metadata.insert("__template".into(), json!(template));
    }
    match state
        .sessions
        .open(
            &owner,
            Language::Python,
            Some(Duration::from_secs(timeout.max(1))),
            metadata,
        )
        .await
    {
        Ok(held) => (StatusCode::CREATED, Json(created(&held))).into_response(),
        Err(error_) => sandbox_error(error_),
    }
}

/// `Sandbox.list()`: this key's sandboxes (one page; the `metadata` filter is applied).
#[utoipa::path(get, path = "/e2b/v2/sandboxes", tag = "e2b", operation_id = "e2b_list", security(("e2b_key" = ["execute"])), responses((status = 200, description = "This key's sandboxes (the `metadata` filter applies)"), (status = 401, description = "`{code: 401, message}`")))]
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: axum::extract::RawQuery,
) -> Response {
    let owner = match owner(&state, &headers).await {
        Ok(owner) => owner,
        Err(answer) => return answer,
    };
    let wanted = metadata_filter(query.0.as_deref());
    let sandboxes: Vec<Value> = state
        .sessions
        .list(&owner)
        .iter()
        .filter(|held| {
            wanted
                .iter()
                .all(|(k, v)| held.metadata.get(k).and_then(Value::as_str) == Some(v))
        })
        .map(|held| listed(held))
        .collect();
    Json(sandboxes).into_response()
}

/// The `metadata=k%3Dv%26k2%3Dv2` of a listing, as pairs.
fn metadata_filter(query: Option<&str>) -> Vec<(String, String)> {
    let Some(query) = query else {
        return Vec::new();
    };
    url::form_urlencoded::parse(query.as_bytes())
        .filter(|(key, _)| key == "metadata")
        .flat_map(|(_, value)| {
            url::form_urlencoded::parse(value.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

async fn own(
    state: &AppState,
    headers: &HeaderMap,
    id: &str,
) -> Result<std::sync::Arc<Held>, Response> {
    let owner = owner(state, headers).await?;
    state
        .sessions
        .get(&owner, id)
        .map_err(|_| error(StatusCode::NOT_FOUND, format!("sandbox {id} not found")))
}

/// `sbx.get_info()`.
#[utoipa::path(get, path = "/e2b/sandboxes/{id}", tag = "e2b", operation_id = "e2b_info", params(("id" = String, Path, description = "The sandbox")), security(("e2b_key" = ["execute"])), responses((status = 200, description = "The sandbox"), (status = 404, description = "`{code: 404, message}`")))]
pub async fn info(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match own(&state, &headers, &id).await {
        Ok(held) => {
            let mut info = listed(&held);
            info["envdAccessToken"] = json!(held.access_token);
            info["domain"] = Value::Null;
            Json(info).into_response()
        }
        Err(answer) => answer,
    }
}

/// `sbx.kill()`: 204, or 404 when it is gone already.
#[utoipa::path(delete, path = "/e2b/sandboxes/{id}", tag = "e2b", operation_id = "e2b_kill", params(("id" = String, Path, description = "The sandbox")), security(("e2b_key" = ["execute"])), responses((status = 204, description = "Killed"), (status = 404, description = "Gone already")))]
pub async fn kill(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let owner = match owner(&state, &headers).await {
        Ok(owner) => owner,
        Err(answer) => return answer,
    };
    match state.sessions.close(&owner, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => error(StatusCode::NOT_FOUND, format!("sandbox {id} not found")),
    }
}

/// The `timeout` (seconds) of a `{"timeout": s}` body.
fn timeout_of(body: &[u8]) -> Option<u64> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["timeout"].as_u64())
}

/// `sbx.set_timeout(s)`: the sandbox ends `s` seconds from now (within the console's
/// longest lifetime).
#[utoipa::path(post, path = "/e2b/sandboxes/{id}/timeout", tag = "e2b", operation_id = "e2b_set_timeout", request_body(content = String, content_type = "application/json", description = "`{timeout}` in seconds"), params(("id" = String, Path, description = "The sandbox")), security(("e2b_key" = ["execute"])), responses((status = 204, description = "Its end moved to `timeout` seconds from now (within the console's longest lifetime)"), (status = 404, description = "Not found")))]
pub async fn set_timeout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let held = match own(&state, &headers, &id).await {
        Ok(held) => held,
        Err(answer) => return answer,
    };
    let Some(secs) = timeout_of(&body) else {
        return error(StatusCode::BAD_REQUEST, "give {\"timeout\": <seconds>}");
    };
    state.sessions.extend(&held, Duration::from_secs(secs));
    StatusCode::NO_CONTENT.into_response()
}

/// `Sandbox.connect(id)`: the create answer again, for a running sandbox of this key.
#[utoipa::path(post, path = "/e2b/v2/sandboxes/{id}/connect", tag = "e2b", operation_id = "e2b_connect", request_body(content = String, content_type = "application/json", description = "`{timeout?}`"), params(("id" = String, Path, description = "The sandbox")), security(("e2b_key" = ["execute"])), responses((status = 201, description = "The create answer"), (status = 404, description = "Not found")))]
pub async fn connect(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let held = match own(&state, &headers, &id).await {
        Ok(held) => held,
        Err(answer) => return answer,
    };
    if let Some(secs) = timeout_of(&body) {
        state.sessions.extend(&held, Duration::from_secs(secs));
    }
    (StatusCode::CREATED, Json(created(&held))).into_response()
}

/// Pause and resume: refused, plainly (a session here runs until it is killed or times out).
#[utoipa::path(post, path = "/e2b/sandboxes/{id}/pause", tag = "e2b", operation_id = "e2b_pause", params(("id" = String, Path, description = "The sandbox")), security(("e2b_key" = ["execute"])), responses((status = 409, description = "Not supported: a sandbox runs until killed or timed out")))]
pub async fn pause(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(answer) = own(&state, &headers, &id).await {
        return answer;
    }
    error(
        StatusCode::CONFLICT,
        "pause and resume are not supported by sandbox-console: a sandbox runs until it is killed or times out",
    )
}

/// Resume: refused as pause is.
#[utoipa::path(post, path = "/e2b/sandboxes/{id}/resume", tag = "e2b", operation_id = "e2b_resume", params(("id" = String, Path, description = "The sandbox")), security(("e2b_key" = ["execute"])), responses((status = 409, description = "Not supported")))]
pub async fn resume(state: State<AppState>, headers: HeaderMap, id: Path<String>) -> Response {
    pause(state, headers, id).await
}
