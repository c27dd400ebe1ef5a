use leptos::prelude::*;
use leptos_router::components::A;

use crate::{
    i18n::{t, td_string, use_i18n},
    server_fns::{auth::current_admin, environments::environment_notice},
};

/// The main navigation's links (only pages that exist).
fn nav_links() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <A href="/" exact=true>{t!(i18n, nav.dashboard)}</A>
        <A href="/admin/sandbox-settings">{t!(i18n, nav.sandbox_settings)}</A>
        <A href="/admin/environments">{t!(i18n, nav.environments)}</A>
        <A href="/admin/history">{t!(i18n, nav.history)}</A>
        <A href="/admin/sessions">{t!(i18n, nav.sessions)}</A>
        <A href="/admin/api-keys">{t!(i18n, nav.api_keys)}</A>
        <A href="/admin/audit">{t!(i18n, nav.audit)}</A>
        <A href="/admin/administrators">{t!(i18n, nav.administrators)}</A>
    }
}

/// The frame of every signed-in page: brand, navigation (only pages that exist), the
/// signed-in admin and the sign-out button (a plain form: it works without JavaScript).
#[component]
pub fn Layout(children: Children) -> impl IntoView {
    let admin = Resource::new(|| (), |_| current_admin());
    let environments = Resource::new(|| (), |_| environment_notice());
    let i18n = use_i18n();
    view! {
        <div class="app">
        <a class="skip-link" href="#main">{t!(i18n, nav.skip)}</a>
        <header class="topbar">
            <a class="brand" href="/">
                <span class="brand-mark" aria-hidden="true">"▣"</span>
                " sandbox-console"
            </a>
            <nav class="mainnav wide" aria-label=td_string!(i18n.get_locale_untracked(), nav.main).to_string()>{nav_links()}</nav>
            // On a phone the links fold into a menu that opens without JavaScript.
            <details class="menu narrow">
                <summary>{t!(i18n, nav.menu)}</summary>
                <nav class="mainnav" aria-label=td_string!(i18n.get_locale_untracked(), nav.main).to_string()>{nav_links()}</nav>
            </details>
            <div class="account">
                <Transition fallback=|| ()>
                    {move || {
                        admin.get().and_then(Result::ok).map(|admin| {
                            view! {
                                // The admin's theme choice ("auto" follows the browser): the
                                // stylesheet colours the page from this mark (.app:has(…)).
                                <span class="theme-mark" data-theme=admin.theme hidden></span>
                                <a class="admin-name" href="/admin/account" data-testid="admin-name" title=td_string!(i18n.get_locale_untracked(), nav.your_account).to_string()>
                                    {admin.username}
                                </a>
                            }
                        })
                    }}
                </Transition>
                <form method="post" action="/auth/logout" class="logout">
                    <button type="submit" class="button secondary" data-testid="logout">{t!(i18n, nav.sign_out)}</button>
                </form>
            </div>
        </header>
        <Transition fallback=|| ()>
            {move || {
                environments.get().and_then(Result::ok).flatten().map(|notice| view! {
                    <p class="notice info env-banner" role="status" data-testid="environment-banner">
                        {notice} " " <a href="/admin/environments">{t!(i18n, nav.environments)}</a>
                    </p>
                })
            }}
        </Transition>
        <main class="content" id="main" tabindex="-1">{children()}</main>
        </div>
    }
}
