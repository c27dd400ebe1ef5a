//! Fake of RAGFlow's executor manager (`agent/sandbox/executor_manager`, HEAD with PR #18703),
//! from the research notes §3.2–§3.5 and the executor's `services/execution.py`:
//! - `GET /healthz` → 200 `{"status": "ok"}`, open even when a token is set;
//! - `POST /run` `{code_b64, language: "python"|"nodejs", arguments}` → 200 with all twelve
//!   keys of `CodeExecutionResult`; 422 in FastAPI's shape for bad base64 or language; with a
//!   token, 401 `{"detail": …}` unless `Authorization: Bearer <t>` or `X-Sandbox-Token: <t>`;
//! - RAGFlow's runners: `main.py` is imported and `main(**args)` called (args from
//!   `args.json`), Node gets `module.exports = { main };` appended; the return value is
//!   printed as `__RAGFLOW_RESULT__:` + base64 JSON `{present, value, type}` and stripped from
//!   stdout; `./artifacts/` files come back as `{name, mime_type, size, content_b64}`;
//! - `analyze_code_security` before every run, as at HEAD (`api/handlers.py`): Python code is
//!   parsed and refused on a deny-list (imports of os, sys, socket, asyncio, …; calls of
//!   exec, open, getattr, …; attributes of those modules; an operation on two constants; …),
//!   JavaScript on `require('child_process'|'fs'|'worker_threads')`, `eval(`, `Function(`,
//!   `process.binding(`; refused code → -999 `Code is unsafe`, `Line <n>: <issue>` lines;
//! - outcomes: exit 124 (its `timeout` command) → -124 `Execution timeout`; killed (137) →
//!   -137; stderr with `Permission denied` / `Operation not permitted` / `MemoryError` →
//!   unauthorized_access / resource_limit_exceeded; other non-zero → program_error; stdout is
//!   empty on every failure; no free container → -10; rate limited → -429 (HTTP 429 after
//!   PR #18703, HTTP 200 before it).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::{providers::local::LocalProvider, Error},
};
use serde_json::{json, Value};

use super::{engine, file, run, serve, serve_on, Served};

const MARKER: &str = "__RAGFLOW_RESULT__:";

const PYTHON_RUNNER: &str = r#"import base64
import json
import os
import sys

os.makedirs(os.path.join(os.getcwd(), "artifacts"), exist_ok=True)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from main import main

if __name__ == "__main__":
    with open("args.json", encoding="utf-8") as f:
        args = json.load(f)
    result = main(**args)
    payload = json.dumps({"present": True, "value": result, "type": "json"}, ensure_ascii=False, separators=(",", ":"))
    print("__RAGFLOW_RESULT__:" + base64.b64encode(payload.encode("utf-8")).decode("ascii"))
"#;

const NODE_RUNNER: &str = r#"const fs = require('fs');
const path = require('path');
const args = JSON.parse(fs.readFileSync(path.join(__dirname, 'args.json'), 'utf8'));
const mod = require(path.join(__dirname, 'main.js'));
const main = typeof mod === 'function' ? mod : mod.main;
if (typeof main !== 'function') { console.error('Error: main is not a function'); process.exit(1); }
function emitResult(value) {
  if (typeof value === 'undefined') { console.error('Error: main() must return a value. Use null for an empty result.'); process.exit(1); }
  const payload = JSON.stringify({ present: true, value, type: 'json' });
  if (typeof payload === 'undefined') { console.error('Error: main() returned a non-JSON-serializable value.'); process.exit(1); }
  console.log('__RAGFLOW_RESULT__:' + Buffer.from(payload, 'utf8').toString('base64'));
}
try {
  Promise.resolve(main(args)).then(emitResult).catch((err) => { console.error('Error in async main function:', err); process.exit(1); });
} catch (err) {
  console.error('Error when executing main:', err);
  process.exit(1);
}
"#;

/// RAGFlow's `analyze_code_security`, as the research notes describe it (§3.6, with HEAD's
/// additions): prints a JSON list of `[issue, line]` for the code on stdin. It only parses
/// the code (Python) or matches it (JavaScript); nothing is run.
const ANALYZER: &str = r#"import ast, json, re, sys
IMPORTS = {"os", "subprocess", "sys", "shutil", "socket", "ctypes", "pickle", "threading",
           "multiprocessing", "asyncio", "http.client", "ftplib", "telnetlib", "builtins"}
