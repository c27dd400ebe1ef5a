use leptos::prelude::*;

use crate::{model::settings::SandboxFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the sandbox page, once.
#[server(prefix = "/rpc", endpoint = "take_sandbox_flash")]
pub async fn take_sandbox_flash() -> Result<Option<SandboxFlash>, AppError> {
    use crate::server_fns::guard::{internal, SANDBOX_FLASH};

    crate::server_fns::require_admin().await?;
    let session = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    crate::server::flash::take(&session, SANDBOX_FLASH)
        .await
        .map_err(internal)
}
