//! Fake of Alibaba Cloud AgentRun's code interpreter as the official SDK calls it
//! (`Serverless-Devs/agentrun-sdk-python`; research notes §2.2, peer survey §2.a, Appendices
//! A and B). One address serves both planes:
//! - control plane (OpenAPI 2025-09-10, ROA, `ACS3-HMAC-SHA256` in `Authorization`, the
//!   body's SHA-256 in `x-acs-content-sha256`, `x-acs-action`/`x-acs-version`):
//!   `GET /2025-09-10/templates/{name}` → `{requestId, data: {templateName, status}}` or 404
//!   `TemplateNotFound`; `POST /2025-09-10/templates` creates one (CREATING, READY when next
//!   read);
//! - data plane (`AGENTRUN4-HMAC-SHA256` in `Agentrun-Authorization`, `x-acs-date`,
//!   `x-acs-content-sha256: UNSIGNED-PAYLOAD`): `POST /sandboxes` `{templateName,
//!   sandboxIdleTimeoutSeconds}` → `{code: "SUCCESS", requestId, data: {sandboxId, …}}`;
//!   `POST /sandboxes/{id}/contexts/execute` `{code, timeout ≤ 30, language?}` →
//!   `{contextId, results: [{type: stdout|stderr|error|endOfExecution, text, status}]}`, or
//!   408 `RequestTimeout` when the code outlives `timeout`; `DELETE /sandboxes/{id}`;
//!   `GET /sandboxes/{id}/health` → `{status: "ok"}`;
//! - errors: `{code, requestId, message}`; unknown key → 401, bad signature → 403.
//!   Cells run like a kernel's: Python as a script, JavaScript with top-level await.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::providers::{
        aliyun_codeinterpreter::signature::{self, Signed},
        local::LocalProvider,
    },
};
use serde_json::{json, Value};

use super::{engine, id, kernel_cell, run, serve, Served, KEPT_OUTPUT};

pub const ACCESS_KEY_ID: &str = "LTAI5tFAKEKEY0000";
pub const SECRET: &str = "fake-secret-0123456789";
pub const ACCOUNT_ID: &str = "1234567890123456";
pub const REGION: &str = "cn-hangzhou";

/// How the execute call misbehaves, set by a test.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// Execute waits this long before it answers.
    pub stall: Option<Duration>,
    /// Execute answers this instead (status, body).
    pub canned: Option<(u16, String)>,
}

#[derive(Clone)]
struct Fake {
    templates: Arc<Mutex<HashMap<String, String>>>,
    sandboxes: Arc<Mutex<HashMap<String, String>>>,
    engine: Arc<LocalProvider>,
    knobs: Arc<Mutex<Knobs>>,
}

pub struct AgentRun {
    pub served: Served,
    pub knobs: Arc<Mutex<Knobs>>,
    templates: Arc<Mutex<HashMap<String, String>>>,
    sandboxes: Arc<Mutex<HashMap<String, String>>>,
}

impl AgentRun {
    pub fn url(&self) -> String {
        self.served.url()
    }

    pub fn live_sandboxes(&self) -> usize {
        self.sandboxes.lock().unwrap().len()
    }

    pub fn template_status(&self, name: &str) -> Option<String> {
        self.templates.lock().unwrap().get(name).cloned()
    }

    /// A template that exists already (as one made in the console).
    pub fn add_template(&self, name: &str) {
        self.templates
            .lock()
            .unwrap()
            .insert(name.into(), "READY".into());
    }
}

