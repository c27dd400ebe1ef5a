//! Fake of E2B: the control plane (`e2b-dev/E2B` `spec/openapi.yml`) and the code interpreter
//! inside each sandbox (`e2b-dev/code-interpreter` `template/server`), from the research notes
//! (peer survey §1.a and Appendix A):
//! - `GET /health` → 204; `GET /v2/sandboxes` (X-API-Key) → 200 `[…]`;
//! - `POST /sandboxes` `{templateID, timeout, …}` (X-API-Key) → 201 `{templateID, sandboxID,
//!   alias, clientID, envdVersion, envdAccessToken, domain}`; `DELETE /sandboxes/{id}` → 204,
//!   then 404; errors `{"code", "message"}`; a bad key → 401;
//! - `POST /execute` `{code, context_id?, language?}` on the sandbox (here: one address, routed
//!   by `E2b-Sandbox-Id` and `E2b-Sandbox-Port: 49999`), `X-Access-Token` checked → 200 and a
//!   stream of JSON lines: `number_of_executions`, `keepalive`, `stdout`/`stderr` with
//!   timestamps, `result` MIME bundles, `error` {name, value, traceback}, `end_of_execution`;
//!   `context_id` with `language` → 400 plain text.
//!   The "kernel" runs each cell as a program in the local sandbox: Python as a script, with a
//!   small `IPython.display` whose `display()` becomes a `result`; JavaScript with top-level
//!   await (the cell is the body of an async function, as Node's REPL does it).

use std::{
    collections::HashMap,
    convert::Infallible,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
    Json, Router,
};
use sandbox_console::{model::execution::Language, sandbox::providers::local::LocalProvider};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{engine, file, id, kernel_cell, run, serve, Served, KEPT_OUTPUT};

pub const API_KEY: &str = "e2b_0123456789abcdef0123456789abcdef01234567";
pub const TEMPLATE: &str = "code-interpreter-v1";
const DISPLAY_FRAME: &str = "\u{1e}E2B-DISPLAY ";

/// `IPython.py`: a package of one file whose `IPython.display` has `display`, `SVG` and
/// `Image`; `display()` writes a frame the fake turns into a `result` event.
const IPYTHON: &str = r#"import sys, types

__path__ = []
display = types.ModuleType("IPython.display")
sys.modules["IPython.display"] = display
exec(compile(r'''
import base64, json, sys


class SVG:
    def __init__(self, data):
        self.data = data

    def _bundle(self):
        return {"image/svg+xml": self.data}


class Image:
    def __init__(self, data, format="png"):
        self.data, self.format = data, format

    def _bundle(self):
        return {"image/" + self.format: base64.b64encode(self.data).decode("ascii")}


def display(*objects):
    for obj in objects:
        bundle = obj._bundle() if hasattr(obj, "_bundle") else {"text/plain": repr(obj)}
        sys.stdout.flush()
        sys.stdout.write("\x1eE2B-DISPLAY " + json.dumps(bundle) + "\n")
        sys.stdout.flush()
''', "IPython/display.py", "exec"), display.__dict__)
"#;

#[derive(Clone)]
struct Fake {
    sandboxes: Arc<Mutex<HashMap<String, String>>>,
    executions: Arc<Mutex<u64>>,
    engine: Arc<LocalProvider>,
}

pub struct E2b {
    pub served: Served,
    sandboxes: Arc<Mutex<HashMap<String, String>>>,
}

impl E2b {
    pub fn url(&self) -> String {
        self.served.url()
    }

    /// Sandboxes created and not deleted.
    pub fn live_sandboxes(&self) -> usize {
        self.sandboxes.lock().unwrap().len()
    }
}

pub async fn start() -> E2b {
    let sandboxes = Arc::new(Mutex::new(HashMap::new()));
    let fake = Fake {
        sandboxes: sandboxes.clone(),
        executions: Arc::new(Mutex::new(0)),
        // E2B's default sandbox has 512 MiB; output is not limited.
        engine: engine(512, KEPT_OUTPUT),
    };
    let router = Router::new()
        .route("/health", get(|| async { StatusCode::NO_CONTENT }))
        .route("/v2/sandboxes", get(list))
        .route("/sandboxes", post(create))
        .route("/sandboxes/{id}", delete(kill))
        .route("/execute", post(execute))
        .with_state(fake);
    E2b {
        served: serve(router).await,
        sandboxes,
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "code": status.as_u16(), "message": message })),
    )
        .into_response()
}

/// `Some(refusal)` unless the request carries the API key.
fn key_refused(headers: &HeaderMap) -> Option<Response> {
    match headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        Some(API_KEY) => None,
        _ => Some(error(
            StatusCode::UNAUTHORIZED,
            "Invalid API key, please visit https://e2b.dev/docs/api-key to get your API key",
        )),
    }
}

async fn list(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    if let Some(refused) = key_refused(&headers) {
        return refused;
    }
    let listed: Vec<Value> = fake
        .sandboxes
        .lock()
        .unwrap()
        .keys()
        .map(|id| json!({ "templateID": TEMPLATE, "alias": TEMPLATE, "sandboxID": id, "state": "running", "cpuCount": 2, "memoryMB": 512 }))
        .collect();
    Json(listed).into_response()
}

