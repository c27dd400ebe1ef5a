use leptos::prelude::*;

use crate::{model::audit::AuditPage, server_fns::error::AppError};

/// One page (1-based; past the end shows the last) of one view of the audit (`view`:
/// `changes`, the default, `tests` or `sign_ins`), newest first.
#[server(prefix = "/rpc", endpoint = "settings_audit")]
pub async fn settings_audit(
    #[server(default)] page: u32,
    #[server(default)] view: String,
) -> Result<AuditPage, AppError> {
    use crate::{
        model::audit::{AuditView, PAGE_SIZE},
        server_fns::guard::internal,
    };

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let view = AuditView::from_id(&view);
    let total = crate::server::db::settings_audit::count(&state.pool, view.actions())
        .await
        .map_err(internal)?;
    let pages = crate::model::page_count(total, PAGE_SIZE);
    let page = page.clamp(1, pages);
    let entries =
        crate::server::db::settings_audit::page(&state.pool, view.actions(), page, PAGE_SIZE)
            .await
            .map_err(internal)?;
    Ok(AuditPage {
        view,
        entries,
        page,
        pages,
        total,
    })
}
