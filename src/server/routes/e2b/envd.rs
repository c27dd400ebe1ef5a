//! envd's HTTP endpoints (port 49983 behind `E2B_SANDBOX_URL`): `GET /files` (a file's
//! bytes), `POST /files` (multipart with one `file` part per file, its filename the path; or
//! the raw bytes with `?path=`), `GET /health`. Relative paths are in `/home/user`.

use axum::{
    body::Bytes,
    extract::{FromRequest, Multipart, Query, Request, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{error, sandbox};
use crate::{
    sandbox::session::{FileEntry, FileError},
    server::state::AppState,
};

#[derive(Deserialize)]
pub struct FileQuery {
    #[serde(default)]
    path: Option<String>,
}

/// A refused file operation in envd's terms.
pub(super) fn file_error(problem: FileError) -> Response {
    match problem {
        FileError::NotFound(message) => error(StatusCode::NOT_FOUND, message),
        FileError::AlreadyExists(message) => error(StatusCode::CONFLICT, message),
        FileError::Invalid(message) => error(StatusCode::BAD_REQUEST, message),
    }
}

fn provider_failed(problem: crate::sandbox::Error) -> Response {
    tracing::warn!(error = %problem, "an E2B file call failed");
    error(StatusCode::BAD_GATEWAY, "the sandbox did not answer")
}

/// `sbx.is_running()`: 204 while the sandbox runs (502 once it is gone).
#[utoipa::path(get, path = "/e2b/sandbox/health", tag = "e2b", operation_id = "e2b_envd_health", params(("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), responses((status = 204, description = "Running"), (status = 502, description = "Gone")))]
pub async fn health(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match sandbox(&state, &headers, false) {
        Ok(held) if held.session.alive() => StatusCode::NO_CONTENT.into_response(),
        Ok(_) => error(StatusCode::BAD_GATEWAY, "the sandbox has ended"),
        Err(refused) => refused.into_response(),
    }
}

/// `files.read(path)`: the bytes.
#[utoipa::path(get, path = "/e2b/sandbox/files", tag = "e2b", operation_id = "e2b_files_read", params(("E2b-Sandbox-Id" = String, Header, description = "The sandbox"), ("path" = String, Query, description = "Absolute, or relative to /home/user")), security(("envd_token" = [])), responses((status = 200, description = "The bytes"), (status = 404, description = "No such file"), (status = 502, description = "No such sandbox")))]
pub async fn read(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<FileQuery>,
) -> Response {
    let held = match sandbox(&state, &headers, true) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    let Some(path) = query.path.filter(|p| !p.is_empty()) else {
        return error(StatusCode::BAD_REQUEST, "give ?path=");
    };
    let _in_use = held.using();
    match held.session.read_file(&path).await {
        Ok(Ok(bytes)) => {
            ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
        }
        Ok(Err(FileError::NotFound(_))) => error(
            StatusCode::NOT_FOUND,
            format!("path '{path}' does not exist"),
        ),
        Ok(Err(problem)) => file_error(problem),
        Err(problem) => provider_failed(problem),
    }
}

/// The written entry as envd lists it.
fn written(entry: &FileEntry) -> Value {
    json!({"name": entry.name, "type": if entry.kind == "dir" { "dir" } else { "file" }, "path": entry.path})
}

/// `files.write(...)`: each file written inside the sandbox; the entries, absolute.
#[utoipa::path(post, path = "/e2b/sandbox/files", tag = "e2b", operation_id = "e2b_files_write", params(("E2b-Sandbox-Id" = String, Header, description = "The sandbox")), security(("envd_token" = [])), responses((status = 200, description = "`[{name, type, path}]`"), (status = 400, description = "No file, or a gzip body"), (status = 502, description = "No such sandbox")))]
pub async fn write(
    State(state): State<AppState>,
    Query(query): Query<FileQuery>,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    let held = match sandbox(&state, &headers, true) {
        Ok(held) => held,
        Err(answer) => return answer.into_response(),
    };
    let multipart = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if headers.contains_key(header::CONTENT_ENCODING) {
        return error(
            StatusCode::BAD_REQUEST,
            "compressed uploads are not supported; send the file without gzip",
        );
    }
    let mut files: Vec<(String, Bytes)> = Vec::new();
    if multipart {
        let mut form = match Multipart::from_request(request, &()).await {
            Ok(form) => form,
            Err(rejection) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
        };
        loop {
            match form.next_field().await {
                Ok(Some(field)) => {
                    let name = field
                        .file_name()
                        .map(str::to_owned)
                        .or_else(|| query.path.clone());
                    let Some(path) = name.filter(|p| !p.is_empty()) else {
                        return error(StatusCode::BAD_REQUEST, "a file part has no path");
                    };
                    match field.bytes().await {
                        Ok(bytes) => files.push((path, bytes)),
                        Err(e) => return error(StatusCode::BAD_REQUEST, e.body_text()),
                    }
                }
                Ok(None) => break,
                Err(e) => return error(StatusCode::BAD_REQUEST, e.body_text()),
            }
        }
        // One file with a `path` query: the query names it.
        if files.len() == 1 {
            if let Some(path) = query.path.clone().filter(|p| !p.is_empty()) {
                files[0].0 = path;
            }
        }
    } else {
        let Some(path) = query.path.clone().filter(|p| !p.is_empty()) else {
            return error(StatusCode::BAD_REQUEST, "give ?path= for a raw upload");
        };
        match Bytes::from_request(request, &()).await {
            Ok(bytes) => files.push((path, bytes)),
            Err(rejection) => return rejection.into_response(),
        }
    }
    if files.is_empty() {
        return error(StatusCode::BAD_REQUEST, "no file in the upload");
    }
    let _in_use = held.using();
    let mut entries = Vec::new();
    for (path, bytes) in files {
        match held.session.write_file(&path, &bytes).await {
            Ok(Ok(entry)) => entries.push(written(&entry)),
            Ok(Err(problem)) => return file_error(problem),
            Err(problem) => return provider_failed(problem),
        }
    }
    Json(entries).into_response()
}
