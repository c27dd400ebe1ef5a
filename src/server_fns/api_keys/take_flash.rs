use leptos::prelude::*;

use crate::{model::api_key::ApiKeyFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the API-keys page, once.
#[server(prefix = "/rpc", endpoint = "take_api_key_flash")]
pub async fn take_api_key_flash() -> Result<Option<ApiKeyFlash>, AppError> {
    use crate::server_fns::guard::{internal, take_flash};

    let flash = take_flash().await?;
    // A created key is stored sealed (see create_api_key); it is opened only for this view.
    match flash {
        Some(ApiKeyFlash::Created(mut created)) => {
            let state = expect_context::<crate::server::state::AppState>();
            created.key = state.secrets.open(&created.key).map_err(internal)?;
            Ok(Some(ApiKeyFlash::Created(created)))
        }
        other => Ok(other),
    }
}
