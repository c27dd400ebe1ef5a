//! The first line of every server function: is an administrator signed in?

use axum::http::{request::Parts, StatusCode};
use leptos::prelude::use_context;
use leptos_axum::ResponseOptions;

use crate::{
    model::admin::AdminInfo,
    server::flash::{self, Flash},
    server_fns::error::AppError,
};

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

/// Stores `flash` for the next view of its page and redirects a plain form post to `target`.
pub(crate) async fn flash_to<T: Flash>(flash: &T, target: &str) -> Result<(), AppError> {
    let session = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    flash::put(&session, flash).await.map_err(internal)?;
    leptos_axum::redirect(target);
    Ok(())
}

/// The signed-in admin's one-time outcome of type `T`, taken (so removed) from the session.
pub(crate) async fn take_flash<T: Flash>() -> Result<Option<T>, AppError> {
    require_admin().await?;
    let session = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    flash::take(&session).await.map_err(internal)
}

/// The language this request's page renders in, by the rule the translations use: the
/// language cookie (which the gate sets from a signed-in admin's choice), else the first
/// language of `Accept-Language` that the console has; English by default.
pub(crate) fn locale() -> crate::i18n::Locale {
    if request_locale() == "zh-CN" {
        crate::i18n::Locale::zh_CN
    } else {
        crate::i18n::Locale::en
    }
}

/// The language of this request as a tag (`en`, `zh-CN`): the admin's choice (cookie), else
/// the browser's first supported language, else English.
pub(crate) fn request_locale() -> &'static str {
    let Some(parts) = use_context::<Parts>() else {
        return "en";
    };
    let cookie = parts
        .headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix("i18n_pref_locale=")
                .map(str::to_owned)
        });
    let wanted: Vec<String> = match cookie {
        Some(locale) => vec![locale],
        None => parts
            .headers
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(',')
            .map(|l| {
                l.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            })
            .collect(),
    };
    for language in wanted {
        let language = language.to_ascii_lowercase();
        if language.starts_with("zh") {
            return "zh-CN";
        }
        if language.starts_with("en") {
            return "en";
        }
    }
    "en"
}
