use leptos::prelude::*;

use crate::{model::history::HistoryFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the history page, once.
#[server(prefix = "/rpc", endpoint = "take_history_flash")]
pub async fn take_history_flash() -> Result<Option<HistoryFlash>, AppError> {
    use crate::server_fns::guard::{internal, HISTORY_FLASH};

    crate::server_fns::require_admin().await?;
    let session = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    crate::server::flash::take(&session, HISTORY_FLASH)
        .await
        .map_err(internal)
}
