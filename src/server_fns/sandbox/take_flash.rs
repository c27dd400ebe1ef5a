use leptos::prelude::*;

use crate::{model::settings::SandboxFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the sandbox page, once.
#[server(prefix = "/rpc", endpoint = "take_sandbox_flash")]
pub async fn take_sandbox_flash() -> Result<Option<SandboxFlash>, AppError> {
    use crate::model::messages::Localize;
    let mut flash: Option<SandboxFlash> = crate::server_fns::guard::take_flash().await?;
    if let Some(flash) = &mut flash {
        flash.localize(crate::server_fns::guard::locale());
    }
    Ok(flash)
}
