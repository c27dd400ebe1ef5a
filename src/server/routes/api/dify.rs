//! Dify's code-execution API, wire-compatible with `langgenius/dify-sandbox`: a Dify whose
//! `CODE_EXECUTION_ENDPOINT` is `http://<console>/dify` and whose `CODE_EXECUTION_API_KEY` is
//! one of our API keys (with the `execute` scope) runs its code nodes here unchanged.
//!
//! The contract (research notes, peer landscape §6.1): `X-Api-Key`, else 401 with an empty
//! body; `{language: python3|nodejs, code, preload, enable_network}`; every handled outcome is
//! HTTP 200 `{code, message, data}`, with `code` 0 and `data {stdout, stderr, error,
//! exit_code}` for a run, `error` empty when the program exited 0; 400 for a language it does
//! not know; 503 when full. Dify's code node sends a whole script that calls its own `main`,
//! so the code runs as a script (see `runner::script`), never through our main() protocol.
//! `preload` is dropped, as dify-sandbox does unless its `enable_preload` is set.

use axum::{
    body::Bytes,
    extract::{rejection::BytesRejection, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};

use crate::{
    model::{
        api_key::Scope,
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    },
    sandbox::{runner::script, Error as SandboxError},
    server::{
        auth::api_key::Refusal,
        db::execution::{Caller, Source},
        state::AppState,
    },
};

/// Dify's run request.
#[derive(Deserialize, ToSchema)]
pub struct DifyRunRequest {
    /// `python3` or `nodejs`.
    language: String,
    /// The whole script (Dify's template calls `main(**inputs)` itself).
    code: String,
    /// Ignored, as dify-sandbox ignores it unless its `enable_preload` is on.
    #[serde(default)]
    #[allow(dead_code)]
    preload: Option<String>,
    /// Refused (`code -400`) when the active provider gives programs no network.
    #[serde(default)]
    enable_network: bool,
}

/// Dify's envelope: `code` 0 and `message` "success", or a negative code and the reason.
fn envelope(code: i32, message: &str, data: Value) -> Json<Value> {
    Json(json!({ "code": code, "message": message, "data": data }))
}

fn failure(status: StatusCode, code: i32, message: &str) -> Response {
    (status, envelope(code, message, Value::Null)).into_response()
}

/// A refused key as dify-sandbox answers one: 401 with an empty body (403 for a key without
/// the scope, 503 for one over its rate limit, which Dify's caller retries).
fn refused(refusal: Refusal) -> Response {
    match refusal {
        Refusal::RateLimited(_) => {
            failure(StatusCode::SERVICE_UNAVAILABLE, -503, "Too many requests")
        }
        Refusal::Unavailable => failure(
            StatusCode::SERVICE_UNAVAILABLE,
            -503,
            "the key store is unavailable; retry shortly",
        ),
        other => other.status().into_response(),
    }
}

/// Run a script: Dify's `POST /v1/sandbox/run`.
#[utoipa::path(
    post,
    path = "/dify/v1/sandbox/run",
    tag = "dify",
    operation_id = "dify_run",
    request_body = DifyRunRequest,
    security(("dify_key" = ["execute"])),
    responses(
        (status = 200, description = "`{code: 0, message: \"success\", data: {stdout, stderr, error, exit_code}}`; a refused body or a failed provider: `code` -400 or -500 and `message`"),
        (status = 400, description = "`{code: -400, message: \"unsupported language\", data: null}`"),
        (status = 401, description = "No key, or an unknown or revoked one (empty body)"),
        (status = 403, description = "The key lacks the `execute` scope (empty body)"),
        (status = 503, description = "Every sandbox is busy, or the key is over its rate limit: `{code: -503, message}`"),
    )
)]
#[tracing::instrument(name = "POST /dify/v1/sandbox/run", skip_all)]
pub async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let key = match state.api_keys.authorize(&headers, Scope::Execute).await {
        Ok(key) => key,
        Err(refusal) => return refused(refusal),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return super::error::ApiError::body(rejection).into_response(),
    };
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or("").trim() == "application/json");
    if !json_body {
        return failure(
            StatusCode::OK,
            -400,
            "the body must be JSON, sent as Content-Type: application/json",
        );
    }
    let request: DifyRunRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return failure(StatusCode::OK, -400, &e.to_string()),
    };
    let language = match request.language.as_str() {
        "python3" => Language::Python,
        "nodejs" => Language::Javascript,
        _ => return failure(StatusCode::BAD_REQUEST, -400, "unsupported language"),
    };
    if request.enable_network
        && state
            .sandbox
            .active()
            .is_some_and(|(_, provider)| !provider.offers_network())
    {
        return failure(
            StatusCode::OK,
            -400,
            "network is disabled, please enable it in the configuration",
        );
    }
    let exec = ExecRequest {
        language,
        code: script::as_main_program(language, &request.code),
        arguments: Default::default(),
        timeout_secs: None,
    };
    // The limit applies to the script as sent, not to the few lines that wrap it.
    if let Err(problem) = (ExecRequest {
        code: request.code,
        ..exec.clone()
    })
    .check()
    {
        return failure(StatusCode::OK, -400, &problem.to_string());
    }
    let outcome = state
        .sandbox
        .execute(&exec, &Caller::api_key(&key.name, Source::Dify))
        .await;
    match outcome {
        Ok(run) if run.result.status == ExecStatus::PoolBusy => {
            failure(StatusCode::SERVICE_UNAVAILABLE, -503, "Too many requests")
        }
        Ok(run) => (StatusCode::OK, envelope(0, "success", data(run.result))).into_response(),
        Err(SandboxError::PoolBusy { .. }) => {
            failure(StatusCode::SERVICE_UNAVAILABLE, -503, "Too many requests")
        }
        Err(error) => {
            tracing::warn!(%error, "a Dify run failed in the provider");
            let message = super::error::ApiError::from(error).message;
            failure(StatusCode::OK, -500, &message)
        }
    }
}

