use leptos::prelude::*;
use leptos_meta::Title;

/// The 404 page; on the server it also sets the 404 status.
#[component]
pub fn NotFoundPage() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found"/>
        <section class="error-panel" data-status="404">
            <h1>"Page not found"</h1>
            <p>"There is no page at this address."</p>
            <a class="button" href="/">"Go to the overview"</a>
        </section>
    }
}
