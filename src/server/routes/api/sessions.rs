//! Sandbox sessions over REST (`/api/v1/sessions`, the `execute` scope): open one, run cells
//! in it with state kept (answered as JSON, or streamed as NDJSON or server-sent events while
//! the cell runs), interrupt a cell, close it. A key sees only its own sessions. Files and
//! commands are in `session_files`.

use std::time::Duration;

use axum::{
    body::Body,
    extract::{Path, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::error::ApiError;
use crate::{
    model::{
        api_key::Scope,
        execution::{ExecRequest, Language},
    },
    sandbox::session::{CellEvent, CellOutcome},
    server::{
        db::execution::{Caller, Source},
        sessions::{Held, Owner, SessionError},
        state::AppState,
    },
};

/// The key behind the request, as the owner of sessions.
pub(super) async fn owner(state: &AppState, headers: &HeaderMap) -> Result<Owner, ApiError> {
    let key = state.api_keys.authorize(headers, Scope::Execute).await?;
    Ok(Owner {
        key_id: key.id,
        key_name: key.name,
    })
}

impl From<SessionError> for ApiError {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::Full(message) => {
                let mut full = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "sessions_full", message);
                full.retry_after = Some(Duration::from_secs(10));
                full
            }
            SessionError::NotFound => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such session (it may have been closed, reaped when idle, or belong to another key)",
            ),
            SessionError::Sandbox(error) => error.into(),
        }
    }
}

/// What the API says of a session.
pub(super) fn describe(held: &Held) -> Value {
    json!({
        "id": held.id,
        "language": held.language,
        "provider": held.provider,
        "created_at": held.created_at,
        "age_secs": held.age().as_secs(),
        "idle_secs": held.idle().as_secs(),
        "remaining_secs": held.remaining().as_secs(),
        "cells": held.cells(),
        "alive": held.session.alive(),
    })
}

/// A session to open.
#[derive(Deserialize, ToSchema)]
pub struct OpenSession {
    /// `python` (the default) or `javascript`.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "python")]
    language: Option<Language>,
    /// Seconds it may live, within the console's longest lifetime (the default).
    #[serde(default)]
    lifetime_secs: Option<u64>,
}

/// Open a session on the active provider.
#[utoipa::path(post, path = "/api/v1/sessions", tag = "sessions", operation_id = "open_session",
    request_body = OpenSession, security(("api_key" = ["execute"])),
    responses(
        (status = 201, description = "`{id, language, provider, created_at, age_secs, idle_secs, remaining_secs, cells, alive}`"),
        (status = 400, description = "A language the provider does not run"),
        (status = 401, description = "No key, or an unknown or revoked one"),
        (status = 409, description = "The active provider runs stateless only"),
        (status = 429, description = "Too many sessions open, for this key or in all (`Retry-After`)"),
    ))]
pub async fn open(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Json<OpenSession>,
) -> Result<Response, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state
        .sessions
        .open(
            &owner,
            body.language.unwrap_or(Language::Python),
            body.lifetime_secs.map(Duration::from_secs),
            Default::default(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(describe(&held))).into_response())
}

/// This key's open sessions.
#[utoipa::path(get, path = "/api/v1/sessions", tag = "sessions", operation_id = "list_sessions",
    security(("api_key" = ["execute"])),
    responses((status = 200, description = "`{sessions: [...]}`"), (status = 401, description = "No key")))]
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let owner = owner(&state, &headers).await?;
    let sessions: Vec<Value> = state
        .sessions
        .list(&owner)
        .iter()
        .map(|h| describe(h))
        .collect();
    Ok(Json(json!({ "sessions": sessions })))
}

/// One of this key's sessions.
#[utoipa::path(get, path = "/api/v1/sessions/{id}", tag = "sessions", operation_id = "get_session",
    params(("id" = String, Path, description = "The session")),
    security(("api_key" = ["execute"])),
    responses((status = 200, description = "The session"), (status = 404, description = "Not this key's, or gone")))]
pub async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    Ok(Json(describe(&held)))
}

/// Close a session: its sandbox and everything in it are gone.
#[utoipa::path(delete, path = "/api/v1/sessions/{id}", tag = "sessions", operation_id = "close_session",
    params(("id" = String, Path, description = "The session")),
    security(("api_key" = ["execute"])),
    responses((status = 204, description = "Closed"), (status = 404, description = "Not this key's, or gone")))]
pub async fn close(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&state, &headers).await?;
    state.sessions.close(&owner, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Interrupt the session's running cell (as Ctrl-C): it ends with the exception.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/interrupt", tag = "sessions", operation_id = "interrupt_session",
    params(("id" = String, Path, description = "The session")),
    security(("api_key" = ["execute"])),
    responses((status = 204, description = "Interrupted"), (status = 404, description = "Not this key's, or gone")))]
