use leptos::prelude::*;

use crate::{model::settings::SandboxSettings, server_fns::error::AppError};

/// Every provider with its schema and saved values (never secrets), and which one is active.
#[server(prefix = "/rpc", endpoint = "sandbox_settings")]
pub async fn get_sandbox_settings() -> Result<SandboxSettings, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    state
        .sandbox
        .settings()
        .await
        .map_err(crate::server_fns::guard::internal)
}
