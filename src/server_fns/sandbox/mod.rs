//! Server functions of the sandbox-settings page: read, save, test connection, trial run.

mod get_settings;
mod restore;
mod run_trial;
mod save;
mod take_flash;
mod test_connection;

pub use get_settings::*;
pub use restore::*;
pub use run_trial::*;
pub use save::*;
pub use take_flash::*;
pub use test_connection::*;

#[cfg(feature = "ssr")]
fn form_values(
    values: std::collections::HashMap<String, String>,
) -> serde_json::Map<String, serde_json::Value> {
    values
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect()
}

/// The form's values with each switch it showed (`switch[<key>]`) that was not ticked
/// (so not posted) set to `false`.
#[cfg(feature = "ssr")]
fn with_switches(
    mut values: std::collections::HashMap<String, String>,
    switches: std::collections::HashMap<String, String>,
) -> std::collections::HashMap<String, String> {
    for key in switches.into_keys() {
        values.entry(key).or_insert_with(|| "false".to_owned());
    }
    values
}

/// The trial form's fields, when a post carried them.
#[cfg(feature = "ssr")]
fn trial_input(
    language: String,
    code: String,
    arguments: String,
    timeout_secs: String,
) -> Option<crate::model::settings::TrialInput> {
    (!language.is_empty() || !code.is_empty()).then_some(crate::model::settings::TrialInput {
        language,
        code,
        arguments,
        timeout_secs,
    })
}

/// For a plain form post: keeps the outcome (and the typed values, secrets removed) for the
/// next page view and redirects back to `kind`'s form. Does nothing for enhanced calls.
#[cfg(feature = "ssr")]
async fn flash_form_outcome(
    kind: &str,
    values: serde_json::Map<String, serde_json::Value>,
    trial: Option<crate::model::settings::TrialInput>,
    outcome: crate::model::settings::FlashOutcome,
) -> Result<(), crate::server_fns::error::AppError> {
    use crate::server_fns::guard::{flash_to, plain_form};

    if !plain_form() {
        return Ok(());
    }
    let state = leptos::prelude::expect_context::<crate::server::state::AppState>();
    let values = state.sandbox.without_secrets(kind, values);
    let flash = crate::model::settings::SandboxFlash {
        kind: kind.to_owned(),
        values,
        trial,
        outcome,
    };
    flash_to(&flash, &page_url(kind)).await
}

/// The sandbox-settings page, showing `kind`'s form.
pub fn page_url(kind: &str) -> String {
    if kind.is_empty() {
        PAGE.to_owned()
    } else {
        format!("{PAGE}?provider={kind}")
    }
}

/// The sandbox-settings page, showing `kind`'s saved versions.
pub fn history_url(kind: &str) -> String {
    format!("{PAGE}?provider={kind}&tab=history")
}

/// Where the sandbox-settings page lives.
pub const PAGE: &str = "/admin/sandbox-settings";
