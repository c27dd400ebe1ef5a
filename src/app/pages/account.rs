use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::{components::error_view::ErrorView, format::When},
    i18n::{t, td_string, use_i18n, Locale},
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
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), account.title).to_string()/>
        <h1>{t!(i18n, account.title)}</h1>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
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
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let (notice, refused) = match flash {
        Some(AccountFlash::Notice(class, text)) => (Some((class, text)), None),
        Some(AccountFlash::Refused { field, message, .. }) => (None, Some((field, message))),
        _ => (None, None),
    };
    // A refused change: its message beside the field it is about, focused there.
    let error_of = |name: &str| {
        refused
            .as_ref()
            .filter(|(field, _)| field == name)
            .map(|(_, message)| message.clone())
    };
    let (current_error, new_error, confirm_error) =
        (error_of("current"), error_of("new"), error_of("confirm"));
    let none_refused = refused.is_none();
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
                {t!(i18n, account.forced)}
            </p>
        })}
        <section class="card" aria-labelledby="password-title">
            <h2 id="password-title">{t!(i18n, account.change_title)}</h2>
            <p class="muted">{td_string!(locale, account.change_help, name = account.admin.username.clone()).to_string()}</p>
            <form method="post" action="/rpc/change_password" class="stack" data-testid="password-form">
                <PasswordField id="current-password" name="current" label=td_string!(locale, account.current).to_string()
                    autocomplete="current-password" error=current_error focus=forced && none_refused/>
                <PasswordField id="new-password" name="new" label=td_string!(locale, account.new_pw).to_string()
                    autocomplete="new-password" error=new_error focus=false/>
                <PasswordField id="confirm-password" name="confirm" label=td_string!(locale, account.confirm).to_string()
                    autocomplete="new-password" error=confirm_error focus=false/>
                <div class="actions"><button type="submit" class="button" data-testid="change-password">{t!(i18n, account.change)}</button></div>
            </form>
        </section>
        <section class="card" aria-labelledby="sessions-title">
            <h2 id="sessions-title">{t!(i18n, account.sessions)}</h2>
            <div class="table-wrap">
                <table class="table" data-testid="sessions">
                    <thead><tr><th>{t!(i18n, account.signed_in)}</th><th>{t!(i18n, account.last_seen)}</th><th>{t!(i18n, run.address)}</th><th>{t!(i18n, account.browser)}</th><th></th></tr></thead>
                    <tbody>
                        {account.sessions.into_iter().map(|s| view! {
                            <tr>
                                <td><When stamp=s.created_at/></td>
                                <td><When stamp=s.last_seen_at/></td>
                                <td>{s.address.unwrap_or_default()}</td>
                                <td class="ua">{s.user_agent.unwrap_or_default()}</td>
                                <td>{s.current.then(|| view! { <span class="badge success">{t!(i18n, account.this_session)}</span> })}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            <form method="post" action="/rpc/sign_out_other_sessions" class="actions">
                <button type="submit" class="button ghost" data-testid="sign-out-others" disabled=others == 0>
                    {td_string!(locale, account.sign_out_others, others).to_string()}
                </button>
            </form>
        </section>
        <section class="card" aria-labelledby="language-title">
            <h2 id="language-title">"Language / 语言"</h2>
            <form method="post" action="/rpc/set_language" class="actions" data-testid="language-form">
                <label for="language" class="sr-only">{t!(i18n, common.language)}</label>
                <select id="language" name="locale">
                    {LANGUAGES.into_iter().map(|(id, label)| view! { <option value=id selected=language == id>{label}</option> }).collect_view()}
                </select>
                <button type="submit" class="button ghost" data-testid="save-language">"Save / 保存"</button>
            </form>
        </section>
        <section class="card" aria-labelledby="theme-title">
            <h2 id="theme-title">{t!(i18n, account.theme)}</h2>
            <form method="post" action="/rpc/set_theme" class="actions" data-testid="theme-form">
                <label for="theme" class="sr-only">{t!(i18n, account.theme)}</label>
                <select id="theme" name="theme">
                    {THEMES.into_iter().map(|(id, _)| view! { <option value=id selected=theme == id>{theme_label(locale, id)}</option> }).collect_view()}
                </select>
                <button type="submit" class="button ghost" data-testid="save-theme">{t!(i18n, account.save_theme)}</button>
            </form>
        </section>
    }
}

/// One password field of the change form, with the message of a refused change beside it
/// (and the focus, then).
#[component]
fn PasswordField(
    id: &'static str,
    name: &'static str,
    label: String,
    autocomplete: &'static str,
    error: Option<String>,
    focus: bool,
) -> impl IntoView {
    let invalid = error.is_some();
    let error_id = format!("{id}-error");
    let described = invalid.then(|| error_id.clone());
    view! {
        <div class="field" class:has-error=invalid>
            <label for=id>{label}</label>
            <input id=id name=name type="password" autocomplete=autocomplete required
                minlength=(name != "current").then_some("8") autofocus=focus || invalid
                aria-invalid=invalid.then_some("true") aria-describedby=described/>
            {error.map(|message| view! {
                <p class="field-error" id=error_id role="alert" data-testid=format!("{name}-error")>{message}</p>
            })}
        </div>
    }
}

/// A theme's name in the page's language.
fn theme_label(locale: Locale, id: &str) -> String {
    match id {
        "light" => td_string!(locale, account.theme_light).to_string(),
        "dark" => td_string!(locale, account.theme_dark).to_string(),
        _ => td_string!(locale, account.theme_auto).to_string(),
    }
}
