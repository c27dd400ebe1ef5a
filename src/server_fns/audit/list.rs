use leptos::prelude::*;

use crate::{model::audit::AuditPage, server_fns::error::AppError};

/// One page (1-based; past the end shows the last) of one view of the audit (`view`:
/// `changes`, the default, `tests`, `sign_ins` or `accounts`), newest first; `actor` keeps
/// the entries whose actor contains it (any case).
#[server(prefix = "/rpc", endpoint = "settings_audit")]
pub async fn settings_audit(
    #[server(default)] page: u32,
    #[server(default)] view: String,
    #[server(default)] actor: String,
) -> Result<AuditPage, AppError> {
    use crate::{
        model::audit::{AuditView, PAGE_SIZE},
        server_fns::guard::internal,
    };

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let view = AuditView::from_id(&view);
    let actor = actor.trim().chars().take(64).collect::<String>();
    let total = crate::server::db::settings_audit::count(&state.pool, view.actions(), &actor)
        .await
        .map_err(internal)?;
    let pages = crate::model::page_count(total, PAGE_SIZE);
    let page = page.clamp(1, pages);
    let entries = crate::server::db::settings_audit::page(
        &state.pool,
        view.actions(),
        &actor,
        page,
        PAGE_SIZE,
    )
    .await
    .map_err(internal)?;
    Ok(AuditPage {
        view,
        actor,
        entries,
        page,
        pages,
        total,
    })
}
