use leptos::prelude::*;
use leptos_router::components::A;

use crate::server_fns::{auth::current_admin, environments::environment_notice};

/// The main navigation's links (only pages that exist).
fn nav_links() -> impl IntoView {
    view! {
        <A href="/" exact=true>"Dashboard"</A>
        <A href="/admin/sandbox-settings">"Sandbox settings"</A>
        <A href="/admin/environments">"Environments"</A>
        <A href="/admin/history">"History"</A>
        <A href="/admin/api-keys">"API keys"</A>
        <A href="/admin/audit">"Audit"</A>
        <A href="/admin/administrators">"Administrators"</A>
    }
}

/// The frame of every signed-in page: brand, navigation (only pages that exist), the
/// signed-in admin and the sign-out button (a plain form: it works without JavaScript).
#[component]
pub fn Layout(children: Children) -> impl IntoView {
    let admin = Resource::new(|| (), |_| current_admin());
    let environments = Resource::new(|| (), |_| environment_notice());
    // The admin's theme choice ("auto" follows the browser).
    let theme = move || {
        admin
            .get()
            .and_then(Result::ok)
            .map(|a| a.theme)
            .filter(|t| t == "light" || t == "dark")
    };
    view! {
        <div class="app" data-theme=theme>
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="topbar">
            <a class="brand" href="/">
                <span class="brand-mark" aria-hidden="true">"▣"</span>
                " sandbox-console"
            </a>
            <nav class="mainnav wide" aria-label="Main">{nav_links()}</nav>
            // On a phone the links fold into a menu that opens without JavaScript.
            <details class="menu narrow">
                <summary>"Menu"</summary>
                <nav class="mainnav" aria-label="Main">{nav_links()}</nav>
            </details>
            <div class="account">
                <Transition fallback=|| ()>
                    {move || {
                        admin.get().and_then(Result::ok).map(|admin| {
                            view! {
                                <a class="admin-name" href="/admin/account" data-testid="admin-name" title="Your account">
                                    {admin.username}
                                </a>
                            }
                        })
                    }}
                </Transition>
                <form method="post" action="/auth/logout" class="logout">
                    <button type="submit" class="button secondary" data-testid="logout">"Sign out"</button>
                </form>
            </div>
        </header>
        <Transition fallback=|| ()>
            {move || {
                environments.get().and_then(Result::ok).flatten().map(|notice| view! {
                    <p class="notice info env-banner" role="status" data-testid="environment-banner">
                        {notice} " " <a href="/admin/environments">"Environments"</a>
                    </p>
                })
            }}
        </Transition>
        <main class="content" id="main" tabindex="-1">{children()}</main>
        </div>
    }
}
