use leptos::prelude::*;

use crate::{model::execution::ExecutionResult, server_fns::error::AppError};

/// Largest trial program accepted.
pub const MAX_CODE_BYTES: usize = 1024 * 1024;

/// Runs code through the active provider: `arguments` is a JSON object (blank means `{}`),
/// `timeout_secs` is optional (the provider's own limit still applies).
#[server(prefix = "/rpc", endpoint = "run_trial")]
pub async fn run_trial(
    language: String,
    code: String,
    #[server(default)] arguments: String,
    #[server(default)] timeout_secs: String,
) -> Result<ExecutionResult, AppError> {
    use crate::{model::execution::ExecRequest, server_fns::guard::reject};

    crate::server_fns::require_admin().await?;
    let bad = |message: String| reject(AppError::BadRequest(message));
    let language = language.parse().map_err(bad)?;
    if code.len() > MAX_CODE_BYTES {
        return Err(bad(format!(
            "The code is larger than {MAX_CODE_BYTES} bytes."
        )));
    }
    let arguments = match arguments.trim() {
        "" => serde_json::Map::new(),
        text => match serde_json::from_str(text) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(_) => {
                return Err(bad(
                    "Arguments must be a JSON object, e.g. {\"name\": \"Ada\"}.".into(),
                ))
            }
            Err(e) => return Err(bad(format!("Arguments are not valid JSON: {e}."))),
        },
    };
    let timeout_secs = match timeout_secs.trim() {
        "" => None,
        text => Some(
            text.parse::<u32>()
                .ok()
                .filter(|t| *t > 0)
                .ok_or_else(|| bad("The timeout must be a positive number of seconds.".into()))?,
        ),
    };
    let state = expect_context::<crate::server::state::AppState>();
    let request = ExecRequest {
        language,
        code,
        arguments,
        timeout_secs,
    };
    state
        .sandbox
        .execute(&request)
        .await
        .map_err(|e| reject(AppError::Provider(e.to_string())))
}
