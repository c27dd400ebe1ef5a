//! RAGFlow's executor-manager API, wire-compatible: `POST /run` (and `GET /healthz`, shared
//! with our own probe). A RAGFlow instance whose `sandbox.self_managed.endpoint` points here
//! works unchanged. The contract is RAGFlow's executor at HEAD (research notes §3.2 and the
//! measured baseline §4–§5): every key always present, `result` and `artifacts` included,
//! `stdout` holding only what the program printed; 422 in FastAPI's shape for bad input.
//!
//! Kept from RAGFlow: the statuses, exit codes and messages its clients match on. Fixed: the
//! caller must present an API key (`Authorization: Bearer` or `X-Sandbox-Token`, as RAGFlow's
//! PR #18703), `stdout` survives failures, `time_used_ms` is always set, and a time-out or an
//! out-of-memory comes back typed and as fast as the provider reports it.

use axum::{
    body::Bytes,
    extract::{rejection::BytesRejection, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use crate::server::auth::api_key::Refusal;
use crate::{
    model::{
        api_key::Scope,
        execution::{
            ExecRequest, ExecStatus, ExecutionResult, Language, RequestProblem, MAX_CODE_BYTES,
        },
    },
    sandbox::Error as SandboxError,
    server::{
        db::execution::{Caller, Source},
        state::AppState,
    },
};

/// RAGFlow's `CodeExecutionRequest`.
#[derive(ToSchema)]
#[allow(dead_code)] // Documents the body; the handler validates it by hand, FastAPI-style.
pub struct RunRequest {
    /// The program, base64 (strict: the standard alphabet with padding).
    code_b64: String,
    /// `python` or `nodejs` (nothing else: RAGFlow's enum).
    #[schema(example = "python", default = "python")]
    language: Option<String>,
    /// Keyword arguments for `main()`.
    #[schema(value_type = Option<Object>)]
    arguments: Option<Map<String, Value>>,
    /// Ours, not RAGFlow's (whose executor ignores it): the run's time limit in seconds,
    /// 1..600, within the active provider's own. Sent by the `self_managed` provider.
    #[schema(minimum = 1, maximum = 600)]
    timeout: Option<u32>,
}

/// RAGFlow's `CodeExecutionResult`: every key is always present (unset ones are `null`).
#[derive(Debug, PartialEq, Serialize, ToSchema)]
pub struct RunResult {
    /// `success`, `program_error`, `resource_limit_exceeded`, `unauthorized_access`,
    /// `runtime_error` or `program_runner_error`.
    pub status: &'static str,
    pub stdout: String,
    pub stderr: String,
    /// The program's exit code, or RAGFlow's codes: -124 time-out, -137 memory, -10 pool busy,
    /// -3 internal error, -429 rate limited.
    pub exit_code: i32,
    pub detail: Option<String>,
    pub time_used_ms: Option<f64>,
    /// Never measured (as in RAGFlow).
    pub memory_used_kb: Option<f64>,
    /// `time`, `memory`, `output`, or `processes` (ours: too many processes).
    pub resource_limit_type: Option<&'static str>,
    /// `disallowed_syscall` or `file_access`.
    pub unauthorized_access_type: Option<&'static str>,
    /// `signalled` or `nonzero_exit`.
    pub runtime_error_type: Option<&'static str>,
    /// `{name, mime_type, size, content_b64}` for each file the program wrote to `./artifacts/`.
    #[schema(value_type = Vec<Object>)]
    pub artifacts: Value,
    /// `{"present": true, "value": <main()'s return value>, "type": "json"}`, or `null`.
    #[schema(value_type = Option<Object>)]
    pub result: Value,
}

impl RunResult {
    fn runner_error(exit_code: i32, stderr: String, detail: &str) -> Self {
        RunResult {
            status: "program_runner_error",
            stdout: String::new(),
            stderr,
            exit_code,
            detail: Some(detail.to_owned()),
            time_used_ms: None,
            memory_used_kb: None,
            resource_limit_type: None,
            unauthorized_access_type: None,
            runtime_error_type: None,
            artifacts: json!([]),
            result: Value::Null,
        }
    }

    /// The executor's answer to a refused request.
    fn rate_limited() -> Self {
        let text = "Too many requests, please try again later";
        Self::runner_error(-429, text.into(), text)
    }

    fn busy() -> Self {
        Self::runner_error(
            -10,
            "Container pool is busy".into(),
            "no_available_container",
        )
    }

    fn internal(message: String) -> Self {
        Self::runner_error(-3, message, "internal_error")
    }
}

/// Our result in RAGFlow's terms.
pub fn translate(result: ExecutionResult) -> RunResult {
    let mut out = RunResult {
        status: "success",
        stdout: result.stdout,
        stderr: result.stderr,
        exit_code: result.exit_code.unwrap_or(-1),
        detail: None,
        time_used_ms: Some(result.wall_time_ms as f64),
        memory_used_kb: None,
        resource_limit_type: None,
        unauthorized_access_type: None,
        runtime_error_type: None,
        artifacts: serde_json::to_value(&result.artifacts).unwrap_or_else(|_| json!([])),
        result: Value::Null,
    };
    let limit = |out: &mut RunResult, code: i32, kind: &'static str, message: &str| {
        out.status = "resource_limit_exceeded";
        out.exit_code = code;
        out.resource_limit_type = Some(kind);
        if !out.stderr.is_empty() && !out.stderr.ends_with('\n') {
            out.stderr.push('\n');
        }
        out.stderr.push_str(message);
    };
    match result.status {
        ExecStatus::Success => {
            out.exit_code = 0;
            if result.result.present {
                out.result =
                    json!({ "present": true, "value": result.result.value, "type": "json" });
            }
        }
        ExecStatus::ProgramError => {
            out.exit_code = result.exit_code.unwrap_or(1);
            // RAGFlow tells denied file access and denied system calls apart by these texts.
            if out.stderr.contains("Permission denied") || out.stderr.contains("PermissionError") {
                out.status = "unauthorized_access";
                out.unauthorized_access_type = Some("file_access");
            } else if out.stderr.contains("Operation not permitted") {
                out.status = "unauthorized_access";
                out.unauthorized_access_type = Some("disallowed_syscall");
            } else if result.exit_code.is_none() {
                out.status = "program_error";
                out.runtime_error_type = Some("signalled");
            } else {
                out.status = "program_error";
                out.runtime_error_type = Some("nonzero_exit");
            }
        }
        ExecStatus::Timeout => limit(&mut out, -124, "time", "Execution timeout"),
        ExecStatus::MemoryLimit => limit(
            &mut out,
            -137,
            "memory",
            "Memory limit exceeded (killed by OOM)",
        ),
        ExecStatus::OutputLimit => {
            let code = out.exit_code;
            limit(&mut out, code, "output", "Output limit exceeded")
        }
        ExecStatus::ProcessLimit => {
            let code = out.exit_code;
            limit(&mut out, code, "processes", "Process limit exceeded")
        }
        ExecStatus::EgressLimit => {
            let code = out.exit_code;
            limit(&mut out, code, "network", "Network traffic limit exceeded")
        }
        ExecStatus::PoolBusy => return RunResult::busy(),
        ExecStatus::ProviderError => {
            let mut internal = RunResult::internal(out.stderr);
            internal.time_used_ms = out.time_used_ms;
            return internal;
        }
    }
    out
}

/// FastAPI's 422 answer for one bad field: `{"detail": [{type, loc, msg, input}]}`.
#[derive(Debug)]
struct Unprocessable(Value);

impl IntoResponse for Unprocessable {
    fn into_response(self) -> Response {
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "detail": [self.0] })),
        )
            .into_response()
    }
}