pub async fn start() -> AgentRun {
    let templates = Arc::new(Mutex::new(HashMap::new()));
    let sandboxes = Arc::new(Mutex::new(HashMap::new()));
    let knobs = Arc::new(Mutex::new(Knobs::default()));
    let fake = Fake {
        templates: templates.clone(),
        sandboxes: sandboxes.clone(),
        engine: engine(512, KEPT_OUTPUT),
        knobs: knobs.clone(),
    };
    let router = Router::new()
        .route("/2025-09-10/templates", post(create_template))
        .route("/2025-09-10/templates/{name}", get(get_template))
        .route("/sandboxes", post(create_sandbox))
        .route("/sandboxes/{id}", axum::routing::delete(delete_sandbox))
        .route("/sandboxes/{id}/health", get(health))
        .route("/sandboxes/{id}/contexts/execute", post(execute))
        .with_state(fake);
    AgentRun {
        served: serve(router).await,
        knobs,
        templates,
        sandboxes,
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        [("x-acs-request-id", "fake-request")],
        Json(json!({ "code": code, "requestId": id("req-"), "message": message })),
    )
        .into_response()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// `Name Credential=…,SignedHeaders=…,Signature=…` split into its three parts.
fn parse_authorization<'a>(
    value: &'a str,
    algorithm: &str,
) -> Option<(&'a str, Vec<&'a str>, &'a str)> {
    let rest = value.strip_prefix(algorithm)?.trim();
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (key, value) = part.trim().split_once('=')?;
        match key {
            "Credential" => credential = Some(value),
            "SignedHeaders" => signed = Some(value.split(';').collect()),
            "Signature" => signature = Some(value),
            _ => return None,
        }
    }
    Some((credential?, signed?, signature?))
}

fn signed_request<'a>(
    method: &'a Method,
    uri: &'a Uri,
    headers: &HeaderMap,
    names: &[&str],
) -> Signed<'a> {
    Signed {
        method: method.as_str(),
        path: uri.path(),
        query: uri.query().unwrap_or_default(),
        headers: names
            .iter()
            .map(|n| (n.to_string(), header(headers, n).to_owned()))
            .collect(),
    }
}

/// Checks the data plane's AGENTRUN4-HMAC-SHA256 signature.
/// `Some(refusal)` when the signature does not hold.
fn check_agentrun4(method: &Method, uri: &Uri, headers: &HeaderMap) -> Option<Response> {
    let refused = |message: &str| {
        Some(error(
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
            message,
        ))
    };
    let Some((credential, names, signature)) = parse_authorization(
        header(headers, "agentrun-authorization"),
        signature::AGENTRUN4,
    ) else {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "MissingAuthorization",
            "Agentrun-Authorization is missing or malformed",
        ));
    };
    let parts: Vec<&str> = credential.split('/').collect();
    let [key, day, region, "agentrun", "aliyun_v4_request"] = parts[..] else {
        return refused("the credential scope is malformed");
    };
    if key != ACCESS_KEY_ID {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "InvalidAccessKeyId.NotFound",
            "Specified access key is not found.",
        ));
    }
    if region != REGION {
        return refused("the credential's region is not this endpoint's");
    }
    if header(headers, "x-acs-content-sha256") != signature::UNSIGNED_PAYLOAD {
        return refused("x-acs-content-sha256 must be UNSIGNED-PAYLOAD");
    }
    for required in ["host", "x-acs-date", "x-acs-content-sha256"] {
        if !names.contains(&required) {
            return refused(&format!("{required} is not signed"));
        }
    }
    if !header(headers, "content-type").is_empty() && !names.contains(&"content-type") {
        return refused("content-type is not signed");
    }
    let date = header(headers, "x-acs-date");
    let now = time::OffsetDateTime::now_utc();
    let Some(sent) = parse_date(date) else {
        return refused("x-acs-date is not YYYY-MM-DDTHH:MM:SSZ");
    };
    if (now - sent).abs() > time::Duration::minutes(15) || date[..10].replace('-', "") != day {
        return refused("x-acs-date is too far from now, or not the credential's day");
    }
    let expected = signature::agentrun4_signature(
        &signed_request(method, uri, headers, &names),
        SECRET,
        day,
        region,
    );
    if expected != signature {
        return refused("The request signature does not conform to Aliyun standards.");
    }
    None
}

