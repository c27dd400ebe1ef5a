use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Disables (`disabled` = `true`) or enables administrator `id`. A disabled account cannot
/// sign in and its sessions end at once. Nobody disables their own account, and the last
/// enabled one stays enabled.
#[server(prefix = "/rpc", endpoint = "set_administrator_disabled")]
pub async fn set_administrator_disabled(id: String, disabled: String) -> Result<(), AppError> {
    use crate::i18n::td_string;
    use crate::server_fns::{
        account::{audit, flash_notice, refusal},
        guard::{internal, locale},
    };

    let admin = crate::server_fns::require_admin().await?;
    let refuse = |message: &str| {
        let message = message.to_owned();
        async move {
            flash_notice(super::PAGE, "error", message.clone()).await?;
            Err::<(), _>(refusal(AppError::BadRequest(message)))
        }
    };
    let Ok(id) = id.trim().parse::<i64>() else {
        return refuse("id must be a number").await;
    };
    let disabled = match disabled.as_str() {
        "true" => true,
        "false" => false,
        _ => return refuse("disabled must be true or false").await,
    };
    if disabled && id == admin.id {
        return refuse(td_string!(locale(), admins.not_self)).await;
    }
    let state = expect_context::<crate::server::state::AppState>();
    let Some(user) = crate::server::db::admin_user::find_by_id(&state.pool, id)
        .await
        .map_err(internal)?
    else {
        return refuse(td_string!(locale(), admins.no_such)).await;
    };
    crate::server::db::admin_user::set_disabled(&state.pool, id, disabled)
        .await
        .map_err(internal)?;
    if disabled {
        crate::server::db::admin_session::delete_others(&state.pool, id, None)
            .await
            .map_err(internal)?;
    }
    let (action, text) = if disabled {
        let name = &user.username;
        (
            "admin_disable",
            td_string!(locale(), admins.disabled_notice, name).to_string(),
        )
    } else {
        let name = &user.username;
        (
            "admin_enable",
            td_string!(locale(), admins.enabled_notice, name).to_string(),
        )
    };
    audit(
        &admin.username,
        action,
        &[("administrator", user.username.clone())],
    )
    .await;
    flash_notice(super::PAGE, "success", text).await?;
    Ok(())
}