CALLS = {"eval", "exec", "open", "__import__", "compile", "input", "system", "popen", "remove",
         "rename", "rmdir", "chdir", "chmod", "chown", "getattr", "setattr", "globals", "locals"}
JS = [(r"require\s*\(\s*['\"`](child_process|fs|worker_threads)['\"`]\s*\)", "Dangerous module require"),
      (r"\beval\s*\(", "Call: eval"), (r"\bFunction\s*\(", "Call: Function"),
      (r"process\.binding\s*\(", "Call: process.binding")]
code, issues = sys.stdin.read(), []
if sys.argv[1] == "nodejs":
    for number, text in enumerate(code.splitlines(), 1):
        issues += [[issue, number] for pattern, issue in JS if re.search(pattern, text)]
    print(json.dumps(issues))
    sys.exit()
try:
    tree = ast.parse(code)
except SyntaxError as e:
    tree, issues = None, [["Parsing Error: %s" % e, -1]]
for node in ast.walk(tree) if tree else []:
    line = getattr(node, "lineno", -1)
    if isinstance(node, ast.Import):
        issues += [["Import: " + a.name, line] for a in node.names if a.name.split(".")[0] in IMPORTS]
    elif isinstance(node, ast.ImportFrom):
        if node.module and node.module.split(".")[0] in IMPORTS:
            issues.append(["From Import: " + node.module, line])
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in CALLS:
            issues.append(["Call: " + func.id, line])
        elif (isinstance(func, ast.Attribute) and func.attr in CALLS and isinstance(func.value, ast.Name)
              and func.value.id in ("builtins", "__builtins__")):
            issues.append(["Call: " + func.attr, line])
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in IMPORTS:
        issues.append(["Attribute Access: %s.%s" % (node.value.id, node.attr), line])
    elif isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant):
        issues.append(["Possible unsafe string concatenation", line])
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in CALLS:
        issues.append(["Function Definition: " + node.name, line])
    elif isinstance(node, ast.Assign):
        issues += [["Assignment to dangerous variable: " + t.id, line]
                   for t in node.targets if isinstance(t, ast.Name) and t.id in CALLS]
print(json.dumps(issues))
"#;

/// `analyze_code_security`: the issues that make code unsafe, `(issue, line)`.
async fn analyze(code: &[u8], language: &str) -> Vec<(String, i64)> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("/usr/bin/python3.11")
        .args(["-I", "-c", ANALYZER, language])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3.11 runs the analyzer");
    let mut stdin = child.stdin.take().expect("a piped stdin");
    stdin
        .write_all(code)
        .await
        .expect("the analyzer reads its input");
    drop(stdin);
    let output = child.wait_with_output().await.expect("the analyzer ends");
    serde_json::from_slice(&output.stdout).expect("the analyzer prints JSON")
}

/// How the fake misbehaves, set by a test.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// The executor's `SANDBOX_TIMEOUT` (10 s when unset).
    pub sandbox_timeout: Option<Duration>,
    /// The next this many `/run` requests are rate limited.
    pub rate_limit_next: u32,
    /// Rate limiting answers HTTP 429 (PR #18703) rather than 200 with -429 (before it).
    pub rate_limit_with_429: bool,
    /// Every `/run` answers this instead (status, body text).
    pub canned: Option<(u16, String)>,
    /// Every `/run` waits this long before it answers.
    pub delay: Option<Duration>,
    /// No free container: `/run` answers -10.
    pub busy: bool,
}

#[derive(Clone)]
struct Fake {
    token: Option<String>,
    engine: Arc<LocalProvider>,
    knobs: Arc<Mutex<Knobs>>,
}

pub struct ExecutorManager {
    pub served: Served,
    pub knobs: Arc<Mutex<Knobs>>,
}

impl ExecutorManager {
    pub fn url(&self) -> String {
        self.served.url()
    }
}

