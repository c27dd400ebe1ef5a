//! RAGFlow's sandbox admin API, wire-compatible: the five endpoints under
//! `/api/v1/admin/sandbox` with RAGFlow's envelope `{code, message, data}` and its messages
//! (research notes §4), but our validation, our encrypted secrets (never returned), and a
//! key with the `admin` scope instead of RAGFlow's admin login token.

use axum::{
    body::Bytes,
    extract::{rejection::BytesRejection, Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::{json, Map, Value};

use crate::server::auth::api_key::Refusal;
use crate::{
    model::{
        api_key::Scope,
        schema::{ConfigSchema, FieldErrors, FieldKind, FORM_ERROR},
        settings::SaveOutcome,
    },
    server::{
        db::execution::{Caller, Source},
        state::AppState,
    },
};

/// RAGFlow's success envelope.
fn success(data: Value, message: &str) -> Response {
    Json(json!({ "code": 0, "message": message, "data": data })).into_response()
}

/// A refused request in RAGFlow's envelope: `{code, message, data: null}`.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    code: u16,
    message: String,
    /// For the log only (`error::log_failures`).
    detail: Option<String>,
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = json!({ "code": self.code, "message": self.message, "data": null });
        let mut response = (self.status, Json(body)).into_response();
        if let Some(detail) = self.detail {
            super::error::note_failure(&mut response, "internal", detail);
        }
        response
    }
}

/// RAGFlow's `error_response` for a bad request: HTTP 400 with `code` 400.
fn failure(message: impl Into<String>, code: u16) -> Failure {
    Failure {
        status: StatusCode::BAD_REQUEST,
        code,
        message: message.into(),
        detail: None,
    }
}

/// A failure on our side (the database, say) keeps RAGFlow's envelope with `code` 500, and is
/// a real 5xx on the wire: a client must not take it for a mistake in its request.
fn internal(context: &str, error: impl std::fmt::Display) -> Failure {
    Failure {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        code: 500,
        message: format!("{context}: the server log has the details"),
        detail: Some(format!("{context}: {error}")),
    }
}

/// Auth failures keep the envelope, with the real HTTP status.
fn refused(refusal: Refusal) -> Failure {
    let status = refusal.status();
    Failure {
        status,
        code: status.as_u16(),
        message: refusal.message(),
        detail: None,
    }
}

/// The admin key's caller (`source` names what it does), or the refusal to answer with.
async fn admin_key(
    state: &AppState,
    headers: &HeaderMap,
    source: Source,
) -> Result<Caller, Failure> {
    state
        .api_keys
        .authorize(headers, Scope::Admin)
        .await
        .map(|key| Caller::api_key(&key.name, source))
        .map_err(refused)
}

/// A schema as RAGFlow's `get_config_schema()` returns it: field → attributes.
pub fn ragflow_schema(schema: &ConfigSchema) -> Value {
    let mut fields = Map::new();
    for field in &schema.fields {
        let mut spec = Map::new();
        let kind = match &field.kind {
            FieldKind::String
            | FieldKind::Multiline
            | FieldKind::Secret
            | FieldKind::SecretText => "string",
            FieldKind::Select { .. } => "string",
            FieldKind::Integer { .. } => "integer",
            FieldKind::Boolean => "boolean",
            FieldKind::Json => "json",
        };
        spec.insert("type".into(), json!(kind));
        spec.insert("required".into(), json!(field.required));
        spec.insert("label".into(), json!(field.label));
        spec.insert("description".into(), json!(field.description));
        if let Some(placeholder) = &field.placeholder {
            spec.insert("placeholder".into(), json!(placeholder));
        }
        if let Some(default) = &field.default {
            spec.insert("default".into(), default.clone());
        }
        match &field.kind {
            FieldKind::Integer { min, max } => {
                if let Some(min) = min {
                    spec.insert("min".into(), json!(min));
                }
                if let Some(max) = max {
                    spec.insert("max".into(), json!(max));
                }
            }
            FieldKind::Secret => {
                spec.insert("secret".into(), json!(true));
            }
            FieldKind::SecretText => {
                spec.insert("secret".into(), json!(true));
                spec.insert("multiline".into(), json!(true));
            }
            FieldKind::Select { options } => {
                let values: Vec<_> = options.iter().map(|o| o.value.clone()).collect();
                spec.insert("options".into(), json!(values));
            }
            _ => {}
        }
        if field.readonly {
            spec.insert("readonly".into(), json!(true));
        }
        fields.insert(field.key.clone(), Value::Object(spec));
    }
    Value::Object(fields)
}

