use std::collections::HashMap;

use leptos::prelude::*;

use crate::{model::settings::SaveOutcome, server_fns::error::AppError};

/// Validates and saves one provider's settings (form fields `values[<key>]`). A blank secret
/// keeps the stored one. `expected_version` is the version the form was opened at (blank when
/// never saved); `make_active` (a checkbox) also switches the active provider.
#[server(prefix = "/rpc", endpoint = "save_sandbox_settings")]
pub async fn save_sandbox_settings(
    kind: String,
    #[server(default)] values: HashMap<String, String>,
    #[server(default)] expected_version: String,
    #[server(default)] make_active: Option<String>,
) -> Result<SaveOutcome, AppError> {
    use crate::{
        model::settings::FlashOutcome,
        server_fns::guard::{internal, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let expected_version = match expected_version.trim() {
        "" => None,
        text => Some(text.parse::<i64>().map_err(|_| {
            reject(AppError::BadRequest(
                "expected_version must be a number".into(),
            ))
        })?),
    };
    let state = expect_context::<crate::server::state::AppState>();
    let values = super::form_values(values);
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
            make_active.is_some(),
        )
        .await
        .map_err(internal)?;
    super::flash_form_outcome(&kind, values, FlashOutcome::Save(outcome.clone())).await?;
    Ok(outcome)
}
