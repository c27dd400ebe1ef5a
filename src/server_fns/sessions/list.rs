use leptos::prelude::*;

use crate::{model::session::SessionSummary, server_fns::error::AppError};

/// Every open sandbox session of this console, oldest first.
#[server(prefix = "/rpc", endpoint = "list_sandbox_sessions")]
pub async fn list_sandbox_sessions() -> Result<Vec<SessionSummary>, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    Ok(state
        .sessions
        .all()
        .iter()
        .map(|held| SessionSummary {
            id: held.id.clone(),
            key_name: held.owner.key_name.clone(),
            provider: held.provider.clone(),
            language: held.language.id().to_owned(),
            age_secs: held.age().as_secs(),
            idle_secs: held.idle().as_secs(),
            remaining_secs: held.remaining().as_secs(),
            cells: held.cells(),
            alive: held.session.alive(),
        })
        .collect())
}
