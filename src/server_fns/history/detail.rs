use leptos::prelude::*;

use crate::{model::history::ExecutionDetail, server_fns::error::AppError};

/// One run in full (code and output only when the history kept them).
#[server(prefix = "/rpc", endpoint = "execution_record")]
pub async fn execution_record(id: i64) -> Result<ExecutionDetail, AppError> {
    use crate::server_fns::guard::{internal, reject};

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    crate::server::db::execution::detail(&state.pool, id)
        .await
        .map_err(internal)?
        .ok_or_else(|| {
            reject(AppError::NotFound(format!(
                "There is no run #{id} in the history."
            )))
        })
}
