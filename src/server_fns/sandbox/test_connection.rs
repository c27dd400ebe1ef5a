use std::collections::HashMap;

use leptos::prelude::*;

use crate::{model::settings::ConnectionReport, server_fns::error::AppError};

/// Health check plus a fixed test script, on the unsaved form values (stored secrets merged in).
#[server(prefix = "/rpc", endpoint = "test_sandbox_connection")]
pub async fn test_sandbox_connection(
    kind: String,
    #[server(default)] values: HashMap<String, String>,
) -> Result<ConnectionReport, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    state
        .sandbox
        .test_connection(&kind, super::form_values(values))
        .await
        .map_err(crate::server_fns::guard::internal)
}
