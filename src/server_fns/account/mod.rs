//! Server functions of the Account page (your password, your sessions, your theme) and the
//! one-time outcome both account pages show.

mod change_password;
mod get;
mod set_language;
mod set_theme;
mod sign_out_others;
mod take_flash;

pub use change_password::*;
pub use get::*;
pub use set_language::*;
pub use set_theme::*;
pub use sign_out_others::*;
pub use take_flash::*;

/// Where the Account page lives.
pub const PAGE: &str = "/admin/account";

/// Records an account event in the audit (never a password: who, what, and about whom).
#[cfg(feature = "ssr")]
pub(crate) async fn audit(actor: &str, action: &str, detail: &[(&str, String)]) {
    let state = leptos::prelude::expect_context::<crate::server::state::AppState>();
    let detail = detail
        .iter()
        .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String(v.clone())))
        .collect();
    if let Err(error) = crate::server::db::settings_audit::record_event(
        &state.pool,
        actor,
        "account",
        None,
        action,
        &detail,
    )
    .await
    {
        tracing::warn!(%error, action, "could not record an account event in the audit");
    }
}

/// For a plain form post: keeps `flash` for the next view of `page` and redirects there.
#[cfg(feature = "ssr")]
pub(crate) async fn flash_notice(
    page: &str,
    class: &str,
    text: String,
) -> Result<(), crate::server_fns::error::AppError> {
    use crate::server_fns::guard::{flash_to, plain_form};
    if plain_form() {
        flash_to(
            &crate::model::admin::AccountFlash::Notice(class.to_owned(), text),
            page,
        )
        .await?;
    }
    Ok(())
}

/// A refused account or administrator form: for a plain form post (JavaScript on or off: the
/// forms are plain), the page again with `error`'s message beside `field` and `value` typed
/// back (never a password); otherwise the error with its own status.
#[cfg(feature = "ssr")]
pub(crate) async fn refuse(
    page: &str,
    field: &str,
    value: &str,
    error: crate::server_fns::error::AppError,
) -> crate::server_fns::error::AppError {
    use crate::server_fns::guard::{flash_to, plain_form};
    if plain_form() {
        let flash = crate::model::admin::AccountFlash::Refused {
            field: field.to_owned(),
            message: error.to_string(),
            value: value.to_owned(),
        };
        if let Err(failed) = flash_to(&flash, page).await {
            return failed;
        }
    }
    refusal(error)
}

/// The error a refused account form answers with: for a plain form post the redirect that
/// [`flash_notice`] set stands (the page shows the message), otherwise the error's own status.
#[cfg(feature = "ssr")]
pub(crate) fn refusal(
    error: crate::server_fns::error::AppError,
) -> crate::server_fns::error::AppError {
    if crate::server_fns::guard::plain_form() {
        error
    } else {
        crate::server_fns::guard::reject(error)
    }
}
