//! A claimed pod running agent-sandbox's sandboxd (`packages/sandboxd` at 2fd412d, its
//! `spec/filesystem/v1/filesystem.yaml` and `spec/process/v1/process.proto`), on the pod's
//! address:
//! - REST port: `PUT /v1/files/{path}` (the path percent-decoded, sanitized to the root: an
//!   escape is 403 `{"code": "PERMISSION_DENIED", "message"}`), the body the file's bytes (a
//!   multipart body is not accepted here), 204 without a body; `GET /v1/health`;
//! - gRPC port (h2c): `process.v1.ProcessService/Execute`, `ProcessConfig.command` run without a
//!   shell: `python3 FILE` and `node FILE` run for real in the local provider's sandbox (the
//!   file as written before), an empty command is `INVALID_ARGUMENT`, another program
//!   `NOT_FOUND`; the answer `{exit_code, stdout, stderr}` (bytes), status OK, a non-zero exit
//!   in `exit_code`. No timeout of its own (the caller's deadline ends the call).
//!
//! Not confirmed: the exact texts of sandboxd's errors.

use std::{collections::HashMap, sync::Arc, time::Duration};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post, put},
    Json, Router,
};
use prost::Message;
use serde_json::json;
use tokio::net::TcpListener;

use super::super::grpc::{answer, unframed};
use super::{
    pod::{program, run_file},
    Inner,
};

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessConfig {
    #[prost(string, repeated, tag = "1")]
    pub command: Vec<String>,
    #[prost(map = "string, string", tag = "2")]
    pub env_vars: HashMap<String, String>,
    #[prost(string, optional, tag = "3")]
    pub cwd: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecuteRequest {
    #[prost(message, optional, tag = "1")]
    pub config: Option<ProcessConfig>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecuteResponse {
    #[prost(int32, tag = "1")]
    pub exit_code: i32,
    #[prost(bytes = "vec", tag = "2")]
    pub stdout: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    pub stderr: Vec<u8>,
}

const INVALID_ARGUMENT: u8 = 3;
const NOT_FOUND: u8 = 5;
const INTERNAL: u8 = 13;

#[derive(Clone)]
struct Pod {
    inner: Arc<Inner>,
    claim: String,
}

/// Serves sandboxd for `claim`'s pod: REST on `rest`, gRPC on `grpc`, until aborted.
pub fn serve(
    inner: Arc<Inner>,
    claim: String,
    rest: TcpListener,
    grpc: TcpListener,
) -> tokio::task::JoinHandle<()> {
    let pod = Pod { inner, claim };
    let files = Router::new()
        .route(
            "/v1/health",
            get(|| async { Json(json!({ "status": "ok", "uptime_seconds": 1 })) }),
        )
        .route("/v1/files/{*path}", put(write))
        .with_state(pod.clone());
    let process = Router::new()
        .route("/process.v1.ProcessService/Execute", post(execute))
        .with_state(pod);
    tokio::spawn(async move {
        let _ = tokio::join!(axum::serve(rest, files), axum::serve(grpc, process));
    })
}

async fn write(State(pod): State<Pod>, Path(path): Path<String>, body: Bytes) -> Response {
    let name = path.trim_start_matches('/').to_owned();
    if name.is_empty() || name.split('/').any(|part| part == "..") {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({ "code": "PERMISSION_DENIED", "message": "path traversal outside sandbox root is forbidden" })),
        )
            .into_response();
    }
    pod.inner.with_pod(&pod.claim, |files| {
        files.0.insert(name, body.to_vec());
    });
    StatusCode::NO_CONTENT.into_response()
}

async fn execute(State(pod): State<Pod>, body: Bytes) -> Response {
    let Some(request) = unframed(&body)
        .first()
        .and_then(|m| ExecuteRequest::decode(*m).ok())
    else {
        return answer(Vec::new(), INTERNAL, "grpc: error unmarshalling request");
    };
    let command = request.config.map(|c| c.command).unwrap_or_default();
    if command.is_empty() {
        return answer(Vec::new(), INVALID_ARGUMENT, "command must not be empty");
    }
    let Some((language, name)) = program(&command) else {
        return answer(
            Vec::new(),
            NOT_FOUND,
            &format!("exec: {:?}: executable file not found in $PATH", command[0]),
        );
    };
    let ran = run_file(
        &pod.inner,
        &pod.claim,
        language,
        &name,
        Duration::from_secs(600),
    )
    .await;
    let reply = match ran {
        None => ExecuteResponse {
            exit_code: 2,
            stdout: Vec::new(),
            stderr: format!(
                "can't open file '/workspace/{name}': [Errno 2] No such file or directory\n"
            )
            .into_bytes(),
        },
        Some(Ok(raw)) => ExecuteResponse {
            exit_code: raw.exit_code.unwrap_or(-1),
            stdout: raw.stdout.into_bytes(),
            stderr: raw.stderr.into_bytes(),
        },
        Some(Err(error)) => return answer(Vec::new(), INTERNAL, &error.to_string()),
    };
    answer(vec![reply.encode_to_vec()], 0, "")
}
