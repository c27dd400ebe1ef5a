//! A session's files and commands over REST: upload and download (binary), list, remove, and
//! run a command (argv, or a shell line) with its own deadline. Paths are inside the sandbox;
//! relative ones are in the session's home (`/home/user`). Every operation happens inside the
//! sandbox, as its user, under its landlock rules: the console never opens a session's paths.

use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::{error::ApiError, sessions::owner};
use crate::{
    sandbox::session::{CommandSpec, FileError},
    server::db::execution::{Caller, Source},
    server::state::AppState,
};

impl From<FileError> for ApiError {
    fn from(error: FileError) -> Self {
        match error {
            FileError::NotFound(message) => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
            }
            FileError::AlreadyExists(message) => {
                ApiError::new(StatusCode::CONFLICT, "already_exists", message)
            }
            FileError::Invalid(message) => ApiError::invalid(message),
        }
    }
}

/// A path in the session's sandbox.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FilePath {
    /// Absolute, or relative to `/home/user`.
    path: String,
    /// For listings: how deep to go (1: the folder's own entries).
    #[serde(default)]
    depth: Option<u32>,
}

/// Download a file (its bytes), or list a folder with `?list=1`.
#[utoipa::path(get, path = "/api/v1/sessions/{id}/files", tag = "sessions", operation_id = "read_session_file",
    params(("id" = String, Path, description = "The session"), FilePath),
    security(("api_key" = ["execute"])),
    responses((status = 200, description = "The file's bytes (`application/octet-stream`)"),
              (status = 404, description = "No such file, or not this key's session")))]
pub async fn read(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(path): Query<FilePath>,
) -> Result<Response, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    let _in_use = held.using();
    let bytes = held.session.read_file(&path.path).await??;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

/// List a folder.
#[utoipa::path(get, path = "/api/v1/sessions/{id}/files/list", tag = "sessions", operation_id = "list_session_files",
    params(("id" = String, Path, description = "The session"), FilePath),
    security(("api_key" = ["execute"])),
    responses((status = 200, description = "`{entries: [{name, path, type, size, mode, mtime}]}`"),
              (status = 404, description = "No such folder, or not this key's session")))]
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(path): Query<FilePath>,
) -> Result<Json<Value>, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    let _in_use = held.using();
    let entries = held
        .session
        .list(&path.path, path.depth.unwrap_or(1).clamp(1, 8))
        .await??;
    Ok(Json(json!({ "entries": entries })))
}

/// Upload a file: the body is its bytes (folders on the way are made).
#[utoipa::path(put, path = "/api/v1/sessions/{id}/files", tag = "sessions", operation_id = "write_session_file",
    params(("id" = String, Path, description = "The session"), FilePath),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    security(("api_key" = ["execute"])),
    responses((status = 200, description = "The entry written: `{name, path, type, size, mode, mtime}`"),
              (status = 404, description = "Not this key's session")))]
pub async fn write(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(path): Query<FilePath>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    let _in_use = held.using();
    let entry = held.session.write_file(&path.path, &body).await??;
    Ok(Json(json!(entry)))
}

/// Remove a file or a folder (with what is in it).
#[utoipa::path(delete, path = "/api/v1/sessions/{id}/files", tag = "sessions", operation_id = "remove_session_file",
    params(("id" = String, Path, description = "The session"), FilePath),
    security(("api_key" = ["execute"])),
    responses((status = 204, description = "Removed"), (status = 404, description = "No such path, or not this key's session")))]
pub async fn remove(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(path): Query<FilePath>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    let _in_use = held.using();
    held.session.remove(&path.path).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// A command: `argv`, or `shell` (run as `/bin/sh -c <shell>`).
#[derive(Deserialize, ToSchema)]
pub struct RunCommand {
    #[serde(default)]
    argv: Option<Vec<String>>,
    #[serde(default)]
    shell: Option<String>,
    /// Relative to `/home/user` when not absolute.
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    env: Option<Map<String, Value>>,
    /// Seconds, 1..600, within the provider's run time limit (its default).
    #[serde(default)]
    timeout: Option<u32>,
}

/// Run a command in the session's sandbox.
#[utoipa::path(post, path = "/api/v1/sessions/{id}/commands", tag = "sessions", operation_id = "run_session_command",
    params(("id" = String, Path, description = "The session")),
    request_body = RunCommand, security(("api_key" = ["execute"])),
    responses((status = 200, description = "`{exit_code, stdout, stderr, timed_out}` (output as UTF-8 text, or `stdout_b64`/`stderr_b64` when it is not)"),
              (status = 400, description = "Neither or both of `argv` and `shell`"),
              (status = 404, description = "Not this key's session")))]
pub async fn command(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Json(body): Json<RunCommand>,
) -> Result<Json<Value>, ApiError> {
    let owner = owner(&state, &headers).await?;
    let held = state.sessions.get(&owner, &id)?;
    let argv = match (body.argv, body.shell) {
        (Some(argv), None) if !argv.is_empty() => argv,
        (None, Some(line)) => vec!["/bin/sh".into(), "-c".into(), line],
        _ => {
            return Err(ApiError::invalid(
                "give either argv (a non-empty list) or shell (one line)",
            ))
        }
    };
    if let Some(env) = &body.env {
        if env.values().any(|v| !v.is_string()) {
            return Err(ApiError::invalid("env values must be strings"));
        }
    }
    let spec = CommandSpec {
        argv,
        cwd: body.cwd,
        env: body.env.unwrap_or_default(),
        timeout_secs: body.timeout,
    };
    let caller = Caller::api_key(&owner.key_name, Source::Session);
    let done = state.sessions.command(&held, &caller, &spec).await?;
    let mut answer = json!({"exit_code": done.exit_code, "timed_out": done.timed_out});
    for (name, bytes) in [("stdout", &done.stdout), ("stderr", &done.stderr)] {
        match std::str::from_utf8(bytes) {
            Ok(text) => answer[name] = json!(text),
            Err(_) => answer[format!("{name}_b64")] = json!(STANDARD.encode(bytes)),
        }
    }
    Ok(Json(answer))
}
