//! The Leptos UI: the HTML shell, the routes, pages and components. Compiles for ssr and hydrate.

pub mod components;
pub mod format;
pub mod pages;
mod shell;

pub use shell::shell;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Html, Link, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, SsrMode,
};

use components::layout::Layout;
use pages::{
    account::AccountPage,
    administrators::AdministratorsPage,
    api_keys::ApiKeysPage,
    environments::{EnvironmentDetailPage, EnvironmentsPage},
    history::{ExecutionPage, HistoryListPage},
    login::LoginPage,
    not_found::NotFoundPage,
    overview::OverviewPage,
    sandbox_settings::SandboxSettingsPage,
    sessions::SessionsPage,
    settings_audit::SettingsAuditPage,
};

/// The application. Every route renders with `SsrMode::Async` so the full page, data
/// included, arrives in the first response: the console works with JavaScript off.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // The translations' context: the locale the server resolved (language cookie, then
    // Accept-Language), which the hydrated page reads back from <html lang>. Provided by
    // hand rather than with <I18nContextProvider>, which also writes an empty <script>
    // (without the page's CSP nonce).
    let i18n = leptos_i18n::context::init_i18n_context::<crate::i18n::Locale>();
    provide_context(i18n);
    let lang = move || leptos_i18n::Locale::as_str(i18n.get_locale());
    let dir = move || leptos_i18n::Locale::direction(i18n.get_locale()).as_str();
    view! {
        <Html attr:lang=lang attr:dir=dir/>
        <Stylesheet id="leptos" href="/pkg/sandbox-console.css"/>
        <Link rel="icon" href="/favicon.svg" type_="image/svg+xml"/>
        <Title formatter=|page: String| if page.is_empty() { "sandbox-console".to_owned() } else { format!("{page} · sandbox-console") }/>
        <Router>
            <Routes fallback=|| view! { <Layout><NotFoundPage/></Layout> }>
                <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async/>
                <Route path=path!("/") view=|| view! { <Layout><OverviewPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/sandbox-settings") view=|| view! { <Layout><SandboxSettingsPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/sessions") view=|| view! { <Layout><SessionsPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/api-keys") view=|| view! { <Layout><ApiKeysPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/environments") view=|| view! { <Layout><EnvironmentsPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/environments/:name") view=|| view! { <Layout><EnvironmentDetailPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/history") view=|| view! { <Layout><HistoryListPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/history/:id") view=|| view! { <Layout><ExecutionPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/account") view=|| view! { <Layout><AccountPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/administrators") view=|| view! { <Layout><AdministratorsPage/></Layout> } ssr=SsrMode::Async/>
                <Route path=path!("/admin/audit") view=|| view! { <Layout><SettingsAuditPage/></Layout> } ssr=SsrMode::Async/>
            </Routes>
        </Router>
    }
}
