//! Fake of UCloud's Agent Sandbox, as its SDK (`ucloud-sandbox` 1.4.2, a fork of E2B's Python
//! SDK, the one RAGFlow locks) talks to it, traced field by field in the research notes
//! (`tenki-ucloud-wire`, part 2):
//! - control plane, `X-API-Key`: `POST /sandboxes` `{templateID, timeout, secure,
//!   allow_internet_access, metadata, envVars}` → exactly 201 `{templateID, sandboxID,
//!   clientID, envdVersion, envdAccessToken, domain}`; `DELETE /sandboxes/{id}` → 204, then
//!   404; `GET /v2/sandboxes` → 200 `[…]`; errors `{code, message}`; a bad key → 401;
//! - envd (port 49983; here one address, routed by `E2b-Sandbox-Id` and `E2b-Sandbox-Port`),
//!   `X-Access-Token` checked: `POST /files?path=` (multipart, part `file`) → 200
//!   `[{name, type, path}]`; `POST /process.Process/Start` (`application/connect+json`, one
//!   envelope `{process: {cmd, args, cwd}, stdin}`) → 200, envelopes `start {pid}`, `data
//!   {stdout|stderr: base64}`, `end {exitCode, exited, status}`, then end of stream (flags 2)
//!   `{}`, or `{error: {code: "deadline_exceeded"}}` past `Connect-Timeout-Ms`.
//!   The "sandbox" runs `/bin/bash -l -c "python3 FILE"` or `"node FILE"` (a file written
//!   before into that folder) in the local sandbox; other command lines are refused with
//!   exit code 127, as bash would say of an unknown command.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Multipart, Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
    Json, Router,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::providers::local::LocalProvider,
};
use serde_json::{json, Value};

use super::{engine, file, id, run, serve, Served, KEPT_OUTPUT};

pub const API_KEY: &str = "ucloud-sk-0123456789abcdef";

/// One sandbox: its access token and the files written into it.
#[derive(Default)]
struct Sandbox {
    token: String,
    files: HashMap<String, Vec<u8>>,
}

#[derive(Clone)]
struct Fake {
    sandboxes: Arc<Mutex<HashMap<String, Sandbox>>>,
    engine: Arc<LocalProvider>,
}

pub struct Ucloud {
    pub served: Served,
    sandboxes: Arc<Mutex<HashMap<String, Sandbox>>>,
}

impl Ucloud {
    pub fn url(&self) -> String {
        self.served.url()
    }

    /// Sandboxes created and not deleted.
    pub fn live_sandboxes(&self) -> usize {
        self.sandboxes.lock().unwrap().len()
    }
}

pub async fn start() -> Ucloud {
    let sandboxes = Arc::new(Mutex::new(HashMap::new()));
    let fake = Fake {
        sandboxes: sandboxes.clone(),
        engine: engine(512, KEPT_OUTPUT),
    };
    let router = Router::new()
        .route("/v2/sandboxes", get(list))
        .route("/sandboxes", post(create))
        .route("/sandboxes/{id}", delete(kill))
        .route("/files", post(write_file))
        .route("/process.Process/Start", post(start_process))
        .with_state(fake);
    Ucloud {
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

fn key_refused(headers: &HeaderMap) -> Option<Response> {
    match headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        Some(API_KEY) => None,
        _ => Some(error(StatusCode::UNAUTHORIZED, "Invalid API key")),
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
        .map(|id| json!({ "templateID": "base", "sandboxID": id, "state": "running" }))
        .collect();
    Json(listed).into_response()
}

async fn create(State(fake): State<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refused) = key_refused(&headers) {
        return refused;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "request body is not JSON");
    };
    let template = body["templateID"].as_str().unwrap_or_default();
    if template != "base" {
        return error(StatusCode::BAD_REQUEST, "template not found");
    }
    let sandbox = id("isb");
    let token = id("ea_");
    let secure = body["secure"].as_bool().unwrap_or(false);
    fake.sandboxes.lock().unwrap().insert(
        sandbox.clone(),
        Sandbox {
            token: if secure { token.clone() } else { String::new() },
            files: HashMap::new(),
        },
    );
    (
        StatusCode::CREATED,
        Json(json!({
            "templateID": template, "sandboxID": sandbox, "clientID": "c1", "envdVersion": "0.6.4",
            "envdAccessToken": if secure { json!(token) } else { Value::Null }, "domain": null,
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
            &format!("sandbox {sandbox} not found"),
        ),
    }
}

/// The sandbox a data-plane request is for, when its routing headers and token are right.
fn sandbox_of(fake: &Fake, headers: &HeaderMap) -> Result<String, Box<Response>> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    if header("e2b-sandbox-port") != "49983" {
        return Err(Box::new(
            (StatusCode::BAD_GATEWAY, "The sandbox port is not open").into_response(),
        ));
    }
    let sandbox = header("e2b-sandbox-id").to_owned();
    let sandboxes = fake.sandboxes.lock().unwrap();
    let Some(found) = sandboxes.get(&sandbox) else {
        return Err(Box::new(
            (StatusCode::BAD_GATEWAY, "The sandbox was not found").into_response(),
        ));
    };
    if !found.token.is_empty() && header("x-access-token") != found.token {
        return Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            "unauthorized: invalid access token",
        )));
    }
    Ok(sandbox)
}