fn unprocessable(kind: &str, field: &str, message: &str, input: Option<&Value>) -> Unprocessable {
    let mut error = json!({ "type": kind, "loc": ["body", field], "msg": message });
    if let Some(input) = input {
        error["input"] = input.clone();
    }
    Unprocessable(error)
}

/// Validates a `/run` body as RAGFlow's pydantic model does.
fn parse(body: &[u8]) -> Result<ExecRequest, Unprocessable> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        unprocessable(
            "json_invalid",
            "0",
            &format!("JSON decode error: {e}"),
            None,
        )
    })?;
    let Value::Object(mut fields) = value else {
        return Err(unprocessable(
            "model_attributes_type",
            "body",
            "Input should be a valid dictionary or object to extract fields from",
            Some(&value),
        ));
    };
    let code = match fields.remove("code_b64") {
        Some(Value::String(text)) => match STANDARD.decode(text.as_bytes()) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
                unprocessable(
                    "value_error",
                    "code_b64",
                    "Value error, the decoded code is not UTF-8 text",
                    Some(&Value::String(text.clone())),
                )
            })?,
            Err(e) => {
                return Err(unprocessable(
                    "value_error",
                    "code_b64",
                    &format!("Value error, Invalid base64 encoding: {e}"),
                    Some(&Value::String(text)),
                ))
            }
        },
        Some(other) => {
            return Err(unprocessable(
                "string_type",
                "code_b64",
                "Input should be a valid string",
                Some(&other),
            ))
        }
        None => return Err(unprocessable("missing", "code_b64", "Field required", None)),
    };
    // Checked here too, before the rest of a body that large is looked at.
    if code.len() > MAX_CODE_BYTES {
        return Err(problem_422(RequestProblem::CodeTooLarge {
            bytes: code.len(),
        }));
    }
    let language = match fields.remove("language") {
        None => Language::Python,
        Some(Value::String(name)) if name == "python" => Language::Python,
        Some(Value::String(name)) if name == "nodejs" => Language::Javascript,
        Some(other) => {
            return Err(unprocessable(
                "enum",
                "language",
                "Input should be 'python' or 'nodejs'",
                Some(&other),
            ))
        }
    };
    let arguments = match fields.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(unprocessable(
                "dict_type",
                "arguments",
                "Input should be a valid dictionary",
                Some(&other),
            ))
        }
    };
    let timeout_secs = match fields.remove("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().map(ExecRequest::timeout_from),
        Some(other) => {
            return Err(unprocessable(
                "int_type",
                "timeout",
                TIMEOUT_MESSAGE,
                Some(&other),
            ))
        }
    };
    let request = ExecRequest {
        language,
        code,
        arguments,
        timeout_secs,
    };
    request.check().map_err(problem_422)?;
    Ok(request)
}

