use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The sign-in page. The form posts to `/auth/login`, which redirects back here with an
/// `error` code on failure, or to `next` on success: the same with or without JavaScript.
#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let next = move || query.with(|q| q.get("next")).unwrap_or_default();
    let message = move || {
        query.with(|q| {
            let retry = q.get("retry_after").and_then(|s| s.parse::<u64>().ok());
            q.get("error").map(|code| notice(&code, retry))
        })
    };
    // With JavaScript on, show progress while the (deliberately slow) password check runs.
    let (pending, set_pending) = signal(false);

    view! {
        <Title text="Sign in"/>
        <main class="login">
            <section class="card login-card">
                <h1><span class="brand-mark" aria-hidden="true">"▣"</span>" sandbox-console"</h1>
                <p class="muted">"Sign in to manage code-execution sandboxes."</p>
                {move || message().map(|(kind, text)| view! {
                    <p class=format!("notice {kind}") role="alert" data-testid="login-notice">{text}</p>
                })}
                <form method="post" action="/auth/login" on:submit=move |_| set_pending.set(true)>
                    <input type="hidden" name="next" value=next/>
                    <label for="username">"Username"</label>
                    <input id="username" name="username" autocomplete="username" required autofocus/>
                    <label for="password">"Password"</label>
                    <input id="password" name="password" type="password" autocomplete="current-password" required/>
                    <button type="submit" class="button" disabled=pending data-testid="login-submit">
                        {move || if pending.get() {
                            view! { <span class="spinner" aria-hidden="true"></span>" Signing in…" }.into_any()
                        } else {
                            "Sign in".into_any()
                        }}
                    </button>
                </form>
            </section>
        </main>
    }
}

/// The (css class, text) shown for an `error` code in the query string.
fn notice(code: &str, retry_after: Option<u64>) -> (&'static str, String) {
    match code {
        "invalid" => ("error", "Invalid username or password.".into()),
        "rate_limited" => (
            "error",
            match retry_after {
                Some(secs) => {
                    format!("Too many failed sign-in attempts. Try again in {secs} seconds.")
                }
                None => "Too many failed sign-in attempts. Try again later.".into(),
            },
        ),
        "unavailable" => (
            "error",
            "Sign-in is unavailable right now. Try again in a moment.".into(),
        ),
        "signed_out" => ("info", "You have been signed out.".into()),
        _ => ("error", "Sign-in failed.".into()),
    }
}