async fn create(State(fake): State<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refused) = key_refused(&headers) {
        return refused;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "request body has an error: not JSON",
        );
    };
    let Some(template) = body.get("templateID").and_then(Value::as_str) else {
        return error(
            StatusCode::BAD_REQUEST,
            "request body has an error: doesn't match schema: property \"templateID\" is missing",
        );
    };
    if template != TEMPLATE && template != "base" {
        return error(
            StatusCode::NOT_FOUND,
            &format!("template '{template}' not found"),
        );
    }
    let sandbox = id("i");
    let token = id("tok_");
    fake.sandboxes
        .lock()
        .unwrap()
        .insert(sandbox.clone(), token.clone());
    let secure = body.get("secure").and_then(Value::as_bool).unwrap_or(false);
    (
        StatusCode::CREATED,
        Json(json!({
            "templateID": template, "sandboxID": sandbox, "alias": template, "clientID": "6532622b",
            "envdVersion": "0.4.3", "envdAccessToken": if secure { json!(token) } else { Value::Null },
            "trafficAccessToken": null, "domain": null,
        })),
    )
        .into_response()
}

async fn kill(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path(sandbox): Path<String>,
) -> Response {
    if let Some(refused) = key_refused(&headers) {
        return refused;
    }
    match fake.sandboxes.lock().unwrap().remove(&sandbox) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            &format!("sandbox \"{sandbox}\" not found"),
        ),
    }
}

fn line(value: Value) -> Bytes {
    let mut text = value.to_string();
    text.push('\n');
    Bytes::from(text)
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

async fn execute(State(fake): State<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let sandbox = header("e2b-sandbox-id").unwrap_or_default();
    if header("e2b-sandbox-port").as_deref() != Some("49999") {
        return (StatusCode::BAD_GATEWAY, "The sandbox port is not open").into_response();
    }
    let Some(token) = fake.sandboxes.lock().unwrap().get(&sandbox).cloned() else {
        return (
            StatusCode::BAD_GATEWAY,
            format!("The sandbox {sandbox} was not found"),
        )
            .into_response();
    };
    if header("x-access-token").as_deref() != Some(token.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            "Unauthorized access, please provide a valid access token",
        )
            .into_response();
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::UNPROCESSABLE_ENTITY, "body is not JSON").into_response();
    };
    if request.get("context_id").is_some_and(|c| !c.is_null())
        && request.get("language").is_some_and(|l| !l.is_null())
    {
        return (
            StatusCode::BAD_REQUEST,
            "Only one of context_id or language can be provided",
        )
            .into_response();
    }
    let code = request
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let language = match request
        .get("language")
        .and_then(Value::as_str)
        .unwrap_or("python")
    {
        "python" => Language::Python,
        "js" | "javascript" => Language::Javascript,
        other => {
            return (
                StatusCode::BAD_REQUEST,
                format!("Unsupported language: {other}"),
            )
                .into_response()
        }
    };
    let count = {
        let mut executions = fake.executions.lock().unwrap();
        *executions += 1;
        *executions
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let _ = tx
            .send(line(
                json!({ "type": "number_of_executions", "execution_count": count }),
            ))
            .await;
        let keepalive = tx.clone();
        let beat = tokio::spawn(async move {
            loop {
                if keepalive
                    .send(line(json!({ "type": "keepalive" })))
                    .await
                    .is_err()
                {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
        let events = cell(&fake.engine, language, code).await;
        beat.abort();
        for event in events {
            if tx.send(line(event)).await.is_err() {
                return;
            }
        }
        let _ = tx.send(line(json!({ "type": "end_of_execution" }))).await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(bytes), rx))
    });
    Response::new(Body::from_stream(stream))
}

/// Runs one cell and returns the events the kernel would have sent.
async fn cell(engine: &LocalProvider, language: Language, code: String) -> Vec<Value> {
    let (mut files, args) = kernel_cell(language, code);
    if language == Language::Python {
        files.push(file("IPython.py", IPYTHON));
    }
    let raw = match run(engine, language, files, args, Duration::from_secs(5)).await {
        Ok(raw) => raw,
        Err(error) => {
            return vec![
                json!({ "type": "error", "name": "ExecutionError", "value": error.to_string(), "traceback": "" }),
            ]
        }
    };
    let mut events = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, events: &mut Vec<Value>| {
        let bytes = text.as_bytes();
        for chunk in bytes.chunks(1 << 20) {
            let piece = String::from_utf8_lossy(chunk).into_owned();
            events.push(json!({ "type": "stdout", "text": piece, "timestamp": now() }));
        }
        text.clear();
    };
    for piece in raw.stdout.split_inclusive('\n') {
        match piece.strip_prefix(DISPLAY_FRAME) {
            Some(bundle) => {
                flush(&mut text, &mut events);
                let bundle: Value = serde_json::from_str(bundle.trim()).unwrap_or(Value::Null);
                let mut result = json!({ "type": "result", "is_main_result": false });
                for (mime, key) in [
                    ("text/plain", "text"),
                    ("image/png", "png"),
                    ("image/jpeg", "jpeg"),
                    ("image/svg+xml", "svg"),
                    ("application/pdf", "pdf"),
                    ("text/html", "html"),
                ] {
                    if let Some(value) = bundle.get(mime) {
                        result[key] = value.clone();
                    }
                }
                events.push(result);
            }
            None => text.push_str(piece),
        }
    }
    flush(&mut text, &mut events);
    let killed = raw.exit_code.is_none() || raw.limit.is_some();
    if raw.exit_code != Some(0) && !killed && raw.stderr.contains("Traceback")
        || language == Language::Javascript && raw.exit_code == Some(1)
    {
        // An uncaught exception: the kernel reports it as an error, not as stderr.
        let last = raw.stderr.trim_end().lines().last().unwrap_or_default();
        let (name, value) = last.split_once(": ").unwrap_or((last, ""));
        events.push(
            json!({ "type": "error", "name": name, "value": value, "traceback": raw.stderr }),
        );
        return events;
    }
    if !raw.stderr.is_empty() {
        events.push(json!({ "type": "stderr", "text": raw.stderr, "timestamp": now() }));
    }
    if killed {
        events.push(json!({ "type": "error", "name": "ExecutionError", "value": "The kernel died", "traceback": "" }));
    }
    events
}
