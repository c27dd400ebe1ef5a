use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::i18n::{t, td_string, use_i18n, Locale};

/// The sign-in page. The form posts to `/auth/login`, which redirects back here with an
/// `error` code on failure, or to `next` on success: the same with or without JavaScript.
#[component]
pub fn LoginPage() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let next = move || query.with(|q| q.get("next")).unwrap_or_default();
    let message = move || {
        query.with(|q| {
            let retry = q.get("retry_after").and_then(|s| s.parse::<u64>().ok());
            q.get("error")
                .map(|code| notice(i18n.get_locale_untracked(), &code, retry))
        })
    };
    // With JavaScript on, show progress while the (deliberately slow) password check runs.
    let (pending, set_pending) = signal(false);

    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), login.title).to_string()/>
        <main class="login">
            <section class="card login-card">
                <h1><span class="brand-mark" aria-hidden="true">"▣"</span>" sandbox-console"</h1>
                <p class="muted">{t!(i18n, login.lead)}</p>
                {move || message().map(|(kind, text)| view! {
                    <p class=format!("notice {kind}") role="alert" data-testid="login-notice">{text}</p>
                })}
                <form method="post" action="/auth/login" on:submit=move |_| set_pending.set(true)>
                    <input type="hidden" name="next" value=next/>
                    <label for="username">{t!(i18n, login.username)}</label>
                    <input id="username" name="username" autocomplete="username" required autofocus/>
                    <label for="password">{t!(i18n, login.password)}</label>
                    <input id="password" name="password" type="password" autocomplete="current-password" required/>
                    <button type="submit" class="button" disabled=pending data-testid="login-submit">
                        {move || if pending.get() {
                            view! { <span class="spinner" aria-hidden="true"></span>" " {t!(i18n, login.pending)} }.into_any()
                        } else {
                            t!(i18n, login.submit).into_any()
                        }}
                    </button>
                </form>
            </section>
        </main>
    }
}

/// The (css class, text) shown for an `error` code in the query string.
fn notice(locale: Locale, code: &str, retry_after: Option<u64>) -> (&'static str, String) {
    match code {
        "invalid" => ("error", td_string!(locale, login.invalid).to_string()),
        "rate_limited" => (
            "error",
            match retry_after {
                Some(secs) => td_string!(locale, login.rate_limited_in, secs).to_string(),
                None => td_string!(locale, login.rate_limited).to_string(),
            },
        ),
        "unavailable" => ("error", td_string!(locale, login.unavailable).to_string()),
        "signed_out" => ("info", td_string!(locale, login.signed_out).to_string()),
        _ => ("error", td_string!(locale, login.failed).to_string()),
    }
}