/// `YYYY-MM-DDTHH:MM:SSZ`, strictly.
fn parse_date(text: &str) -> Option<time::OffsetDateTime> {
    let bytes = text.as_bytes();
    if bytes.len() != 20
        || &text[4..5] != "-"
        || &text[7..8] != "-"
        || &text[10..11] != "T"
        || &text[19..] != "Z"
    {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text.get(range)?.parse::<u16>().ok();
    let date = time::Date::from_calendar_date(
        i32::from(number(0..4)?),
        time::Month::try_from(number(5..7)? as u8).ok()?,
        number(8..10)? as u8,
    )
    .ok()?;
    let clock = time::Time::from_hms(
        number(11..13)? as u8,
        number(14..16)? as u8,
        number(17..19)? as u8,
    )
    .ok()?;
    Some(time::PrimitiveDateTime::new(date, clock).assume_utc())
}

/// Checks the control plane's ACS3-HMAC-SHA256 signature (and that it covers the body).
fn check_acs3(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    action: &str,
) -> Option<Response> {
    let refused = |message: &str| {
        Some(error(
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
            message,
        ))
    };
    let Some((key, names, signature)) =
        parse_authorization(header(headers, "authorization"), signature::ACS3)
    else {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "MissingAuthorization",
            "Authorization is missing or malformed",
        ));
    };
    if key != ACCESS_KEY_ID {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "InvalidAccessKeyId.NotFound",
            "Specified access key is not found.",
        ));
    }
    if header(headers, "x-acs-action") != action || header(headers, "x-acs-version") != "2025-09-10"
    {
        return Some(error(
            StatusCode::BAD_REQUEST,
            "InvalidAction",
            "x-acs-action or x-acs-version is wrong",
        ));
    }
    let body_hash = signature::sha256_hex(body);
    if header(headers, "x-acs-content-sha256") != body_hash {
        return refused("x-acs-content-sha256 is not the body's hash");
    }
    for name in headers
        .keys()
        .map(|n| n.as_str())
        .filter(|n| n.starts_with("x-acs-"))
        .chain(["host"])
    {
        if !names.contains(&name) {
            return refused(&format!("{name} is not signed"));
        }
    }
    if header(headers, "x-acs-signature-nonce").is_empty() {
        return refused("x-acs-signature-nonce is missing");
    }
    let expected = signature::acs3_signature(
        &signed_request(method, uri, headers, &names),
        &body_hash,
        SECRET,
    );
    if expected != signature {
        return refused("The request signature does not conform to Aliyun standards.");
    }
    None
}

async fn get_template(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    if let Some(refused) = check_acs3(&method, &uri, &headers, b"", "GetTemplate") {
        return refused;
    }
    let mut templates = fake.templates.lock().unwrap();
    let Some(status) = templates.get(&name).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            "TemplateNotFound",
            &format!("template {name} does not exist"),
        );
    };
    if status == "CREATING" {
        templates.insert(name.clone(), "READY".into());
    }
    Json(json!({ "requestId": id("req-"), "data": { "templateName": name, "templateType": "CodeInterpreter", "status": status } })).into_response()
}

async fn create_template(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = check_acs3(&method, &uri, &headers, &body, "CreateTemplate") {
        return refused;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(name) = body.get("templateName").and_then(Value::as_str) else {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            "templateName is required",
        );
    };
    if body.get("templateType").and_then(Value::as_str) != Some("CodeInterpreter") {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            "templateType must be a known type",
        );
    }
    fake.templates
        .lock()
        .unwrap()
        .insert(name.into(), "CREATING".into());
    Json(json!({ "requestId": id("req-"), "data": { "templateName": name, "status": "CREATING" } }))
        .into_response()
}

