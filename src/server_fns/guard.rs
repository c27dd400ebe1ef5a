//! The first line of every server function: is an administrator signed in?

use axum::http::{request::Parts, StatusCode};
use leptos::prelude::use_context;
use leptos_axum::ResponseOptions;

use crate::{model::admin::AdminInfo, server_fns::error::AppError};

/// Returns the signed-in admin that the auth gate attached to this request, or answers 401.
///
/// The gate already refuses anonymous calls to `/rpc/*`; this check keeps each function safe
/// on its own, whatever router it ends up mounted in.
pub async fn require_admin() -> Result<AdminInfo, AppError> {
    let admin =
        use_context::<Parts>().and_then(|parts| parts.extensions.get::<AdminInfo>().cloned());
    admin.ok_or_else(|| {
        if let Some(response) = use_context::<ResponseOptions>() {
            response.set_status(StatusCode::UNAUTHORIZED);
        }
        AppError::Unauthorized
    })
}

/// Logs an internal error once and turns it into the opaque error the browser sees.
pub(crate) fn internal(error: impl std::fmt::Display) -> AppError {
    tracing::error!(%error, "server function failed");
    if let Some(response) = use_context::<ResponseOptions>() {
        response.set_status(StatusCode::INTERNAL_SERVER_ERROR);
    }
    AppError::Internal
}

/// Answers with the error's own HTTP status (400 for bad input, 502 for a failing provider).
pub(crate) fn reject(error: AppError) -> AppError {
    if let Some(response) = use_context::<ResponseOptions>() {
        response.set_status(
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        );
    }
    error
}

/// Is this a plain HTML form post (JavaScript off, or a form the page did not enhance)? Such
/// callers get a redirect back to the page, with the outcome in the session.
pub(crate) fn plain_form() -> bool {
    use_context::<Parts>()
        .and_then(|parts| {
            parts
                .headers
                .get(axum::http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.contains("text/html"))
        })
        .unwrap_or(false)
}

/// Session key of the sandbox page's one-time outcome.
pub(crate) const SANDBOX_FLASH: &str = "sandbox_flash";

/// Session key of the history page's one-time outcome.
pub(crate) const HISTORY_FLASH: &str = "history_flash";

/// Session key of the API-keys page's one-time outcome.
pub(crate) const API_KEY_FLASH: &str = "api_key_flash";

/// Stores the sandbox page's `flash` for its next view and redirects a plain form post.
pub(crate) async fn flash_and_redirect(
    flash: crate::model::settings::SandboxFlash,
    target: &str,
) -> Result<(), AppError> {
    flash_to(SANDBOX_FLASH, &flash, target).await
}

/// Stores `flash` under `key` for the next page view and redirects to `target`.
pub(crate) async fn flash_to<T: serde::Serialize>(
    key: &str,
    flash: &T,
    target: &str,
) -> Result<(), AppError> {
    let session = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    crate::server::flash::put(&session, key, flash)
        .await
        .map_err(internal)?;
    leptos_axum::redirect(target);
    Ok(())
}