fn router(token: Option<&str>) -> (Router, Arc<Mutex<Knobs>>) {
    let knobs = Arc::new(Mutex::new(Knobs::default()));
    let fake = Fake {
        token: token.map(str::to_owned),
        // RAGFlow's defaults: 256m of memory; no output limit at all.
        engine: engine(256, 256 << 20),
        knobs: knobs.clone(),
    };
    let router = Router::new()
        .route(
            "/healthz",
            get(|| async { Json(json!({ "status": "ok" })) }),
        )
        .route("/run", post(run_code))
        .with_state(fake);
    (router, knobs)
}

/// Starts the fake; with `token`, `/run` wants it.
pub async fn start(token: Option<&str>) -> ExecutorManager {
    let (router, knobs) = router(token);
    ExecutorManager {
        served: serve(router).await,
        knobs,
    }
}

/// Starts the fake on `listener` (a port a test reserved first).
pub async fn start_on(listener: tokio::net::TcpListener, token: Option<&str>) -> ExecutorManager {
    let (router, knobs) = router(token);
    ExecutorManager {
        served: serve_on(listener, router).await,
        knobs,
    }
}

fn result(status: &str, stdout: &str, stderr: &str, exit_code: i64) -> Value {
    json!({
        "status": status, "stdout": stdout, "stderr": stderr, "exit_code": exit_code,
        "detail": null, "time_used_ms": null, "memory_used_kb": null,
        "resource_limit_type": null, "unauthorized_access_type": null,
        "runtime_error_type": null, "artifacts": [], "result": null,
    })
}

fn unprocessable(field: &str, kind: &str, message: &str, input: Value) -> Response {
    let detail = json!([{ "type": kind, "loc": ["body", field], "msg": message, "input": input }]);
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(json!({ "detail": detail })),
    )
        .into_response()
}

fn authorized(token: &str, headers: &HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header("authorization").and_then(|v| v.strip_prefix("Bearer ")) == Some(token)
        || header("x-sandbox-token") == Some(token)
}

async fn run_code(
    State(fake): State<Fake>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(token) = &fake.token {
        if !authorized(token, &headers) {
            return (
                StatusCode::UNAUTHORIZED,
                Json(json!({ "detail": "Invalid or missing executor API token" })),
            )
                .into_response();
        }
    }
    let knobs = {
        let mut knobs = fake.knobs.lock().unwrap();
        let current = knobs.clone();
        knobs.rate_limit_next = knobs.rate_limit_next.saturating_sub(1);
        current
    };
    if let Some(delay) = knobs.delay {
        tokio::time::sleep(delay).await;
    }
    if let Some((status, text)) = knobs.canned {
        return (StatusCode::from_u16(status).unwrap(), text).into_response();
    }
    if knobs.rate_limit_next > 0 {
        let text = "Too many requests, please try again later";
        let mut body = result("program_runner_error", "", text, -429);
        body["detail"] = json!(text);
        let status = if knobs.rate_limit_with_429 {
            StatusCode::TOO_MANY_REQUESTS
        } else {
            StatusCode::OK
        };
        return (status, [("retry-after", "1")], Json(body)).into_response();
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return unprocessable("0", "json_invalid", "JSON decode error", Value::Null);
    };
    let Some(code_b64) = request.get("code_b64").and_then(Value::as_str) else {
        return unprocessable("code_b64", "missing", "Field required", Value::Null);
    };
    let Ok(code) = STANDARD.decode(code_b64) else {
        return unprocessable(
            "code_b64",
            "value_error",
            "Value error, Invalid base64 encoding",
            json!(code_b64),
        );
    };
    let language = match request
        .get("language")
        .and_then(Value::as_str)
        .unwrap_or("python")
    {
        "python" => Language::Python,
        "nodejs" => Language::Javascript,
        other => {
            return unprocessable(
                "language",
                "enum",
                "Input should be 'python' or 'nodejs'",
                json!(other),
            )
        }
    };
    let arguments = request.get("arguments").cloned().unwrap_or(json!({}));
    if knobs.busy {
        let mut body = result("program_runner_error", "", "Container pool is busy", -10);
        body["detail"] = json!("no_available_container");
        return Json(body).into_response();
    }
    let language_name = match language {
        Language::Python => "python",
        Language::Javascript => "nodejs",
    };
    let issues = analyze(&code, language_name).await;
    if !issues.is_empty() {
        let lines: Vec<String> = issues
            .iter()
            .map(|(issue, line)| format!("Line {line}: {issue}"))
            .collect();
        let mut body = result("program_runner_error", "", &lines.join("\n"), -999);
        body["detail"] = json!("Code is unsafe");
        return Json(body).into_response();
    }
    let timeout = knobs.sandbox_timeout.unwrap_or(Duration::from_secs(10));
    Json(execute(&fake.engine, language, code, arguments, timeout).await).into_response()
}

