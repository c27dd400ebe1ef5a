use leptos::prelude::*;

use crate::{model::api_key::ApiKeyInfo, server_fns::error::AppError};

/// Every API key, live ones first (never the keys themselves).
#[server(prefix = "/rpc", endpoint = "list_api_keys")]
pub async fn list_api_keys() -> Result<Vec<ApiKeyInfo>, AppError> {
    use crate::server_fns::guard::internal;

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    crate::server::db::api_key::list(&state.pool)
        .await
        .map_err(internal)
}