const TIMEOUT_MESSAGE: &str = "Input should be a whole number of seconds from 1 to 600";

/// A request over the limits every run meets, in FastAPI's words.
fn problem_422(problem: RequestProblem) -> Unprocessable {
    match problem {
        RequestProblem::CodeTooLarge { .. } => unprocessable(
            "value_error",
            "code_b64",
            &format!("Value error, the code is larger than {MAX_CODE_BYTES} bytes"),
            None,
        ),
        RequestProblem::TimeoutOutOfRange { secs } => unprocessable(
            "int_type",
            "timeout",
            TIMEOUT_MESSAGE,
            Some(&Value::from(secs)),
        ),
        // /run names no environment; kept for completeness.
        other => unprocessable("value_error", "environment", &other.to_string(), None),
    }
}

/// Run code: RAGFlow's executor-manager `/run`.
#[utoipa::path(
    post,
    path = "/run",
    tag = "ragflow",
    request_body = RunRequest,
    security(("api_key" = ["execute"]), ("sandbox_token" = ["execute"])),
    responses(
        (status = 200, description = "Every handled outcome, as RAGFlow's executor answers (see `status` and `exit_code`)", body = RunResult),
        (status = 401, description = "No API key, or an unknown or revoked one"),
        (status = 403, description = "The key lacks the `execute` scope"),
        (status = 413, description = "The body is larger than the server accepts"),
        (status = 422, description = "Bad base64, bad language, arguments not an object (FastAPI's shape)"),
        (status = 429, description = "The key is over its rate limit: exit code -429, with `Retry-After`", body = RunResult),
    )
)]
#[tracing::instrument(name = "POST /run", skip_all)]
pub async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let key = match state.api_keys.authorize(&headers, Scope::Execute).await {
        Ok(key) => key,
        Err(Refusal::RateLimited(wait)) => {
            let mut response = (
                StatusCode::TOO_MANY_REQUESTS,
                Json(RunResult::rate_limited()),
            )
                .into_response();
            let secs = wait.as_secs().max(1).to_string();
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_str(&secs).expect("digits are a valid header"),
            );
            return response;
        }
        Err(refusal) => return refusal_response(refusal),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return super::error::ApiError::body(rejection).into_response(),
    };
    let request = match parse(&body) {
        Ok(request) => request,
        Err(unprocessable) => return unprocessable.into_response(),
    };
    let outcome = state
        .sandbox
        .execute(&request, &Caller::api_key(&key.name, Source::Run))
        .await;
    let result = match outcome {
        Ok(run) => translate(run.result),
        Err(SandboxError::PoolBusy { .. }) => RunResult::busy(),
        // The caller learns what kind of failure it was, in the words `/api/v1/execute` uses;
        // the provider's own text (upstream bodies, addresses) goes only to the log and the
        // history row.
        Err(error) => {
            tracing::warn!(%error, "a /run request failed in the provider");
            RunResult::internal(super::error::ApiError::from(error).message)
        }
    };
    Json(result).into_response()
}

