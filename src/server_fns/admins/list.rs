use leptos::prelude::*;

use crate::{model::admin::AdminSummary, server_fns::error::AppError};

/// Every administrator, by name.
#[server(prefix = "/rpc", endpoint = "administrators")]
pub async fn list_administrators() -> Result<Vec<AdminSummary>, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let rows = crate::server::db::admin_user::list(&state.pool)
        .await
        .map_err(crate::server_fns::guard::internal)?;
    Ok(rows
        .into_iter()
        .map(|row| AdminSummary {
            id: row.id,
            username: row.username,
            must_change_password: row.must_change_password,
            disabled: row.disabled_at.is_some(),
            last_login_at: row.last_login_at,
            created_at: row.created_at,
        })
        .collect())
}
