//! The REST execute API: `POST /api/v1/execute` and `GET /api/v1/providers`.

use axum::{
    body::Bytes,
    extract::{rejection::BytesRejection, State},
    http::HeaderMap,
    Json,
};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::error::ApiError;
use crate::{
    model::{
        api_key::Scope,
        execution::{ExecRequest, Language, RequestProblem, Run, MAX_CODE_BYTES},
    },
    server::{
        db::execution::{Caller, Source},
        state::AppState,
    },
};

/// A program to run. Python's `main(**arguments)` or JavaScript's `main(arguments)` is called
/// when the code defines it; its return value comes back as `result`.
#[derive(ToSchema)]
#[allow(dead_code)] // Documents the body; the handler parses it by hand for precise messages.
pub struct ExecuteRequest {
    /// `python` or `javascript` (`python3`, `nodejs`, `node`, `js` are accepted too).
    #[schema(example = "python")]
    language: String,
    /// The program (at most 1 MiB).
    #[schema(example = "def main(name):\n    return {\"hi\": name}\n")]
    code: String,
    /// Keyword arguments for `main()`; a JSON object.
    #[schema(value_type = Option<Object>)]
    arguments: Option<Map<String, Value>>,
    /// Seconds, 1..600; the provider's configured timeout caps it.
    timeout: Option<u64>,
    /// A package environment by name (see `GET /api/v1/environments`); absent: the one the
    /// active provider's settings give. Refused when unknown or not built yet.
    #[schema(example = "default")]
    environment: Option<String>,
}

/// How a run ended. A program that fails or times out is still a `200` with its status.
#[derive(Serialize, ToSchema)]
pub struct ExecuteResponse {
    /// `success`, `program_error`, `timeout`, `memory_limit`, `output_limit`, `process_limit`,
    /// `egress_limit`, `pool_busy` or `provider_error`.
    #[schema(example = "success")]
    pub status: String,
    /// What the program printed (the runner's result line removed).
    pub stdout: String,
    pub stderr: String,
    /// `null` when the process was killed or never ran.
    pub exit_code: Option<i32>,
    /// Wall time of the run in seconds.
    pub execution_time: f64,
    /// What `main()` returned: `{present, value, type}`.
    #[schema(value_type = Object)]
    pub result: Value,
    /// Files the program wrote to `./artifacts/`: `{name, mime_type, size, content_b64}`.
    #[schema(value_type = Vec<Object>)]
    pub artifacts: Value,
    /// The provider that ran the code.
    pub provider: String,
    /// On a provider with an allow-list: `{connections: [{protocol, name, address, port,
    /// verdict, reason, bytes_out, bytes_in}], egress_denied, bytes_out, bytes_in,
    /// limit_reached}`; `egress_denied` counts the refused attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub egress: Option<Value>,
}

impl From<Run> for ExecuteResponse {
    fn from(Run { provider, result }: Run) -> Self {
        ExecuteResponse {
            status: result.status.id().to_owned(),
            stdout: result.stdout,
            stderr: result.stderr,
            exit_code: result.exit_code,
            execution_time: result.wall_time_ms as f64 / 1000.0,
            result: serde_json::to_value(result.result).unwrap_or(Value::Null),
            artifacts: serde_json::to_value(result.artifacts).unwrap_or(Value::Null),
            egress: result
                .egress
                .map(|e| serde_json::to_value(e).unwrap_or(Value::Null)),
            provider,
        }
    }
}

/// Reads an execute request, with a message that says exactly what is wrong.
pub fn parse_request(body: &[u8]) -> Result<ExecRequest, ApiError> {
    parse_body(body).map(|(request, _)| request)
}

