use leptos::prelude::*;

use crate::{model::settings::SandboxFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the sandbox page, once.
#[server(prefix = "/rpc", endpoint = "take_sandbox_flash")]
pub async fn take_sandbox_flash() -> Result<Option<SandboxFlash>, AppError> {
    crate::server_fns::guard::take_flash().await
}
