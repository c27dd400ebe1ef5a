use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::{t, td_string, use_i18n};

/// The 404 page; on the server it also sets the 404 status.
#[component]
pub fn NotFoundPage() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), errors.not_found).to_string()/>
        <section class="error-panel" data-status="404">
            <h1>{t!(i18n, errors.not_found)}</h1>
            <p>{t!(i18n, errors.no_page)}</p>
            <a class="button" href="/">{t!(i18n, errors.go_home)}</a>
        </section>
    }
}