/// FastAPI's `HTTPException` shape, as RAGFlow's token check answers.
fn refusal_response(refusal: Refusal) -> Response {
    let status = refusal.status();
    let mut response = (status, Json(json!({ "detail": refusal.message() }))).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::execution::ReturnValue;

    fn result(status: ExecStatus, exit_code: Option<i32>, stderr: &str) -> ExecutionResult {
        ExecutionResult {
            status,
            stdout: "printed\n".into(),
            stderr: stderr.into(),
            exit_code,
            wall_time_ms: 42,
            result: ReturnValue::absent(),
            artifacts: vec![],
            queue_wait_ms: None,
            metadata: Map::new(),
            egress: None,
        }
    }

    #[test]
    fn outcomes_take_ragflows_statuses_and_codes() {
        let cases = [
            (
                result(ExecStatus::Timeout, None, ""),
                "resource_limit_exceeded",
                -124,
                Some("time"),
                "Execution timeout",
            ),
            (
                result(ExecStatus::MemoryLimit, None, ""),
                "resource_limit_exceeded",
                -137,
                Some("memory"),
                "Memory limit exceeded (killed by OOM)",
            ),
            (
                result(ExecStatus::ProgramError, Some(1), "ValueError: boom\n"),
                "program_error",
                1,
                None,
                "ValueError: boom\n",
            ),
            (
                result(ExecStatus::PoolBusy, None, ""),
                "program_runner_error",
                -10,
                None,
                "Container pool is busy",
            ),
            (
                result(ExecStatus::ProviderError, None, "it broke"),
                "program_runner_error",
                -3,
                None,
                "it broke",
            ),
        ];
        for (input, status, code, limit, stderr) in cases {
            let out = translate(input);
            assert_eq!(
                (out.status, out.exit_code, out.resource_limit_type),
                (status, code, limit)
            );
            assert_eq!(out.stderr, stderr);
        }
    }

    #[test]
    fn failures_keep_what_was_printed_and_the_time() {
        let out = translate(result(ExecStatus::ProgramError, Some(2), "boom"));
        assert_eq!(out.stdout, "printed\n");
        assert_eq!(out.time_used_ms, Some(42.0));
        assert_eq!(out.runtime_error_type, Some("nonzero_exit"));
        let denied = translate(result(
            ExecStatus::ProgramError,
            Some(1),
            "PermissionError: [Errno 13] Permission denied: '/etc/x'",
        ));
        assert_eq!(
            (denied.status, denied.unauthorized_access_type),
            ("unauthorized_access", Some("file_access"))
        );
    }

    #[test]
    fn a_success_carries_the_result_envelope() {
        let mut ok = result(ExecStatus::Success, Some(0), "");
        ok.result = ReturnValue::of(json!({"a": 1}));
        let out = translate(ok);
        assert_eq!(
            out.result,
            json!({"present": true, "value": {"a": 1}, "type": "json"})
        );
        assert_eq!(out.artifacts, json!([]));
    }

    #[test]
    fn an_optional_timeout_becomes_the_runs_time_limit() {
        let with = parse(br#"{"code_b64": "cHJpbnQoMSk=", "timeout": 3}"#).unwrap();
        let without = parse(br#"{"code_b64": "cHJpbnQoMSk="}"#).unwrap();

        assert_eq!((with.timeout_secs, without.timeout_secs), (Some(3), None));
    }

    #[test]
    fn bad_bodies_get_fastapi_422s() {
        for body in [
            r#"{"code_b64": "not base64!!"}"#,
            r#"{"code_b64": "cHJpbnQoMSk=", "language": "javascript"}"#,
            r#"{"code_b64": "cHJpbnQoMSk=", "arguments": [1]}"#,
            r#"{"code_b64": "cHJpbnQoMSk=", "timeout": 0}"#,
            r#"{"code_b64": "cHJpbnQoMSk=", "timeout": "5"}"#,
            r#"{}"#,
            "{",
        ] {
            let response = parse(body.as_bytes()).unwrap_err().into_response();
            assert_eq!(
                response.status(),
                StatusCode::UNPROCESSABLE_ENTITY,
                "{body}"
            );
        }
        let ok = parse(br#"{"code_b64": "cHJpbnQoMSk=", "language": "nodejs"}"#).unwrap();
        assert_eq!(
            (ok.code.as_str(), ok.language),
            ("print(1)", Language::Javascript)
        );
    }
}