/// Field errors as one line: `Field 'timeout': Enter a number from 5 to 300.`
fn describe(errors: &FieldErrors) -> String {
    errors
        .iter()
        .map(|(key, message)| {
            if key == FORM_ERROR {
                message.clone()
            } else {
                format!("Field '{key}': {message}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Parses the JSON body of a POST; `Err` is the envelope to answer with.
fn body_object(body: Result<Bytes, BytesRejection>) -> Result<Map<String, Value>, Failure> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Failure {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                code: 413,
                message: "Request body is too large".into(),
                detail: None,
            }
        } else {
            failure(format!("Request body could not be read: {rejection}"), 400)
        }
    })?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(failure("Request body is required", 400));
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Err(failure("Request body is required", 400)),
        Ok(_) => Err(failure("Request body must be a JSON object", 400)),
        Err(e) => Err(failure(format!("Request body is not valid JSON: {e}"), 400)),
    }
}

/// Refuses what is left of a body once its known fields are taken: a typo (`configs`,
/// `set_activ`) must not save defaults or be ignored.
fn nothing_else(body: &Map<String, Value>, known: &str) -> Result<(), Failure> {
    if body.is_empty() {
        return Ok(());
    }
    let mut unknown: Vec<&str> = body.keys().map(String::as_str).collect();
    unknown.sort_unstable();
    Err(failure(
        format!(
            "Unknown fields in the request body: {}. It takes {known}.",
            unknown.join(", ")
        ),
        400,
    ))
}

/// The `provider_type` and `config` of a POST body.
fn provider_and_config(
    state: &AppState,
    body: &mut Map<String, Value>,
) -> Result<(String, Map<String, Value>), Failure> {
    let kind = match body.remove("provider_type") {
        Some(Value::String(kind)) if !kind.trim().is_empty() => kind,
        _ => return Err(failure("provider_type is required", 400)),
    };
    if state.sandbox.schema_of(&kind).is_none() {
        return Err(failure(format!("Unknown provider type: {kind}"), 400));
    }
    let config = match body.remove("config") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(config)) => config,
        Some(_) => return Err(failure("config must be a JSON object", 400)),
    };
    Ok((kind, config))
}

/// List the providers (RAGFlow: `GET /api/v1/admin/sandbox/providers`).
#[utoipa::path(get, path = "/api/v1/admin/sandbox/providers", tag = "ragflow-admin",
    operation_id = "admin_sandbox_providers",
    security(("api_key" = ["admin"])),
    responses((status = 200, description = "`data`: `[{id, name, description, tags}]`"),
              (status = 401, description = "No API key, or an unknown or revoked one"),
              (status = 403, description = "The key lacks the `admin` scope")))]
#[tracing::instrument(name = "GET /api/v1/admin/sandbox/providers", skip_all)]
pub async fn providers(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    admin_key(&state, &headers, Source::Admin).await?;
    let data: Vec<Value> = state
        .sandbox
        .provider_infos()
        .into_iter()
        .map(|info| {
            json!({ "id": info.kind, "name": info.name, "description": info.description, "tags": info.tags })
        })
        .collect();
    Ok(success(Value::Array(data), "Success"))
}

/// One provider's config schema (RAGFlow: `GET .../providers/{provider_id}/schema`).
#[utoipa::path(get, path = "/api/v1/admin/sandbox/providers/{provider_id}/schema", tag = "ragflow-admin",
    security(("api_key" = ["admin"])),
    params(("provider_id" = String, Path, description = "A provider kind, e.g. `local`")),
    responses((status = 200, description = "`data`: field → `{type, required, label, default, min, max, secret, options, ...}`"),
              (status = 400, description = "`Unknown provider: <id>`")))]
