//! envd's Connect RPCs with the JSON codec (port 49983 behind `E2B_SANDBOX_URL`).
//!
//! Served: `filesystem.Filesystem/{Stat, ListDir, MakeDir, Remove, Move}` (unary,
//! `application/json`), `process.Process/Start` (server stream, `application/connect+json`:
//! the request is one envelope, chunked; the answer is `start`, `data` (base64), `end`, then
//! the end-of-stream envelope, flags 0x02), `process.Process/List` (no process outlives its
//! command here, so always empty) and `SendSignal` (not found, for the same reason). Any other
//! RPC is answered `unimplemented`.

use std::{
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use base64::{engine::general_purpose::STANDARD, Engine};
use serde_json::{json, Value};

use super::sandbox;
use crate::{
    sandbox::session::{CommandSpec, FileEntry, FileError},
    server::{
        db::execution::{Caller, Source},
        state::AppState,
    },
};

/// A Connect error: JSON `{code, message}` with the status the code goes with.
fn connect_error(code: &str, message: impl Into<String>) -> Response {
    let status = match code {
        "not_found" => StatusCode::NOT_FOUND,
        "already_exists" => StatusCode::CONFLICT,
        "invalid_argument" => StatusCode::BAD_REQUEST,
        "unauthenticated" => StatusCode::UNAUTHORIZED,
        "unimplemented" => StatusCode::NOT_IMPLEMENTED,
        "unavailable" => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let body = json!({"code": code, "message": message.into()}).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn unary(value: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn file_error(problem: FileError) -> Response {
    match problem {
        FileError::NotFound(message) => connect_error("not_found", message),
        FileError::AlreadyExists(message) => connect_error("already_exists", message),
        FileError::Invalid(message) => connect_error("invalid_argument", message),
    }
}

/// envd's `EntryInfo`.
fn entry_info(entry: &FileEntry) -> Value {
    let kind = match entry.kind.as_str() {
        "dir" => "FILE_TYPE_DIRECTORY",
        "symlink" => "FILE_TYPE_SYMLINK",
        _ => "FILE_TYPE_FILE",
    };
    let seconds = std::time::UNIX_EPOCH + Duration::from_secs(entry.mtime.max(0) as u64);
    let modified = chrono::DateTime::<chrono::Utc>::from(seconds)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    json!({
        "name": entry.name,
        "type": kind,
        "path": entry.path,
        "size": entry.size.to_string(),
        "mode": entry.mode,
        "permissions": permissions(entry),
        "owner": "user",
        "group": "user",
        "modifiedTime": modified,
    })
}

fn permissions(entry: &FileEntry) -> String {
    let kind = match entry.kind.as_str() {
        "dir" => 'd',
        "symlink" => 'l',
        _ => '-',
    };
    let bits = "rwxrwxrwx";
    let mut text = String::from(kind);
    for (i, c) in bits.chars().enumerate() {
        text.push(if entry.mode & (1 << (8 - i)) != 0 {
            c
        } else {
            '-'
        });
    }
    text
}

/// Every RPC the SDK sends to envd.
#[utoipa::path(post, path = "/e2b/sandbox/{service}/{method}", tag = "e2b", operation_id = "e2b_envd_rpc", request_body(content = String, content_type = "application/json", description = "The RPC's JSON message (Start: one `application/connect+json` envelope)"), params(("service" = String, Path, description = "`filesystem.Filesystem` or `process.Process`"), ("method" = String, Path, description = "Stat, ListDir, MakeDir, Remove, Move; Start, List, SendSignal"), ("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), security(("envd_token" = [])), responses((status = 200, description = "Connect JSON (`application/json`; Start: `application/connect+json` envelopes)"), (status = 501, description = "An RPC not served")))]
pub async fn rpc(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((service, method)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let held = match sandbox(&state, &headers, true) {
        Ok(held) => held,
        Err(_) if !headers.contains_key("x-access-token") => {
            return connect_error("unauthenticated", "the sandbox's access token is missing")
        }
        Err(refused) => return refused.into_response(),
    };
    let streaming = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/connect+json"));
    let request: Value = if streaming {
        match first_envelope(&body) {
            Some(request) => request,
            None => {
                return connect_error(
                    "invalid_argument",
                    "the request is not one Connect envelope",
                )
            }
        }
    } else {
        serde_json::from_slice(&body).unwrap_or(json!({}))
    };
    let path = request["path"].as_str().unwrap_or_default().to_owned();
    let _in_use = held.using();
    let session = &held.session;
    let answer = match (service.as_str(), method.as_str()) {
        ("filesystem.Filesystem", "Stat") => session.stat(&path).await,
        ("filesystem.Filesystem", "MakeDir") => session.make_dir(&path).await,
        ("filesystem.Filesystem", "Move") => {
            let from = request["source"].as_str().unwrap_or_default();
            let to = request["destination"].as_str().unwrap_or_default();
            session.rename(from, to).await
        }
        ("filesystem.Filesystem", "ListDir") => {
            let depth = request["depth"].as_u64().unwrap_or(1).clamp(1, 8) as u32;
            return match session.list(&path, depth).await {
                Ok(Ok(entries)) => {
                    let entries: Vec<Value> = entries.iter().map(entry_info).collect();
                    unary(json!({ "entries": entries }))
                }
                Ok(Err(problem)) => file_error(problem),
                Err(problem) => connect_error("unavailable", problem.to_string()),
            };
        }
        ("filesystem.Filesystem", "Remove") => {
            return match session.remove(&path).await {
                Ok(Ok(())) => unary(json!({})),
                Ok(Err(problem)) => file_error(problem),
                Err(problem) => connect_error("unavailable", problem.to_string()),
            };
        }
        ("process.Process", "Start") if streaming => {
            return start(&state, &held, &headers, &request).await;
        }
        ("process.Process", "List") => return unary(json!({ "processes": [] })),
        ("process.Process", "SendSignal") => {
            return connect_error(
                "not_found",
                "no such process: commands here end before their call answers",
            )
        }
        _ => {
            return connect_error(
                "unimplemented",
                format!("{service}/{method} is not served by sandbox-console"),
            )
        }
    };
    match answer {
        Ok(Ok(entry)) => unary(json!({ "entry": entry_info(&entry) })),
        Ok(Err(problem)) => file_error(problem),
        Err(problem) => connect_error("unavailable", problem.to_string()),
    }
}

/// The JSON of a body's first envelope (flags, big-endian length, message).
fn first_envelope(body: &[u8]) -> Option<Value> {
    let length = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
    serde_json::from_slice(body.get(5..5 + length)?).ok()
}

fn envelope(flags: u8, message: &Value) -> Vec<u8> {
    let json = message.to_string().into_bytes();
    let mut frame = Vec::with_capacity(json.len() + 5);
    frame.push(flags);
    frame.extend_from_slice(&(json.len() as u32).to_be_bytes());
    frame.extend_from_slice(&json);
    frame
}

/// A number for each command, as the `pid` of its `start` event.
fn next_pid() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1000);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `commands.run`: runs the command to its end (within `connect-timeout-ms` and the
/// provider's limit) and answers the whole stream at once.
async fn start(
    state: &AppState,
    held: &std::sync::Arc<crate::server::sessions::Held>,
    headers: &HeaderMap,
    request: &Value,
) -> Response {
    let process = &request["process"];
    let Some(cmd) = process["cmd"].as_str() else {
        return connect_error("invalid_argument", "process.cmd is required");
    };
    let mut argv = vec![cmd.to_owned()];
    argv.extend(
        process["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_owned)),
    );
    let env = super::strings_of(&process["envs"]);
    let timeout = headers
        .get("connect-timeout-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|ms| (ms.div_ceil(1000)).clamp(1, 600) as u32);
    let spec = CommandSpec {
        argv,
        cwd: process["cwd"].as_str().map(str::to_owned),
        env,
        timeout_secs: timeout,
    };
    let caller = Caller::api_key(&held.owner.key_name, Source::Session);
    let done = state.sessions.command(held, &caller, &spec).await;
    let mut body = envelope(0, &json!({"event": {"start": {"pid": next_pid()}}}));
    let end = match done {
        Ok(done) => {
            for (name, bytes) in [("stdout", &done.stdout), ("stderr", &done.stderr)] {
                if !bytes.is_empty() {
                    let event = json!({"event": {"data": {name: STANDARD.encode(bytes)}}});
                    body.extend(envelope(0, &event));
                }
            }
            if done.timed_out {
                json!({"error": {"code": "deadline_exceeded", "message": "context deadline exceeded"}})
            } else {
                let status = format!("exit status {}", done.exit_code);
                let mut end = json!({"exitCode": done.exit_code, "exited": true, "status": status});
                if done.exit_code != 0 {
                    end["error"] = json!(status);
                }
                body.extend(envelope(0, &json!({"event": {"end": end}})));
                json!({})
            }
        }
        Err(problem) => json!({"error": {"code": "unavailable", "message": problem.to_string()}}),
    };
    body.extend(envelope(0x02, &end));
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/connect+json"),
    );
    response
}