/// A run in Dify's terms: `error` is empty when the program exited 0 (whatever it wrote to
/// stderr); otherwise "process exited with code N", then why it was stopped, then stderr.
fn data(result: ExecutionResult) -> Value {
    let exit_code = match result.status {
        ExecStatus::Success => 0,
        _ => result.exit_code.filter(|code| *code != 0).unwrap_or(-1),
    };
    let stopped = match result.status {
        ExecStatus::Timeout => Some("error: the program ran past its time limit and was stopped"),
        ExecStatus::MemoryLimit => Some("error: the program ran out of memory and was stopped"),
        ExecStatus::OutputLimit => Some("error: the program's output went over the limit"),
        ExecStatus::ProcessLimit => Some("error: the program started too many processes"),
        ExecStatus::EgressLimit => Some("error: the program went over its network traffic limit"),
        ExecStatus::ProviderError => Some("error: the sandbox provider failed"),
        _ => None,
    };
    let error = if exit_code == 0 {
        String::new()
    } else {
        let mut error = format!("process exited with code {exit_code}");
        for detail in [stopped.unwrap_or(""), result.stderr.as_str()] {
            if detail.is_empty() {
                continue;
            }
            if !error.ends_with('\n') {
                error.push('\n');
            }
            error.push_str(detail);
        }
        error
    };
    json!({
        "stdout": result.stdout,
        "stderr": result.stderr,
        "error": error,
        "exit_code": exit_code,
    })
}

/// The query of the dependency list.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DependenciesQuery {
    /// `python3` (PyPI packages) or `nodejs` (npm packages).
    language: String,
}

/// The packages programs can import: Dify's `GET /v1/sandbox/dependencies`, from the lock of
/// the active provider's package environment (none for a provider without environments).
#[utoipa::path(
    get,
    path = "/dify/v1/sandbox/dependencies",
    tag = "dify",
    operation_id = "dify_dependencies",
    params(DependenciesQuery),
    security(("dify_key" = ["execute"])),
    responses(
        (status = 200, description = "`{code: 0, message: \"success\", data: {dependencies: [{name, version}]}}`"),
        (status = 400, description = "`{code: -400, message: \"unsupported language\"}`"),
        (status = 401, description = "No key, or an unknown or revoked one (empty body)"),
    )
)]
pub async fn dependencies(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<DependenciesQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Err(refusal) = state.api_keys.authorize(&headers, Scope::Execute).await {
        return refused(refusal);
    }
    let ecosystem = match query.as_ref().map(|q| q.language.as_str()) {
        Ok("python3") => "pypi",
        Ok("nodejs") => "npm",
        _ => return failure(StatusCode::BAD_REQUEST, -400, "unsupported language"),
    };
    let packages = match active_lock(&state).await {
        Ok(lock) => lock,
        Err(error) => {
            tracing::warn!(%error, "the package list cannot be read");
            return failure(StatusCode::OK, -500, "the package list cannot be read");
        }
    };
    let dependencies: Vec<Value> = packages
        .into_iter()
        .filter(|package| package.ecosystem == ecosystem)
        .map(|package| json!({ "name": package.name, "version": package.version }))
        .collect();
    (
        StatusCode::OK,
        envelope(0, "success", json!({ "dependencies": dependencies })),
    )
        .into_response()
}

/// The lock of the environment the active provider runs programs in: the one its settings
/// name, else the default one; nothing when it has no environments or no ready build.
async fn active_lock(
    state: &AppState,
) -> Result<Vec<crate::model::environment::LockedPackage>, sqlx::Error> {
    let Some((kind, _)) = state.sandbox.active() else {
        return Ok(Vec::new());
    };
    let Some(schema) = state.sandbox.schema_of(&kind) else {
        return Ok(Vec::new());
    };
    if !schema.fields.iter().any(|field| field.key == "environment") {
        return Ok(Vec::new());
    }
    let named = state
        .sandbox
        .stored_field(&kind, "environment")
        .await
        .and_then(|v| v.as_str().map(str::to_owned))
        .filter(|name| !name.is_empty());
    let environments = state.environments.list().await?;
    let environment = environments.into_iter().find(|env| match &named {
        Some(name) => &env.name == name,
        None => env.is_default,
    });
    Ok(environment
        .and_then(|env| env.ready)
        .map(|build| build.lock)
        .unwrap_or_default())
}

/// Dify's probe, open to all: `"ok"`.
#[utoipa::path(get, path = "/dify/health", tag = "dify", operation_id = "dify_health",
    responses((status = 200, description = "The JSON string `\"ok\"`")))]
pub async fn health() -> Json<&'static str> {
    Json("ok")
}