/// [`parse_request`] and the environment the request names, if it names one.
pub fn parse_body(body: &[u8]) -> Result<(ExecRequest, Option<String>), ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(mut fields) = value else {
        return Err(ApiError::invalid("the body must be a JSON object"));
    };
    let environment = match fields.remove("environment") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if !name.trim().is_empty() => Some(name.trim().to_owned()),
        Some(_) => {
            return Err(ApiError::invalid(
                "environment must be the name of an environment, e.g. \"default\"",
            ))
        }
    };
    let language = match fields.remove("language") {
        Some(Value::String(name)) => name.parse::<Language>().map_err(ApiError::invalid)?,
        Some(_) => return Err(ApiError::invalid("language must be a string")),
        None => {
            return Err(ApiError::invalid(
                "language is required: python or javascript",
            ))
        }
    };
    let code = match fields.remove("code") {
        Some(Value::String(code)) => code,
        Some(_) => return Err(ApiError::invalid("code must be a string")),
        None => return Err(ApiError::invalid("code is required")),
    };
    // Checked here too, before the rest of a body that large is looked at.
    if code.len() > MAX_CODE_BYTES {
        return Err(ApiError::invalid(
            RequestProblem::CodeTooLarge { bytes: code.len() }.to_string(),
        ));
    }
    let arguments =
        match fields.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(ApiError::invalid(
                "arguments must be a JSON object of keyword arguments, e.g. {\"name\": \"Ada\"}",
            )),
        };
    let timeout_secs = match fields.remove("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(secs) => Some(ExecRequest::timeout_from(secs)),
            None => {
                return Err(ApiError::invalid(
                    RequestProblem::TimeoutOutOfRange { secs: 0 }.to_string(),
                ))
            }
        },
        Some(_) => return Err(ApiError::invalid("timeout must be a number of seconds")),
    };
    let request = ExecRequest {
        language,
        code,
        arguments,
        timeout_secs,
    };
    request
        .check()
        .map_err(|problem| ApiError::invalid(problem.to_string()))?;
    Ok((request, environment))
}

/// Run code through the active provider.
#[utoipa::path(
    post,
    path = "/api/v1/execute",
    tag = "execute",
    request_body = ExecuteRequest,
    security(("api_key" = ["execute"])),
    responses(
        (status = 200, description = "The run ended (successfully or not: see `status`)", body = ExecuteResponse),
        (status = 400, description = "Invalid input: unknown language, arguments not an object, code too large, bad timeout", body = super::error::ErrorBody),
        (status = 401, description = "No API key, or an unknown or revoked one", body = super::error::ErrorBody),
        (status = 403, description = "The key lacks the `execute` scope", body = super::error::ErrorBody),
        (status = 413, description = "The body is larger than the server accepts", body = super::error::ErrorBody),
        (status = 429, description = "The key is over its rate limit, or every sandbox is busy; see `Retry-After`", body = super::error::ErrorBody),
        (status = 502, description = "The provider is unreachable or failed", body = super::error::ErrorBody),
        (status = 503, description = "No provider is active", body = super::error::ErrorBody),
        (status = 504, description = "The provider itself did not answer in time", body = super::error::ErrorBody),
    )
)]
#[tracing::instrument(name = "POST /api/v1/execute", skip_all)]
pub async fn execute(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ExecuteResponse>, ApiError> {
    let key = state.api_keys.authorize(&headers, Scope::Execute).await?;
    let body = body.map_err(ApiError::body)?;
    let (request, environment) = parse_body(&body)?;
    let run = state
        .sandbox
        .execute_in(
            &request,
            &Caller::api_key(&key.name, Source::Rest),
            environment.as_deref(),
        )
        .await?;
    Ok(Json(run.into()))
}

/// The package environments: spec, status, the lock of the build in use, its verification
/// per provider, and the providers that use each.
#[utoipa::path(
    get,
    path = "/api/v1/environments",
    tag = "execute",
    security(("api_key" = ["admin"])),
    responses(
        (status = 200, description = "`{\"environments\": [...]}`, the default first"),
        (status = 401, description = "No API key, or an unknown or revoked one", body = super::error::ErrorBody),
        (status = 403, description = "The key lacks the `admin` scope", body = super::error::ErrorBody),
    )
)]
#[tracing::instrument(name = "GET /api/v1/environments", skip_all)]
pub async fn environments(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    state.api_keys.authorize(&headers, Scope::Admin).await?;
    let list = state
        .environments
        .list()
        .await
        .map_err(ApiError::internal)?;
    let rows: Vec<Value> = list
        .iter()
        .map(|env| Value::Object(crate::server::environments::to_json(env)))
        .collect();
    Ok(Json(serde_json::json!({ "environments": rows })))
}

/// The providers this console knows, and the active one with its languages and health.
#[derive(Serialize, ToSchema)]
pub struct ProvidersResponse {
    pub active: Option<ActiveProvider>,
    pub providers: Vec<ProviderSummary>,
    pub replica: ReplicaInfo,
}

