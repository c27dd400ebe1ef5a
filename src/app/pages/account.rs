use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::{components::error_view::ErrorView, format::utc_time},
    model::admin::{Account, AccountFlash, LANGUAGES, THEMES},
    server_fns::account::{get_account, take_account_flash},
};

/// Your account: change your password (required after signing in with a generated one),
/// your sessions with "Sign out other sessions", and your theme. Plain forms: it works with
/// JavaScript off.
#[component]
pub fn AccountPage() -> impl IntoView {
    let account = Resource::new(|| (), |_| get_account());
    let flash = Resource::new(|| (), |_| take_account_flash());
    view! {
        <Title text="Account"/>
        <h1>"Account"</h1>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let account = account.get()?;
                    let flash = flash.get()?;
                    Some(account.and_then(|a| flash.map(|f| view! { <AccountView account=a flash=f/> })))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn AccountView(account: Account, flash: Option<AccountFlash>) -> impl IntoView {
    let notice = match flash {
        Some(AccountFlash::Notice(class, text)) => Some((class, text)),
        _ => None,
    };
    let forced = account.admin.must_change_password;
    let theme = account.admin.theme.clone();
    let language = account.admin.locale.clone();
    let others = account.sessions.iter().filter(|s| !s.current).count();
    view! {
        <div class="notices" role="status" aria-live="polite">
            {notice.map(|(class, text)| view! {
                <p class=format!("notice {class}") tabindex="-1" autofocus data-testid="account-notice">{text}</p>
            })}
        </div>
        {forced.then(|| view! {
            <p class="notice info" role="alert" data-testid="password-change-required">
                "You signed in with a generated password. Choose your own to continue: the other pages open once it is changed."
            </p>
        })}
        <section class="card" aria-labelledby="password-title">
            <h2 id="password-title">"Change your password"</h2>
            <p class="muted">{format!("Signed in as {}. At least 8 characters. Your other sessions are signed out.", account.admin.username)}</p>
            <form method="post" action="/rpc/change_password" class="stack" data-testid="password-form">
                <div class="field">
                    <label for="current-password">"Current password"</label>
                    <input id="current-password" name="current" type="password" autocomplete="current-password" required autofocus=forced/>
                </div>
                <div class="field">
                    <label for="new-password">"New password"</label>
                    <input id="new-password" name="new" type="password" autocomplete="new-password" minlength="8" required/>
                </div>
                <div class="field">
                    <label for="confirm-password">"New password, again"</label>
                    <input id="confirm-password" name="confirm" type="password" autocomplete="new-password" minlength="8" required/>
                </div>
                <div class="actions"><button type="submit" class="button" data-testid="change-password">"Change password"</button></div>
            </form>
        </section>
        <section class="card" aria-labelledby="sessions-title">
            <h2 id="sessions-title">"Your sessions"</h2>
            <div class="table-wrap">
                <table class="table" data-testid="sessions">
                    <thead><tr><th>"Signed in (UTC)"</th><th>"Last seen (UTC)"</th><th>"Address"</th><th>"Browser"</th><th></th></tr></thead>
                    <tbody>
                        {account.sessions.into_iter().map(|s| view! {
                            <tr>
                                <td class="nowrap">{utc_time(&s.created_at)}</td>
                                <td class="nowrap">{utc_time(&s.last_seen_at)}</td>
                                <td>{s.address.unwrap_or_default()}</td>
                                <td class="ua">{s.user_agent.unwrap_or_default()}</td>
                                <td>{s.current.then(|| view! { <span class="badge success">"this session"</span> })}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            <form method="post" action="/rpc/sign_out_other_sessions" class="actions">
                <button type="submit" class="button ghost" data-testid="sign-out-others" disabled=others == 0>
                    {format!("Sign out other sessions ({others})")}
                </button>
            </form>
        </section>
        <section class="card" aria-labelledby="language-title">
            <h2 id="language-title">"Language / 语言"</h2>
            <form method="post" action="/rpc/set_language" class="actions" data-testid="language-form">
                <label for="language" class="sr-only">"Language"</label>
                <select id="language" name="locale">
                    {LANGUAGES.into_iter().map(|(id, label)| view! { <option value=id selected=language == id>{label}</option> }).collect_view()}
                </select>
                <button type="submit" class="button ghost" data-testid="save-language">"Save / 保存"</button>
            </form>
        </section>
        <section class="card" aria-labelledby="theme-title">
            <h2 id="theme-title">"Theme"</h2>
            <form method="post" action="/rpc/set_theme" class="actions" data-testid="theme-form">
                <label for="theme" class="sr-only">"Theme"</label>
                <select id="theme" name="theme">
                    {THEMES.into_iter().map(|(id, label)| view! { <option value=id selected=theme == id>{label}</option> }).collect_view()}
                </select>
                <button type="submit" class="button ghost" data-testid="save-theme">"Save theme"</button>
            </form>
        </section>
    }
}