async fn write_file(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    mut form: Multipart,
) -> Response {
    let sandbox = match sandbox_of(&fake, &headers) {
        Ok(sandbox) => sandbox,
        Err(refused) => return *refused,
    };
    let Some(path) = query.get("path").cloned() else {
        return error(StatusCode::BAD_REQUEST, "path is required");
    };
    let mut contents = None;
    while let Ok(Some(field)) = form.next_field().await {
        if field.name() == Some("file") {
            contents = field.bytes().await.ok();
        }
    }
    let Some(contents) = contents else {
        return error(StatusCode::BAD_REQUEST, "no file part");
    };
    let name = path.rsplit('/').next().unwrap_or_default().to_owned();
    if let Some(found) = fake.sandboxes.lock().unwrap().get_mut(&sandbox) {
        found.files.insert(path.clone(), contents.to_vec());
    }
    Json(json!([{ "name": name, "type": "file", "path": path }])).into_response()
}

fn envelope(flags: u8, message: &Value) -> Vec<u8> {
    let payload = message.to_string().into_bytes();
    let mut out = vec![flags];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

async fn start_process(State(fake): State<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    let sandbox = match sandbox_of(&fake, &headers) {
        Ok(sandbox) => sandbox,
        Err(refused) => return *refused,
    };
    if headers.get("content-type").and_then(|v| v.to_str().ok()) != Some("application/connect+json")
        || body.len() < 5
    {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "want one connect+json envelope",
        );
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body[5..]) else {
        return error(StatusCode::BAD_REQUEST, "the envelope is not JSON");
    };
    let process = &request["process"];
    let cwd = process["cwd"].as_str().unwrap_or("/home/user").to_owned();
    let args: Vec<&str> = process["args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let line = match (process["cmd"].as_str(), args.as_slice()) {
        (Some("/bin/bash"), ["-l", "-c", line]) => line.to_string(),
        _ => return error(StatusCode::BAD_REQUEST, "unsupported process"),
    };
    let limit = headers
        .get("connect-timeout-ms")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map_or(Duration::from_secs(60), Duration::from_millis);
    let words: Vec<&str> = line.split_whitespace().collect();
    let program = match words.as_slice() {
        ["python3", name] => Some((Language::Python, *name)),
        ["node", name] => Some((Language::Javascript, *name)),
        _ => None,
    }
    .and_then(|(language, name)| {
        let sandboxes = fake.sandboxes.lock().unwrap();
        let contents = sandboxes
            .get(&sandbox)?
            .files
            .get(&format!("{cwd}/{name}"))?
            .clone();
        Some((language, contents))
    });
    let mut stream = envelope(0, &json!({ "event": { "start": { "pid": 321 } } }));
    let Some((language, contents)) = program else {
        let message = format!("bash: {line}: command not found\n");
        stream.extend(envelope(
            0,
            &json!({ "event": { "data": { "stderr": STANDARD.encode(message) } } }),
        ));
        stream.extend(envelope(0, &json!({ "event": { "end": { "exitCode": 127, "exited": true, "status": "exit status 127" } } })));
        stream.extend(envelope(2, &json!({})));
        return ([("content-type", "application/connect+json")], stream).into_response();
    };
    let (files, args) = match language {
        Language::Python => (vec![file("main.py", contents)], vec!["-B", "main.py"]),
        Language::Javascript => (vec![file("main.mjs", contents)], vec!["main.mjs"]),
    };
    let raw = run(&fake.engine, language, files, args, limit).await;
    match raw {
        Ok(raw) if raw.limit == Some(ExecStatus::Timeout) => {
            stream.extend(envelope(2, &json!({ "error": { "code": "deadline_exceeded", "message": "the operation timed out" } })));
        }
        Ok(raw) => {
            for (key, text) in [("stdout", &raw.stdout), ("stderr", &raw.stderr)] {
                for chunk in text.as_bytes().chunks(64 * 1024) {
                    stream.extend(envelope(
                        0,
                        &json!({ "event": { "data": { key: STANDARD.encode(chunk) } } }),
                    ));
                }
            }
            let code = raw.exit_code.unwrap_or(137);
            stream.extend(envelope(0, &json!({ "event": { "end": { "exitCode": code, "exited": raw.exit_code.is_some(), "status": format!("exit status {code}") } } })));
            stream.extend(envelope(2, &json!({})));
        }
        Err(error) => {
            stream.extend(envelope(
                2,
                &json!({ "error": { "code": "internal", "message": error.to_string() } }),
            ));
        }
    }
    Response::builder()
        .header("content-type", "application/connect+json")
        .body(Body::from(stream))
        .unwrap()
}