async fn create_sandbox(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = check_agentrun4(&method, &uri, &headers) {
        return refused;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let template = body
        .get("templateName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if fake
        .templates
        .lock()
        .unwrap()
        .get(template)
        .map(String::as_str)
        != Some("READY")
    {
        return error(
            StatusCode::NOT_FOUND,
            "TemplateNotFound",
            &format!("template {template} does not exist or is not ready"),
        );
    }
    let sandbox = id("01J");
    fake.sandboxes
        .lock()
        .unwrap()
        .insert(sandbox.clone(), template.into());
    Json(
        json!({ "code": "SUCCESS", "requestId": id("req-"), "data": {
            "sandboxId": sandbox, "templateName": template, "status": "READY",
            "sandboxIdleTimeoutSeconds": body.get("sandboxIdleTimeoutSeconds"),
        }}),
    )
    .into_response()
}

async fn delete_sandbox(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(sandbox): Path<String>,
) -> Response {
    if let Some(refused) = check_agentrun4(&method, &uri, &headers) {
        return refused;
    }
    match fake.sandboxes.lock().unwrap().remove(&sandbox) {
        Some(_) => Json(json!({ "code": "SUCCESS", "requestId": id("req-"), "data": { "sandboxId": sandbox, "status": "DELETING" } })).into_response(),
        None => error(StatusCode::NOT_FOUND, "SandboxNotFound", &format!("sandbox {sandbox} does not exist")),
    }
}

async fn health(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(sandbox): Path<String>,
) -> Response {
    if let Some(refused) = check_agentrun4(&method, &uri, &headers) {
        return refused;
    }
    if !fake.sandboxes.lock().unwrap().contains_key(&sandbox) {
        return error(StatusCode::NOT_FOUND, "SandboxNotFound", "no such sandbox");
    }
    Json(json!({ "status": "ok" })).into_response()
}

async fn execute(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(sandbox): Path<String>,
    body: Bytes,
) -> Response {
    if let Some(refused) = check_agentrun4(&method, &uri, &headers) {
        return refused;
    }
    if !fake.sandboxes.lock().unwrap().contains_key(&sandbox) {
        return error(
            StatusCode::NOT_FOUND,
            "SandboxNotFound",
            &format!("sandbox {sandbox} does not exist"),
        );
    }
    let knobs = fake.knobs.lock().unwrap().clone();
    if let Some(stall) = knobs.stall {
        tokio::time::sleep(stall).await;
    }
    if let Some((status, text)) = knobs.canned {
        return (StatusCode::from_u16(status).unwrap(), text).into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let code = body
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let timeout = body.get("timeout").and_then(Value::as_u64).unwrap_or(30);
    if !(1..=30).contains(&timeout) {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            "timeout must be between 1 and 30",
        );
    }
    let language = match body
        .get("language")
        .and_then(Value::as_str)
        .unwrap_or("python")
    {
        "python" => Language::Python,
        "javascript" => Language::Javascript,
        other => {
            return error(
                StatusCode::BAD_REQUEST,
                "InvalidParameter",
                &format!("unsupported language {other}"),
            )
        }
    };
    let (files, args) = kernel_cell(language, code);
    let raw = match run(
        &fake.engine,
        language,
        files,
        args,
        Duration::from_secs(timeout),
    )
    .await
    {
        Ok(raw) => raw,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &e.to_string(),
            )
        }
    };
    if raw.limit == Some(ExecStatus::Timeout) {
        return error(
            StatusCode::REQUEST_TIMEOUT,
            "RequestTimeout",
            "Request timeout",
        );
    }
    // The kernel streams output in pieces; the SDK's items are those pieces.
    let mut results: Vec<Value> = raw
        .stdout
        .split_inclusive('\n')
        .map(|piece| json!({ "type": "stdout", "text": piece }))
        .collect();
    let killed = raw.exit_code.is_none() || raw.limit.is_some();
    let uncaught = raw.exit_code.is_some_and(|c| c != 0) && !killed;
    if uncaught {
        results.push(json!({ "type": "error", "text": raw.stderr }));
    } else if !raw.stderr.is_empty() {
        results.push(json!({ "type": "stderr", "text": raw.stderr }));
    }
    if killed {
        results.push(json!({ "type": "error", "text": "The kernel died unexpectedly" }));
    }
    let status = if uncaught || killed { "error" } else { "ok" };
    results.push(json!({ "type": "endOfExecution", "status": status }));
    Json(json!({ "contextId": id("ctx-"), "results": results })).into_response()
}
