use leptos::prelude::*;

use crate::{model::admin::Account, server_fns::error::AppError};

/// The signed-in admin with their sessions (seen within the idle timeout), this one marked.
#[server(prefix = "/rpc", endpoint = "account")]
pub async fn get_account() -> Result<Account, AppError> {
    use crate::{model::admin::SessionInfo, server::auth::session, server_fns::guard::internal};

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let current = match leptos_axum::extract::<tower_sessions::Session>().await {
        Ok(s) => session::session_id(&s).await.map_err(internal)?,
        Err(_) => None,
    };
    let rows =
        crate::server::db::admin_session::list(&state.pool, admin.id, state.session_idle_minutes)
            .await
            .map_err(internal)?;
    let sessions = rows
        .into_iter()
        .map(|row| SessionInfo {
            current: current.as_deref() == Some(row.id.as_str()),
            address: row.address,
            user_agent: row.user_agent,
            created_at: row.created_at,
            last_seen_at: row.last_seen_at,
        })
        .collect();
    Ok(Account { admin, sessions })
}
