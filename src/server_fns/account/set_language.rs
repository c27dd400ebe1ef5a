use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Stores the signed-in admin's language: `auto` (the browser's), `en` or `zh-CN`. Every page
/// they open from then on, in any browser, is in it.
#[server(prefix = "/rpc", endpoint = "set_language")]
pub async fn set_language(locale: String) -> Result<(), AppError> {
    use crate::server_fns::guard::{internal, reject};

    let admin = crate::server_fns::require_admin().await?;
    if !crate::model::admin::LANGUAGES
        .iter()
        .any(|(id, _)| *id == locale)
    {
        return Err(reject(AppError::BadRequest(
            "locale must be auto, en or zh-CN".into(),
        )));
    }
    let state = expect_context::<crate::server::state::AppState>();
    crate::server::db::admin_user::set_locale(&state.pool, admin.id, &locale)
        .await
        .map_err(internal)?;
    // Said in the language just chosen (the page that shows it is in that language too).
    let said_in = match locale.as_str() {
        "zh-CN" => crate::i18n::Locale::zh_CN,
        "en" => crate::i18n::Locale::en,
        _ => crate::server_fns::guard::locale(),
    };
    let text = crate::i18n::td_string!(said_in, account.language_saved);
    super::flash_notice(super::PAGE, "success", text.to_string()).await?;
    Ok(())
}