pub async fn interrupt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    held.session.interrupt().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A cell to run.
#[derive(Deserialize, ToSchema)]
pub struct RunCell {
    code: String,
    /// Seconds, 1..600, within the provider's run time limit (its default).
    #[serde(default)]
    timeout: Option<u32>,
}

/// A finished cell as JSON.
pub(super) fn outcome_json(outcome: &CellOutcome) -> Value {
    let results: Vec<&CellEvent> = outcome
        .events
        .iter()
        .filter(|e| matches!(e, CellEvent::Result { .. }))
        .collect();
    let error = outcome
        .events
        .iter()
        .find(|e| matches!(e, CellEvent::Error { .. }));
    json!({
        "status": outcome.status,
        "execution_count": outcome.execution_count,
        "stdout": outcome.text(false),
        "stderr": outcome.text(true),
        "results": results,
        "error": error,
        "wall_time_ms": outcome.wall_time_ms,
        "session_ended": outcome.session_ended,
    })
}

/// How the caller wants the answer.
#[derive(Clone, Copy, PartialEq)]
enum Framing {
    Json,
    Ndjson,
    Sse,
}

fn framing(headers: &HeaderMap) -> Framing {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if accept.contains("application/x-ndjson") {
        Framing::Ndjson
    } else if accept.contains("text/event-stream") {
        Framing::Sse
    } else {
        Framing::Json
    }
}

fn frame(framing: Framing, value: &Value) -> Bytes {
    match framing {
        Framing::Sse => Bytes::from(format!("data: {value}\n\n")),
        _ => Bytes::from(format!("{value}\n")),
    }
}

/// Run a cell: its variables, imports and files stay for the next one.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/execute", tag = "sessions", operation_id = "execute_in_session",
    params(("id" = String, Path, description = "The session")),
    request_body = RunCell, security(("api_key" = ["execute"])),
    responses(
        (status = 200, description = "`{status, execution_count, stdout, stderr, results, error, wall_time_ms, session_ended}`; with `Accept: application/x-ndjson` (or `text/event-stream`), the events as they come (`stdout`, `stderr`, `result`, `error`), then `{type: \"end\", ...}` with the same fields"),
        (status = 400, description = "Code over 1 MiB or a timeout outside 1..600"),
        (status = 404, description = "Not this key's, or gone"),
    ))]
pub async fn execute(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Json<RunCell>,
) -> Result<Response, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    ExecRequest {
        language: held.language,
        code: body.code.clone(),
        arguments: Default::default(),
        timeout_secs: body.timeout,
    }
    .check()
    .map_err(|problem| ApiError::invalid(problem.to_string()))?;
    let caller = Caller::api_key(&owner.key_name, Source::Session);
    let framing = framing(&headers);
    if framing == Framing::Json {
        let outcome = state
            .sessions
            .run_cell(&held, &caller, "default", &body.code, body.timeout, None)
            .await?;
        return Ok(Json(outcome_json(&outcome)).into_response());
    }
    let (sink, events) = mpsc::channel::<CellEvent>(64);
    let sessions = state.sessions.clone();
    let (code, timeout) = (body.code.clone(), body.timeout);
    let cell = tokio::spawn(async move {
        sessions
            .run_cell(&held, &caller, "default", &code, timeout, Some(sink))
            .await
    });
    Ok(stream_cell(framing, events, cell))
}

/// The cell's events as they come, then its end (or why it failed).
fn stream_cell(
    framing: Framing,
    events: mpsc::Receiver<CellEvent>,
    cell: tokio::task::JoinHandle<Result<CellOutcome, crate::sandbox::Error>>,
) -> Response {
    let state = (events, Some(cell));
    let stream = futures_util::stream::unfold(state, move |(mut events, cell)| async move {
        let cell = cell?;
        if let Some(event) = events.recv().await {
            let value = serde_json::to_value(&event).unwrap_or(Value::Null);
            return Some((
                Ok::<_, std::convert::Infallible>(frame(framing, &value)),
                (events, Some(cell)),
            ));
        }
        let end = match cell.await {
            Ok(Ok(outcome)) => {
                let mut end = outcome_json(&outcome);
                end["type"] = json!("end");
                end
            }
            Ok(Err(error)) => {
                let error = ApiError::from(error);
                json!({"type": "end", "status": "error", "error": {"kind": error.kind, "message": error.message}})
            }
            Err(_) => {
                json!({"type": "end", "status": "error", "error": {"kind": "internal", "message": "the cell crashed"}})
            }
        };
        Some((Ok(frame(framing, &end)), (events, None)))
    });
    let content_type = match framing {
        Framing::Sse => "text/event-stream",
        _ => "application/x-ndjson",
    };
    // Fused: a body may be polled once more after its end.
    let mut response = Body::from_stream(futures_util::StreamExt::fuse(stream)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
