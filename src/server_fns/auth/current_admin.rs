use leptos::prelude::*;

use crate::{model::admin::AdminInfo, server_fns::error::AppError};

/// The administrator this request is signed in as.
#[server(prefix = "/rpc", endpoint = "current_admin")]
pub async fn current_admin() -> Result<AdminInfo, AppError> {
    crate::server_fns::require_admin().await
}
