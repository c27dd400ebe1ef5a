//! E2B's code interpreter (port 49999 behind `E2B_SANDBOX_URL`): `POST /execute` answered as
//! newline-delimited JSON while the cell runs (`stdout`, `stderr`, `result` with its MIME
//! bundle, `error`, `number_of_executions`, `end_of_execution`; never a blank line), and code
//! contexts (`/contexts`: create, list, restart, remove). A client that hangs up interrupts
//! its cell, as E2B's server does.

use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    extract::{Path, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::sandbox;
use crate::{
    model::execution::{ExecStatus, MAX_CODE_BYTES},
    sandbox::session::{CellEvent, CellOutcome},
    server::{
        db::execution::{Caller, Source},
        sessions::Held,
        state::AppState,
    },
};

/// E2B's interpreter answers these in plain text.
fn text(status: StatusCode, message: &str) -> Response {
    (status, message.to_owned()).into_response()
}

/// One NDJSON line of E2B's stream for one event of ours.
fn line(event: &CellEvent) -> Value {
    match event {
        CellEvent::Stdout { text, timestamp } => {
            json!({"type": "stdout", "text": text, "timestamp": timestamp})
        }
        CellEvent::Stderr { text, timestamp } => {
            json!({"type": "stderr", "text": text, "timestamp": timestamp})
        }
        CellEvent::Result {
            data,
            is_main_result,
        } => {
            let mut result = data.clone();
            result.insert("type".into(), json!("result"));
            result.insert("is_main_result".into(), json!(is_main_result));
            Value::Object(result)
        }
        CellEvent::Error {
            name,
            value,
            traceback,
        } => json!({"type": "error", "name": name, "value": value, "traceback": traceback}),
    }
}

/// The lines that close a cell: a deadline or a limit is reported as E2B's error shape (the
/// SDK raises nothing for it, it sets `execution.error`), then the count and the end.
fn closing(outcome: &CellOutcome) -> Vec<Value> {
    let mut lines = Vec::new();
    let already = outcome
        .events
        .iter()
        .any(|e| matches!(e, CellEvent::Error { .. }));
    let limit = match outcome.status {
        ExecStatus::Timeout => Some((
            "TimeoutError",
            "the cell ran past its time limit and was interrupted",
        )),
        ExecStatus::MemoryLimit => {
            Some(("MemoryError", "the sandbox ran out of memory; it has ended"))
        }
        ExecStatus::OutputLimit => Some((
            "OutputLimitError",
            "the cell printed more than the limit; the rest was dropped",
        )),
        _ if outcome.session_ended => Some(("SandboxEnded", "the sandbox ended during the cell")),
        _ => None,
    };
    if let Some((name, value)) = limit.filter(|_| !already || outcome.session_ended) {
        lines.push(json!({"type": "error", "name": name, "value": value, "traceback": value}));
    }
    lines.push(json!({"type": "number_of_executions", "execution_count": outcome.execution_count}));
    lines.push(json!({"type": "end_of_execution"}));
    lines
}

/// Interrupts the cell when the answer is dropped before the cell ended (the client hung up).
struct InterruptOnDrop(Option<Arc<Held>>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            tokio::spawn(async move {
                let _ = held.session.interrupt().await;
            });
        }
    }
}

/// `run_code`: the cell's events as NDJSON while it runs.
#[utoipa::path(post, path = "/e2b/sandbox/execute", tag = "e2b", operation_id = "e2b_execute", request_body(content = String, content_type = "application/json", description = "`{code, context_id, language, env_vars}`"), params(("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), security(("envd_token" = [])), responses((status = 200, description = "NDJSON: `stdout`, `stderr`, `result`, `error`, `number_of_executions`, `end_of_execution`"), (status = 404, description = "Unknown context"), (status = 502, description = "No such sandbox")))]
pub async fn execute(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let held = match sandbox(&state, &headers, true) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return text(
                StatusCode::UNPROCESSABLE_ENTITY,
                &format!("invalid body: {e}"),
            )
        }
    };
    let Some(code) = request["code"].as_str().map(str::to_owned) else {
        return text(StatusCode::UNPROCESSABLE_ENTITY, "code is required");
    };
    if code.len() > MAX_CODE_BYTES {
        return text(
            StatusCode::BAD_REQUEST,
            &format!("code is over {MAX_CODE_BYTES} bytes"),
        );
    }
    let context = match (request["context_id"].as_str(), request["language"].as_str()) {
        (Some(_), Some(_)) => {
            return text(
                StatusCode::BAD_REQUEST,
                "Only one of context_id or language can be provided",
            )
        }
        (Some(id), None) => {
            let known = id == "default"
                || held
                    .contexts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .any(|c| c["id"] == id);
            if !known {
                return text(StatusCode::NOT_FOUND, &format!("Context {id} not found"));
            }
            id.to_owned()
        }
        (None, Some("python" | "python3")) | (None, None) => "default".to_owned(),
        (None, Some(other)) => {
            return text(
                StatusCode::BAD_REQUEST,
                &format!("this sandbox runs Python; {other} contexts are not available"),
            )
        }
    };
    let caller = Caller::api_key(&held.owner.key_name, Source::Session);
    let (sink, mut events) = mpsc::channel::<CellEvent>(64);
    let sessions = state.sessions.clone();
    let running = held.clone();
    let cell = tokio::spawn(async move {
        sessions
            .run_cell(&running, &caller, &context, &code, None, Some(sink))
            .await
    });
    let guard = InterruptOnDrop(Some(held));
    let stream = async_stream(move |out| async move {
        let mut guard = guard;
        loop {
            let event = tokio::select! {
                // The client hung up: the guard interrupts the cell.
                () = out.closed() => return,
                event = events.recv() => event,
            };
            let Some(event) = event else { break };
            if out.send(line(&event)).await.is_err() {
                return;
            }
        }
        let lines = match cell.await {
            Ok(Ok(outcome)) => closing(&outcome),
            Ok(Err(error)) => vec![
                json!({"type": "error", "name": "SandboxError", "value": error.to_string(), "traceback": ""}),
                json!({"type": "end_of_execution"}),
            ],
            Err(_) => vec![json!({"type": "unexpected_end_of_execution"})],
        };
        guard.0 = None;
        for value in lines {
            if out.send(value).await.is_err() {
                return;
            }
        }
    });
    let mut response = Body::from_stream(stream).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