/// The console that answered, and what its limits belong to.
#[derive(Serialize, ToSchema)]
pub struct ReplicaInfo {
    /// Its name among replicas (`--replica-name`, else host name and process id).
    pub name: String,
    /// `per_replica`: admission (local run slots, docker warm pools and their queues) belongs
    /// to each console, so N replicas behind one address admit N times as many runs.
    /// Sessions, settings, API keys and their rate limit are shared through the database.
    pub admission: String,
    /// `sqlite` or `postgresql`.
    pub database: String,
}

#[derive(Serialize, ToSchema)]
pub struct ActiveProvider {
    pub kind: String,
    pub name: String,
    /// Languages it runs: `python`, `javascript`.
    pub languages: Vec<String>,
    pub healthy: bool,
    pub health_message: String,
}

#[derive(Serialize, ToSchema)]
pub struct ProviderSummary {
    pub kind: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub active: bool,
}

/// List the providers, with the active one's health.
#[utoipa::path(
    get,
    path = "/api/v1/providers",
    tag = "execute",
    security(("api_key" = ["execute", "admin"])),
    responses(
        (status = 200, description = "Providers", body = ProvidersResponse),
        (status = 401, description = "No API key, or an unknown or revoked one", body = super::error::ErrorBody),
        (status = 403, description = "The key has neither scope", body = super::error::ErrorBody),
    )
)]
#[tracing::instrument(name = "GET /api/v1/providers", skip_all)]
pub async fn providers(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<ProvidersResponse>, ApiError> {
    state
        .api_keys
        .authorize_any(&headers, &[Scope::Execute, Scope::Admin])
        .await?;
    let status = state.sandbox.active_status().await;
    let active = status.running.map(|running| ActiveProvider {
        kind: running.kind,
        name: running.name,
        languages: running
            .languages
            .iter()
            .map(|l| l.id().to_owned())
            .collect(),
        healthy: status.health.healthy,
        health_message: status.health.message,
    });
    let active_kind = active.as_ref().map(|a| a.kind.clone());
    let providers = state
        .sandbox
        .provider_infos()
        .into_iter()
        .map(|info| ProviderSummary {
            active: active_kind.as_deref() == Some(info.kind.as_str()),
            kind: info.kind,
            name: info.name,
            description: info.description,
            tags: info.tags,
        })
        .collect();
    let replica = ReplicaInfo {
        name: state.replica.to_string(),
        admission: "per_replica".to_owned(),
        database: match crate::server::db::Backend::of(&state.pool) {
            crate::server::db::Backend::Sqlite => "sqlite",
            crate::server::db::Backend::Postgres => "postgresql",
        }
        .to_owned(),
    };
    Ok(Json(ProvidersResponse {
        active,
        providers,
        replica,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(body: &str) -> String {
        parse_request(body.as_bytes()).unwrap_err().message
    }

    #[test]
    fn requests_are_checked_field_by_field() {
        assert!(error_of("nope").contains("not valid JSON"));
        assert!(error_of("[]").contains("JSON object"));
        assert!(error_of(r#"{"code": "x"}"#).contains("language is required"));
        assert!(error_of(r#"{"language": "ruby", "code": "x"}"#).contains("python or javascript"));
        assert!(error_of(r#"{"language": "python"}"#).contains("code is required"));
        assert!(
            error_of(r#"{"language": "python", "code": "x", "arguments": [1]}"#)
                .contains("JSON object")
        );
        assert!(
            error_of(r#"{"language": "python", "code": "x", "timeout": 0}"#)
                .contains("from 1 to 600")
        );
        assert!(
            error_of(r#"{"language": "python", "code": "x", "timeout": "5"}"#)
                .contains("number of seconds")
        );
    }

    #[test]
    fn a_full_request_parses() {
        let request = parse_request(
            br#"{"language": "nodejs", "code": "x", "arguments": {"a": true}, "timeout": 5}"#,
        )
        .unwrap();
        assert_eq!(request.language, Language::Javascript);
        assert_eq!(request.arguments["a"], Value::Bool(true));
        assert_eq!(request.timeout_secs, Some(5));
    }

    #[test]
    fn code_over_the_limit_is_refused() {
        let body =
            serde_json::json!({"language": "python", "code": "#".repeat(MAX_CODE_BYTES + 1)});
        let error = parse_request(body.to_string().as_bytes()).unwrap_err();
        assert!(error.message.contains("the limit is"), "{}", error.message);
    }
}
