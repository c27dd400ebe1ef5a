use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Gives administrator `id` a generated password (answered, or shown on the next page view,
/// once); it must be changed at their next sign-in, and all their sessions are signed out.
/// Your own password is changed on the Account page instead.
#[server(prefix = "/rpc", endpoint = "reset_administrator_password")]
pub async fn reset_administrator_password(id: String) -> Result<String, AppError> {
    use crate::server_fns::{
        account::{audit, flash_notice, refusal},
        guard::{internal, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let id: i64 = id
        .trim()
        .parse()
        .map_err(|_| reject(AppError::BadRequest("id must be a number".into())))?;
    if id == admin.id {
        let message = crate::i18n::td_string!(crate::server_fns::guard::locale(), admins.reset_own)
            .to_string();
        flash_notice(super::PAGE, "error", message.clone()).await?;
        return Err(refusal(AppError::BadRequest(message)));
    }
    let state = expect_context::<crate::server::state::AppState>();
    let Some(user) = crate::server::db::admin_user::find_by_id(&state.pool, id)
        .await
        .map_err(internal)?
    else {
        let message =
            crate::i18n::td_string!(crate::server_fns::guard::locale(), admins.no_such).to_string();
        flash_notice(super::PAGE, "error", message.clone()).await?;
        return Err(refusal(AppError::BadRequest(message)));
    };
    let password = crate::server::auth::account::reset_to_generated(&state.pool, id)
        .await
        .map_err(internal)?;
    crate::server::db::admin_session::delete_others(&state.pool, id, None)
        .await
        .map_err(internal)?;
    audit(
        &admin.username,
        "admin_password_reset",
        &[("administrator", user.username.clone())],
    )
    .await;
    super::flash_password(&user.username, &password).await?;
    Ok(password)
}
