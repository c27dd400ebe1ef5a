use leptos::prelude::*;

use crate::{
    model::history::{HistoryFilter, HistoryPage},
    server_fns::error::AppError,
};

/// One page (1-based; past the end shows the last) of the runs matching the filter, newest
/// first, with the values the filter menus offer and the history settings.
#[server(prefix = "/rpc", endpoint = "execution_history")]
pub async fn execution_history(
    #[server(default)] filter: HistoryFilter,
    #[server(default)] page: u32,
) -> Result<HistoryPage, AppError> {
    use crate::{
        model::history::PAGE_SIZE,
        server::db::execution,
        server_fns::guard::{internal, reject},
    };

    crate::server_fns::require_admin().await?;
    // A filter the admin must fix is a 400 with its message; anything else is internal.
    let refused = |error: execution::QueryError| match error {
        execution::QueryError::BadFilter(message) => reject(AppError::BadRequest(message)),
        execution::QueryError::Database(error) => internal(error),
    };
    let state = expect_context::<crate::server::state::AppState>();
    let pool = &state.pool;
    let total = execution::count(pool, &filter).await.map_err(refused)?;
    let pages = crate::model::page_count(total, PAGE_SIZE);
    let page = page.clamp(1, pages);
    let offset = u64::from(page - 1) * u64::from(PAGE_SIZE);
    let entries = execution::search(pool, &filter, PAGE_SIZE, offset)
        .await
        .map_err(refused)?;
    Ok(HistoryPage {
        entries,
        filter,
        page,
        pages,
        total,
        providers: execution::distinct(pool, "provider")
            .await
            .map_err(internal)?,
        statuses: execution::distinct(pool, "status")
            .await
            .map_err(internal)?,
        replicas: execution::distinct(pool, "replica")
            .await
            .map_err(internal)?
            .into_iter()
            .filter(|name| !name.is_empty())
            .collect(),
        settings: crate::server::history::settings(pool)
            .await
            .map_err(internal)?,
    })
}
