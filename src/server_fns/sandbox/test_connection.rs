use std::collections::HashMap;

use leptos::prelude::*;

use crate::{model::settings::ConnectionReport, server_fns::error::AppError};

/// Health check plus a fixed test script, on the unsaved form values (stored secrets merged in).
#[server(prefix = "/rpc", endpoint = "test_sandbox_connection")]
pub async fn test_sandbox_connection(
    kind: String,
    #[server(default)] values: HashMap<String, String>,
    #[server(default)] switch: HashMap<String, String>,
    #[server(default)] language: String,
    #[server(default)] code: String,
    #[server(default)] arguments: String,
    #[server(default)] timeout_secs: String,
) -> Result<ConnectionReport, AppError> {
    use crate::{model::settings::FlashOutcome, server_fns::guard::internal};

    let admin = crate::server_fns::require_admin().await?;
    let trial = super::trial_input(language, code, arguments, timeout_secs);
    let state = expect_context::<crate::server::state::AppState>();
    let values = super::form_values(super::with_switches(values, switch));
    let report = state
        .sandbox
        .test_connection(
            &kind,
            values.clone(),
            &crate::server::db::execution::Caller::admin(
                &admin.username,
                crate::server::db::execution::Source::TestConnection,
            ),
        )
        .await
        .map_err(internal)?;
    super::flash_form_outcome(&kind, values, trial, FlashOutcome::Test(report.clone())).await?;
    let mut report = report;
    crate::model::messages::Localize::localize(&mut report, crate::server_fns::guard::locale());
    Ok(report)
}
