//! A claimed pod's runtime, as agent-sandbox's example Python runtime serves it
//! (`examples/python-runtime-sandbox/main.py` at 2fd412d): `GET /` → `{status, message}`;
//! `POST /upload`, multipart part `file` whose file name is the path under the base folder →
//! `{message}`; `POST /execute` `{command}` → always 200 `{stdout, stderr, exit_code}`, the
//! command split as `shlex.split` does and run without a shell, a failure to start it (or the
//! runtime's 300 s timeout) reported as exit code 1 with `Failed to execute command: …`.
//! Each pod listens on a loopback address of its own (its pod IP), all on one port.
//! `python3 FILE` and `node FILE` run for real in the local provider's sandbox.

use std::{collections::HashMap, net::IpAddr, sync::Arc, time::Duration};

use axum::{
    body::Body,
    extract::{Multipart, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::{providers::local::RawRun, Error},
};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::super::{file, run};
use super::Inner;

/// What a pod holds: its files, by the path under the base folder.
#[derive(Default)]
pub struct Files(pub HashMap<String, Vec<u8>>);

#[derive(Clone)]
struct Pod {
    inner: Arc<Inner>,
    claim: String,
}

/// Serves the runtime of `claim`'s pod on `listener` until the task is aborted.
pub fn serve(
    inner: Arc<Inner>,
    claim: String,
    listener: TcpListener,
) -> tokio::task::JoinHandle<()> {
    let router = Router::new()
        .route("/", get(health))
        .route("/upload", post(upload))
        .route("/execute", post(execute))
        .with_state(Pod { inner, claim });
    tokio::spawn(async move {
        axum::serve(listener, router).await.ok();
    })
}

/// A listener on a loopback address of its own with `port` (0: any), from `first` on.
pub async fn listen(first: u32, port: u16) -> (TcpListener, IpAddr) {
    for offset in 0..1000u32 {
        let n = first + offset;
        let address = IpAddr::from([
            127,
            ((n >> 16) & 0xff) as u8,
            ((n >> 8) & 0xff) as u8,
            (n & 0xff) as u8,
        ]);
        if n & 0xff == 0 || n & 0xff == 255 {
            continue;
        }
        if let Ok(listener) = TcpListener::bind((address, port)).await {
            return (listener, address);
        }
    }
    panic!("no loopback address free for a pod");
}

async fn health() -> Json<Value> {
    Json(json!({ "status": "ok", "message": "Sandbox Runtime is active." }))
}

async fn upload(State(pod): State<Pod>, mut form: Multipart) -> Response {
    while let Ok(Some(field)) = form.next_field().await {
        if field.name() != Some("file") {
            continue;
        }
        let name = field.file_name().unwrap_or_default().to_owned();
        let Ok(contents) = field.bytes().await else {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({ "message": "File upload failed: the body broke off" })),
            )
                .into_response();
        };
        if name.is_empty() || name.split('/').any(|part| part == "..") {
            return (
                StatusCode::FORBIDDEN,
                Json(json!({ "message": "Access denied" })),
            )
                .into_response();
        }
        // Without SANDBOX_BASE_DIR's parent folders (v0.5.6): a flat name only.
        if name.trim_start_matches('/').contains('/') {
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "message": format!("File upload failed: [Errno 2] No such file or directory: '/app/{name}'") }))).into_response();
        }
        pod.inner.with_pod(&pod.claim, |files| {
            files
                .0
                .insert(name.trim_start_matches('/').to_owned(), contents.to_vec());
        });
        return Json(json!({ "message": format!("File '{name}' uploaded successfully.") }))
            .into_response();
    }
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(json!({ "detail": [{ "type": "missing", "loc": ["body", "file"], "msg": "Field required" }] })),
    )
        .into_response()
}

fn failed(message: &str) -> Response {
    Json(json!({ "stdout": "", "stderr": format!("Failed to execute command: {message}"), "exit_code": 1 })).into_response()
}

async fn execute(State(pod): State<Pod>, Json(body): Json<Value>) -> Response {
    let Some(command) = body["command"].as_str() else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "detail": [{ "type": "missing", "loc": ["body", "command"], "msg": "Field required" }] })),
        )
            .into_response();
    };
    if pod.inner.options.kill_pod_on_execute {
        pod.inner.pod_failed(&pod.claim);
        // The pod is gone mid-answer: the connection breaks off.
        let broken = futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err::<axum::body::Bytes, _>(std::io::Error::other("the pod was killed"))
        });
        return Response::new(Body::from_stream(broken));
    }
    let Some(words) = shlex::split(command) else {
        return failed("No closing quotation");
    };
    let Some((language, name)) = program(&words) else {
        return failed(&format!(
            "[Errno 2] No such file or directory: '{}'",
            words.first().cloned().unwrap_or_default()
        ));
    };
    let Some(ran) = run_file(
        &pod.inner,
        &pod.claim,
        language,
        &name,
        Duration::from_secs(300),
    )
    .await
    else {
        let message = match language {
            Language::Python => format!(
                "python3: can't open file '/app/{name}': [Errno 2] No such file or directory\n"
            ),
            Language::Javascript => format!("Error: Cannot find module '/app/{name}'\n"),
        };
        return Json(json!({ "stdout": "", "stderr": message, "exit_code": if language == Language::Python { 2 } else { 1 } })).into_response();
    };
    match ran {
        Ok(raw) if raw.limit == Some(ExecStatus::Timeout) => {
            failed(&format!("Command '{words:?}' timed out after 300 seconds"))
        }
        Ok(raw) => Json(json!({
            "stdout": raw.stdout,
            "stderr": raw.stderr,
            // Popen's returncode: minus the signal for a killed process.
            "exit_code": raw.exit_code.unwrap_or(-9),
        }))
        .into_response(),
        Err(error) => failed(&error.to_string()),
    }
}

/// What the fake pods run: `python3 FILE` or `node FILE`, as the language and FILE.
pub(super) fn program(words: &[String]) -> Option<(Language, String)> {
    match words {
        [interpreter, name] if interpreter == "python3" => Some((Language::Python, name.clone())),
        [interpreter, name] if interpreter == "node" => Some((Language::Javascript, name.clone())),
        _ => None,
    }
}

/// Runs the file `name` of `claim`'s pod for real in the local provider's sandbox, as its
/// interpreter would, within `limit`; `None` when the pod holds no such file.
pub(super) async fn run_file(
    inner: &Inner,
    claim: &str,
    language: Language,
    name: &str,
    limit: Duration,
) -> Option<Result<RawRun, Error>> {
    let contents = inner
        .with_pod(claim, |files| files.0.get(name).cloned())
        .flatten()?;
    let (files, args) = match language {
        Language::Python => (vec![file("main.py", contents)], vec!["-B", "main.py"]),
        Language::Javascript => (vec![file("main.mjs", contents)], vec!["main.mjs"]),
    };
    Some(run(&inner.engine, language, files, args, limit).await)
}
