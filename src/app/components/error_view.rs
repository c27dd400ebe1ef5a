use leptos::prelude::*;

use crate::{
    i18n::{t, use_i18n},
    server_fns::error::AppError,
};

/// Shows errors caught by an `ErrorBoundary` and gives the HTTP response the matching status.
#[component]
pub fn ErrorView(errors: ArcRwSignal<Errors>) -> impl IntoView {
    let list = errors
        .get_untracked()
        .into_iter()
        .map(|(_, e)| e)
        .collect::<Vec<_>>();
    let status = list
        .iter()
        .filter_map(|e| e.downcast_ref::<AppError>().map(AppError::status))
        .max()
        .unwrap_or(500);
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(
            http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR),
        );
    }
    let i18n = use_i18n();
    view! {
        <section class="error-panel" role="alert" data-status=status>
            <h2>{if status == 401 { t!(i18n, errors.sign_in_again).into_any() } else { t!(i18n, errors.went_wrong).into_any() }}</h2>
            <ul>{list.into_iter().map(|e| view! { <li>{e.to_string()}</li> }).collect_view()}</ul>
            {(status == 401).then(|| view! { <a class="button" href="/login">{t!(i18n, login.submit)}</a> })}
        </section>
    }
}
