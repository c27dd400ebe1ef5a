use leptos::prelude::*;

use crate::{model::api_key::ApiKeyFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the API-keys page, once.
#[server(prefix = "/rpc", endpoint = "take_api_key_flash")]
pub async fn take_api_key_flash() -> Result<Option<ApiKeyFlash>, AppError> {
    use crate::server_fns::guard::{internal, API_KEY_FLASH};

    crate::server_fns::require_admin().await?;
    let session = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    let flash = crate::server::flash::take(&session, API_KEY_FLASH)
        .await
        .map_err(internal)?;
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