async fn execute(
    engine: &LocalProvider,
    language: Language,
    mut code: Vec<u8>,
    arguments: Value,
    timeout: Duration,
) -> Value {
    let args = arguments.to_string().into_bytes();
    let (files, interpreter_args) = match language {
        Language::Python => (
            vec![
                file("main.py", code),
                file("runner.py", PYTHON_RUNNER),
                file("args.json", args),
            ],
            vec!["-I", "-B", "runner.py"],
        ),
        Language::Javascript => {
            code.extend_from_slice(b"\n\nmodule.exports = { main };");
            (
                vec![
                    file("main.js", code),
                    file("runner.js", NODE_RUNNER),
                    file("args.json", args),
                ],
                vec!["runner.js"],
            )
        }
    };
    let raw = match run(engine, language, files, interpreter_args, timeout).await {
        Ok(raw) => raw,
        Err(Error::PoolBusy { .. }) => {
            let mut body = result("program_runner_error", "", "Container pool is busy", -10);
            body["detail"] = json!("no_available_container");
            return body;
        }
        Err(error) => {
            let mut body = result("program_runner_error", "", &error.to_string(), -3);
            body["detail"] = json!("internal_error");
            return body;
        }
    };
    let time_used_ms = raw.elapsed.as_secs_f64() * 1000.0;
    let mut body = match (raw.exit_code, raw.limit) {
        (Some(0), None) => {
            let (stdout, envelope) = strip_result(&raw.stdout);
            let mut body = result("success", &stdout, &raw.stderr, 0);
            body["result"] = envelope.unwrap_or(Value::Null);
            body["artifacts"] = serde_json::to_value(&raw.artifacts).unwrap();
            body
        }
        // Its `timeout` command exits 124; docker exec reports a SIGKILL as 137.
        (Some(124), _) | (_, Some(ExecStatus::Timeout)) => {
            let mut body = result("resource_limit_exceeded", "", "Execution timeout", -124);
            body["resource_limit_type"] = json!("time");
            body
        }
        (None | Some(137), _) => {
            let mut body = result(
                "resource_limit_exceeded",
                "",
                "Memory limit exceeded (killed by OOM)",
                -137,
            );
            body["resource_limit_type"] = json!("memory");
            body
        }
        (Some(code), _) => analyze_error(&raw.stderr, i64::from(code)),
    };
    body["time_used_ms"] = json!(time_used_ms);
    body
}

/// The executor's `analyze_error_result`: what stderr says decides the status.
fn analyze_error(stderr: &str, code: i64) -> Value {
    if stderr.contains("Permission denied") {
        let mut body = result("unauthorized_access", "", stderr, code);
        body["unauthorized_access_type"] = json!("file_access");
        body
    } else if stderr.contains("Operation not permitted") {
        let mut body = result("unauthorized_access", "", stderr, code);
        body["unauthorized_access_type"] = json!("disallowed_syscall");
        body
    } else if stderr.contains("MemoryError") {
        let mut body = result("resource_limit_exceeded", "", stderr, code);
        body["resource_limit_type"] = json!("memory");
        body
    } else {
        let mut body = result("program_error", "", stderr, code);
        body["runtime_error_type"] = json!("nonzero_exit");
        body
    }
}

/// `_extract_result_envelope`: marker lines out of stdout, the last envelope decoded.
fn strip_result(stdout: &str) -> (String, Option<Value>) {
    let mut kept = Vec::new();
    let mut envelope = None;
    for line in stdout.lines() {
        match line.strip_prefix(MARKER) {
            Some(payload) => {
                envelope = STANDARD
                    .decode(payload.trim())
                    .ok()
                    .and_then(|bytes| serde_json::from_slice(&bytes).ok());
            }
            None => kept.push(line),
        }
    }
    let mut text = kept.join("\n");
    if stdout.ends_with('\n') && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    (text, envelope)
}
