use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Stores the signed-in admin's theme: `auto` (follow the browser), `light` or `dark`.
#[server(prefix = "/rpc", endpoint = "set_theme")]
pub async fn set_theme(theme: String) -> Result<(), AppError> {
    use crate::server_fns::guard::{internal, reject};

    let admin = crate::server_fns::require_admin().await?;
    if !crate::model::admin::THEMES
        .iter()
        .any(|(id, _)| *id == theme)
    {
        return Err(reject(AppError::BadRequest(
            "theme must be auto, light or dark".into(),
        )));
    }
    let state = expect_context::<crate::server::state::AppState>();
    crate::server::db::admin_user::set_theme(&state.pool, admin.id, &theme)
        .await
        .map_err(internal)?;
    let text = crate::i18n::td_string!(crate::server_fns::guard::locale(), account.theme_saved);
    super::flash_notice(super::PAGE, "success", text.to_string()).await?;
    Ok(())
}
