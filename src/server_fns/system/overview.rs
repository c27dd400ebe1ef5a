use leptos::prelude::*;

use crate::{model::overview::SystemOverview, server_fns::error::AppError};

/// Version, database, accounts and uptime for the overview page.
#[server(prefix = "/rpc", endpoint = "overview")]
pub async fn get_overview() -> Result<SystemOverview, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    state
        .overview()
        .await
        .map_err(crate::server_fns::guard::internal)
}
