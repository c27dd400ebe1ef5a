// The save function takes one argument per form field (the trial form's included).
#![allow(clippy::too_many_arguments)]

use std::collections::HashMap;

use leptos::prelude::*;

use crate::{model::settings::SaveOutcome, server_fns::error::AppError};

/// Validates and saves one provider's settings (form fields `values[<key>]`). A blank secret
/// keeps the stored one. `expected_version` is the version the form was opened at (blank when
/// never saved); `make_active` (a checkbox) also switches the active provider. When the save
/// would put a provider that fails its health check in charge of every run, nothing is saved
/// unless `anyway` says what to do: `activate` (save and apply) or `inactive` (save without
/// going live). `language`, `code`, `arguments` and `timeout_secs` are what the trial form
/// held (the page's forms post together), shown again with the outcome.
#[server(prefix = "/rpc", endpoint = "save_sandbox_settings")]
pub async fn save_sandbox_settings(
    kind: String,
    #[server(default)] values: HashMap<String, String>,
    #[server(default)] switch: HashMap<String, String>,
    #[server(default)] expected_version: String,
    #[server(default)] make_active: Option<String>,
    #[server(default)] anyway: String,
    #[server(default)] language: String,
    #[server(default)] code: String,
    #[server(default)] arguments: String,
    #[server(default)] timeout_secs: String,
) -> Result<SaveOutcome, AppError> {
    use crate::{
        model::settings::FlashOutcome,
        server_fns::guard::{internal, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let trial = super::trial_input(language, code, arguments, timeout_secs);
    let expected_version = match expected_version.trim() {
        "" => None,
        text => Some(text.parse::<i64>().map_err(|_| {
            reject(AppError::BadRequest(
                "expected_version must be a number".into(),
            ))
        })?),
    };
    let gate = match anyway.as_str() {
        "" => crate::server::sandbox::Gate::HealthyOnly,
        "activate" => crate::server::sandbox::Gate::AfterWarning,
        "inactive" => crate::server::sandbox::Gate::Inactive,
        _ => {
            return Err(reject(AppError::BadRequest(
                "anyway must be activate or inactive".into(),
            )))
        }
    };
    let state = expect_context::<crate::server::state::AppState>();
    let values = super::form_values(super::with_switches(values, switch));
    let environment_before = state.sandbox.stored_field(&kind, "environment").await;
    let outcome = state
        .sandbox
        .save(
            &crate::server::db::execution::Actor::admin(&admin.username),
            &kind,
            values.clone(),
            match expected_version {
                Some(version) => crate::server::db::system_setting::Expected::Version(version),
                None => crate::server::db::system_setting::Expected::Absent,
            },
            // "Activate anyway" says it: apply, and make active.
            make_active.is_some() || gate == crate::server::sandbox::Gate::AfterWarning,
            gate,
        )
        .await
        .map_err(internal)?;
    let mut outcome = outcome;
    if let (crate::model::settings::SaveOutcome::Saved { warning, .. }, Some(before), Some(after)) = (
        &mut outcome,
        environment_before.as_ref().and_then(|v| v.as_str()),
        values.get("environment").and_then(|v| v.as_str()),
    ) {
        if before.trim() != after.trim() {
            let lost = state
                .environments
                .loss(before, after)
                .await
                .map_err(internal)?;
            if !lost.is_empty() {
                let named = |name: &str| match name.trim() {
                    "" => "the default environment".to_owned(),
                    other => format!("'{other}'"),
                };
                *warning = Some(format!(
                    "Its runs no longer have {}: {} has them, {} does not. Base {} on it on the \
                     Environments page to keep them.",
                    lost.join(", "),
                    named(before),
                    named(after),
                    named(after)
                ));
            }
        }
    }
    super::flash_form_outcome(&kind, values, trial, FlashOutcome::Save(outcome.clone())).await?;
    crate::model::messages::Localize::localize(&mut outcome, crate::server_fns::guard::locale());
    Ok(outcome)
}