/// A stream of NDJSON lines written by `produce` into a channel.
fn async_stream<F, Fut>(
    produce: F,
) -> impl futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>>
where
    F: FnOnce(mpsc::Sender<Value>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Value>(64);
    tokio::spawn(produce(tx));
    // Fused: a body may be polled once more after its end.
    futures_util::StreamExt::fuse(futures_util::stream::unfold(rx, |mut rx| async move {
        let value = rx.recv().await?;
        Some((Ok(Bytes::from(format!("{value}\n"))), rx))
    }))
}

/// `create_code_context`: a new context with globals of its own.
#[utoipa::path(post, path = "/e2b/sandbox/contexts", tag = "e2b", operation_id = "e2b_create_context", request_body(content = String, content_type = "application/json", description = "`{language?, cwd?}`"), params(("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), responses((status = 200, description = "`{id, language, cwd}`"), (status = 502, description = "No such sandbox")))]
pub async fn create_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let held = match sandbox(&state, &headers, false) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let language = request["language"].as_str().unwrap_or("python");
    if !matches!(language, "python" | "python3") {
        return text(
            StatusCode::BAD_REQUEST,
            &format!("this sandbox runs Python; {language} contexts are not available"),
        );
    }
    let mut contexts = held.contexts.lock().unwrap_or_else(|e| e.into_inner());
    if contexts.len() >= 32 {
        return text(
            StatusCode::TOO_MANY_REQUESTS,
            "this sandbox has 32 contexts, the most it keeps",
        );
    }
    let context = json!({
        "id": format!("ctx-{}", contexts.len() + 1),
        "language": "python",
        "cwd": crate::sandbox::providers::local::session::HOME,
    });
    contexts.push(context.clone());
    Json(context).into_response()
}

/// `list_code_contexts`.
#[utoipa::path(get, path = "/e2b/sandbox/contexts", tag = "e2b", operation_id = "e2b_list_contexts", params(("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), responses((status = 200, description = "`[{id, language, cwd}]`"), (status = 502, description = "No such sandbox")))]
pub async fn list_contexts(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let held = match sandbox(&state, &headers, false) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    let mut all = vec![
        json!({"id": "default", "language": "python", "cwd": crate::sandbox::providers::local::session::HOME}),
    ];
    all.extend(
        held.contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned(),
    );
    Json(all).into_response()
}

/// `restart_code_context`: its globals are forgotten.
#[utoipa::path(post, path = "/e2b/sandbox/contexts/{id}/restart", tag = "e2b", operation_id = "e2b_restart_context", params(("id" = String, Path, description = "The context"), ("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), responses((status = 204, description = "Its globals forgotten"), (status = 502, description = "No such sandbox")))]
pub async fn restart_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let held = match sandbox(&state, &headers, false) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    match held.session.reset_context(&id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => text(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    }
}

/// `remove_code_context`.
#[utoipa::path(delete, path = "/e2b/sandbox/contexts/{id}", tag = "e2b", operation_id = "e2b_remove_context", params(("id" = String, Path, description = "The context"), ("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), responses((status = 204, description = "Removed"), (status = 404, description = "Unknown context"), (status = 502, description = "No such sandbox")))]
pub async fn remove_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let held = match sandbox(&state, &headers, false) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    let removed = {
        let mut contexts = held.contexts.lock().unwrap_or_else(|e| e.into_inner());
        let before = contexts.len();
        contexts.retain(|c| c["id"] != id.as_str());
        contexts.len() < before
    };
    if !removed {
        return text(StatusCode::NOT_FOUND, &format!("Context {id} not found"));
    }
    let _ = held.session.reset_context(&id).await;
    StatusCode::NO_CONTENT.into_response()
}
