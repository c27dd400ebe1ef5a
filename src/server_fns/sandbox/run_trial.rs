use leptos::prelude::*;

use crate::{model::execution::ExecutionResult, server_fns::error::AppError};

/// Runs code on provider `kind` (blank: the active one): the active provider as it runs,
/// another one built from its saved settings for this run. `arguments` is a JSON object
/// (blank means `{}`), `timeout_secs` is optional (the provider's own limit still applies).
/// `values` are the settings form's unsaved values, posted with it and shown again.
#[server(prefix = "/rpc", endpoint = "run_trial")]
pub async fn run_trial(
    language: String,
    code: String,
    #[server(default)] arguments: String,
    #[server(default)] timeout_secs: String,
    #[server(default)] kind: String,
    #[server(default)] values: std::collections::HashMap<String, String>,
    #[server(default)] switch: std::collections::HashMap<String, String>,
) -> Result<ExecutionResult, AppError> {
    use crate::{
        model::settings::{FlashOutcome, SandboxFlash, TrialInput},
        server_fns::guard::{flash_to, plain_form, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let input = TrialInput {
        language,
        code,
        arguments,
        timeout_secs,
    };
    let state = expect_context::<crate::server::state::AppState>();
    let kind = match kind.trim() {
        "" => state
            .sandbox
            .active()
            .map(|(kind, _)| kind)
            .unwrap_or_default(),
        kind => kind.to_owned(),
    };
    let result = run(&input, &kind, &admin.username).await;
    if plain_form() {
        let artifacts = result
            .as_ref()
            .map(|r| r.artifacts.as_slice())
            .unwrap_or_default();
        let downloads = crate::server::artifacts::keep(&state.pool, admin.id, artifacts)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "could not keep a trial's artifacts for download");
                Vec::new()
            });
        let outcome = FlashOutcome::Trial {
            input,
            result: result.clone().map_err(|e| e.to_string()),
            downloads,
        };
        let values = state.sandbox.without_secrets(
            &kind,
            super::form_values(super::with_switches(values, switch)),
        );
        let flash = SandboxFlash {
            kind: kind.clone(),
            values,
            trial: None,
            outcome,
        };
        flash_to(&flash, &format!("{}#trial", super::page_url(&kind))).await?;
        // The redirect's 302 must stand: the page shows the error from the session.
        return result;
    }
    result.map_err(reject)
}

#[cfg(feature = "ssr")]
async fn run(
    input: &crate::model::settings::TrialInput,
    kind: &str,
    admin: &str,
) -> Result<ExecutionResult, AppError> {
    use crate::{
        model::execution::{ExecRequest, RequestProblem, MAX_CODE_BYTES, MAX_TIMEOUT_SECS},
        server::db::execution::{Caller, Source},
    };

    let bad = |message: String| AppError::BadRequest(message);
    let language = input.language.parse().map_err(bad)?;
    let arguments = match input.arguments.trim() {
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
    let timeout_secs = match input.timeout_secs.trim() {
        "" => None,
        text => Some(
            text.parse::<u32>()
                .ok()
                .ok_or_else(|| bad("The timeout must be a positive number of seconds.".into()))?,
        ),
    };
    let state = leptos::prelude::expect_context::<crate::server::state::AppState>();
    let request = ExecRequest {
        language,
        code: input.code.clone(),
        arguments,
        timeout_secs,
    };
    request.check().map_err(|problem| {
        bad(match problem {
            RequestProblem::CodeTooLarge { .. } => {
                format!("The code is larger than {MAX_CODE_BYTES} bytes.")
            }
            RequestProblem::TimeoutOutOfRange { .. } => format!(
                "The timeout must be a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}."
            ),
            other => other.to_string(),
        })
    })?;
    let caller = Caller::admin(admin, Source::Trial);
    match kind {
        "" => state.sandbox.execute(&request, &caller).await,
        kind => state.sandbox.execute_saved(kind, &request, &caller).await,
    }
    .map(|run| run.into_shown())
    .map_err(|e| AppError::Provider(e.to_string()))
}