#[tracing::instrument(name = "GET /api/v1/admin/sandbox/providers/schema", skip_all)]
pub async fn schema(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(provider_id): Path<String>,
) -> Result<Response, Failure> {
    admin_key(&state, &headers, Source::Admin).await?;
    match state.sandbox.schema_of(&provider_id) {
        Some(schema) => Ok(success(ragflow_schema(&schema), "Success")),
        None => Err(failure(format!("Unknown provider: {provider_id}"), 400)),
    }
}

/// The active provider and its saved config, secrets left out (RAGFlow: `GET .../config`).
#[utoipa::path(get, path = "/api/v1/admin/sandbox/config", tag = "ragflow-admin",
    security(("api_key" = ["admin"])),
    responses((status = 200, description = "`data`: `{provider_type, config}`; secret fields are never returned")))]
#[tracing::instrument(name = "GET /api/v1/admin/sandbox/config", skip_all)]
pub async fn get_config(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    admin_key(&state, &headers, Source::Admin).await?;
    let result = async {
        let kind = state
            .sandbox
            .stored_active_kind()
            .await?
            .unwrap_or_default();
        let config = state.sandbox.public_config(&kind).await?;
        Ok::<_, crate::server::db::system_setting::SettingError>(
            json!({ "provider_type": kind, "config": config }),
        )
    }
    .await;
    match result {
        Ok(data) => Ok(success(data, "Success")),
        Err(error) => Err(internal("Failed to get sandbox config", error)),
    }
}

/// The answer to a saved config. RAGFlow's clients match on its first sentence; the second
/// says what RAGFlow's semantics are, which a caller sending part of a config must know.
pub const REPLACED: &str = "Sandbox configuration updated successfully. The config replaced the \
     saved one: settings not sent now have their defaults (blank secrets keep the saved ones \
     while the destination stays the same).";

/// Validate and save a provider's config; `set_active` (default true) also makes it the
/// active provider (RAGFlow: `POST .../config`). The config replaces the saved one, as in
/// RAGFlow; unknown keys are refused, RAGFlow's names for our settings accepted. Nothing is
/// saved on any error.
#[utoipa::path(post, path = "/api/v1/admin/sandbox/config", tag = "ragflow-admin",
    security(("api_key" = ["admin"])),
    request_body(content = Object, description = "`{provider_type, config, set_active}`"),
    responses((status = 200, description = "`Sandbox configuration updated successfully`; `data`: `{provider_type, config, active, health}`: `health` (`{healthy, message}`) is the provider's health check when it is the active one, else null"),
              (status = 400, description = "RAGFlow's error envelope: `provider_type is required`, `Unknown provider type: <x>`, `Provider validation failed: ...`")))]
#[tracing::instrument(name = "POST /api/v1/admin/sandbox/config", skip_all)]
pub async fn set_config(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let actor = admin_key(&state, &headers, Source::Admin).await?.actor();
    let mut body = body_object(body)?;
    let (kind, config) = provider_and_config(&state, &mut body)?;
    let set_active = match body.remove("set_active") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(failure("set_active must be true or false", 400)),
    };
    nothing_else(&body, "provider_type, config and set_active")?;
    // RAGFlow's semantics: the config is saved (and made active when asked) whatever its
    // health; the answer says how the provider that now runs code is doing.
    let outcome = state
        .sandbox
        .save(
            &actor,
            &kind,
            config,
            crate::server::db::system_setting::Expected::Any,
            set_active,
            crate::server::sandbox::Gate::Anyway,
        )
        .await;
    let active = match outcome {
        Ok(SaveOutcome::Saved { active, .. }) => active,
        Ok(SaveOutcome::Invalid { errors }) => {
            return Err(failure(
                format!("Provider validation failed: {}", describe(&errors)),
                400,
            ))
        }
        Ok(SaveOutcome::Conflict { message }) => return Err(failure(message, 400)),
        Ok(SaveOutcome::Unhealthy { health, .. }) => {
            return Err(failure(
                format!("Provider health check failed: {}", health.message),
                400,
            ))
        }
        Ok(SaveOutcome::Kept { .. }) => false,
        Err(error) => return Err(internal("Failed to set sandbox config", error)),
    };
    let config = state
        .sandbox
        .public_config(&kind)
        .await
        .map_err(|error| internal("Failed to set sandbox config", error))?;
    let health = if active {
        let report = state.sandbox.active_health().await;
        json!({ "healthy": report.healthy, "message": report.message })
    } else {
        Value::Null
    };
    Ok(success(
        json!({ "provider_type": kind, "config": config, "active": active, "health": health }),
        REPLACED,
    ))
}

