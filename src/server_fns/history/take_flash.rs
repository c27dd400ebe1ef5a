use leptos::prelude::*;

use crate::{model::history::HistoryFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the history page, once.
#[server(prefix = "/rpc", endpoint = "take_history_flash")]
pub async fn take_history_flash() -> Result<Option<HistoryFlash>, AppError> {
    crate::server_fns::guard::take_flash().await
}
