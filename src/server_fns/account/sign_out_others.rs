use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Signs the admin's other sessions out (every browser but this one); returns how many.
#[server(prefix = "/rpc", endpoint = "sign_out_other_sessions")]
pub async fn sign_out_other_sessions() -> Result<u64, AppError> {
    use crate::server_fns::guard::internal;

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let web = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    let current = crate::server::auth::session::session_id(&web)
        .await
        .map_err(internal)?;
    let gone =
        crate::server::db::admin_session::delete_others(&state.pool, admin.id, current.as_deref())
            .await
            .map_err(internal)?;
    super::audit(
        &admin.username,
        "sessions_sign_out",
        &[("sessions", gone.to_string())],
    )
    .await;
    let locale = crate::server_fns::guard::locale();
    let text = match gone {
        0 => crate::i18n::td_string!(locale, account.no_others).to_string(),
        count => crate::i18n::td_string!(locale, account.signed_out_others, count).to_string(),
    };
    super::flash_notice(super::PAGE, "success", text).await?;
    Ok(gone)
}