/// Health check plus a fixed test script on the unsaved config (RAGFlow: `POST .../test`).
#[utoipa::path(post, path = "/api/v1/admin/sandbox/test", tag = "ragflow-admin",
    security(("api_key" = ["admin"])),
    request_body(content = Object, description = "`{provider_type, config}`; blank secret fields use the saved ones"),
    responses((status = 200, description = "`data`: `{success, message, details: {exit_code, execution_time, stdout, stderr}}`"),
              (status = 400, description = "`Unknown provider type: <x>`, `Failed to initialize provider '<x>': ...`")))]
#[tracing::instrument(name = "POST /api/v1/admin/sandbox/test", skip_all)]
pub async fn test(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let caller = admin_key(&state, &headers, Source::TestConnection).await?;
    let mut body = body_object(body)?;
    let (kind, config) = provider_and_config(&state, &mut body)?;
    nothing_else(&body, "provider_type and config")?;
    let report = state
        .sandbox
        .test_connection(&kind, config, &caller)
        .await
        .map_err(|error| internal("Connection test failed", error))?;
    if !report.errors.is_empty() {
        return Err(failure(
            format!(
                "Failed to initialize provider '{kind}': {}",
                describe(&report.errors)
            ),
            400,
        ));
    }
    if report.health.as_ref().is_none_or(|h| !h.healthy) {
        return Err(failure(
            format!("Failed to initialize provider '{kind}': {}", report.message),
            400,
        ));
    }
    let seconds = report.execution_time_ms.unwrap_or(0) as f64 / 1000.0;
    let mut message = format!(
        "Test {} | Exit code: {} | Execution time: {seconds:.2}s",
        if report.passed { "PASSED" } else { "FAILED" },
        report
            .exit_code
            .map_or("none".to_owned(), |c| c.to_string()),
    );
    if !report.stdout.is_empty() {
        message.push_str(&format!(" | Output: {}...", excerpt(&report.stdout)));
    }
    if !report.stderr.is_empty() {
        message.push_str(&format!(" | Errors: {}...", excerpt(&report.stderr)));
    }
    if !report.passed {
        message.push_str(&format!(" | {}", report.message));
    }
    Ok(success(
        json!({
            "success": report.passed,
            "message": message,
            "details": {
                "exit_code": report.exit_code,
                "execution_time": seconds,
                "stdout": report.stdout,
                "stderr": report.stderr,
            }
        }),
        "Success",
    ))
}

fn excerpt(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::schema::FieldSpec;

    #[test]
    fn schemas_take_ragflows_shape() {
        let schema = ConfigSchema {
            fields: vec![
                FieldSpec::new("endpoint", FieldKind::String, "Endpoint")
                    .required()
                    .default_value(json!("http://localhost:9385")),
                FieldSpec::new(
                    "timeout",
                    FieldKind::Integer {
                        min: Some(5),
                        max: Some(300),
                    },
                    "Timeout",
                ),
                FieldSpec::new("token", FieldKind::Secret, "Token"),
            ],
        };
        let out = ragflow_schema(&schema);
        assert_eq!(out["endpoint"]["type"], "string");
        assert_eq!(out["endpoint"]["required"], true);
        assert_eq!(out["endpoint"]["default"], "http://localhost:9385");
        assert_eq!(
            (out["timeout"]["min"].clone(), out["timeout"]["max"].clone()),
            (json!(5), json!(300))
        );
        assert_eq!(out["token"]["secret"], true);
    }

    #[test]
    fn field_errors_read_as_one_line() {
        let errors = FieldErrors::from([
            (
                "timeout".to_owned(),
                "Enter a number from 5 to 300.".to_owned(),
            ),
            (FORM_ERROR.to_owned(), "Unreachable.".to_owned()),
        ]);
        assert_eq!(
            describe(&errors),
            "Unreachable.; Field 'timeout': Enter a number from 5 to 300."
        );
    }
}
