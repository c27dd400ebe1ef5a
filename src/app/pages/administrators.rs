use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::{
        components::{confirm::Confirm, error_view::ErrorView, trial_panel::CopyButton},
        format::When,
    },
    i18n::{t, td_string, use_i18n},
    model::admin::{AccountFlash, AdminSummary},
    server_fns::{account::take_account_flash, admins::list_administrators, auth::current_admin},
};

/// The administrators: add one (a generated password, shown once and changed at their first
/// sign-in), disable or enable, give a new generated password. Plain forms: it works with
/// JavaScript off.
#[component]
pub fn AdministratorsPage() -> impl IntoView {
    let admins = Resource::new(|| (), |_| list_administrators());
    let me = Resource::new(|| (), |_| current_admin());
    let flash = Resource::new(|| (), |_| take_account_flash());
    let query = use_query_map();
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), nav.administrators).to_string()/>
        <h1>{t!(i18n, nav.administrators)}</h1>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let admins = admins.get()?;
                    let me = me.get()?;
                    let flash = flash.get()?;
                    let disabling = query.with(|q| q.get("disable")).and_then(|id| id.parse::<i64>().ok());
                    Some(admins.and_then(|a| me.and_then(|m| flash.map(|f| view! { <Admins admins=a me=m.id flash=f disabling/> }))))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Admins(
    admins: Vec<AdminSummary>,
    me: i64,
    flash: Option<AccountFlash>,
    /// The administrator whose Disable waits to be confirmed (`?disable=<id>`).
    disabling: Option<i64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let mut refused = None;
    let (notice, generated) = match flash {
        Some(AccountFlash::Notice(class, text)) => (Some((class, text)), None),
        Some(AccountFlash::Refused { message, value, .. }) => {
            refused = Some((message, value));
            (None, None)
        }
        Some(AccountFlash::OneTimePassword { username, password }) => {
            (None, Some((username, password)))
        }
        None => (None, None),
    };
    view! {
        <div class="notices" role="status" aria-live="polite">
            {notice.map(|(class, text)| view! {
                <p class=format!("notice {class}") tabindex="-1" autofocus data-testid="admins-notice">{text}</p>
            })}
        </div>
        {generated.map(|(username, password)| view! {
            <section class="card new-key" data-testid="one-time-password" aria-labelledby="otp-title">
                <h2 id="otp-title">{td_string!(locale, admins.password_for, username).to_string()}</h2>
                <p>{t!(i18n, admins.password_help)}</p>
                <pre class="output" id="one-time-password">{password}</pre>
                <CopyButton target="one-time-password"/>
            </section>
        })}
        <section class="card" aria-labelledby="admins-title">
            <h2 id="admins-title">{t!(i18n, admins.who)}</h2>
            <div class="table-wrap">
                <table class="table" data-testid="administrators">
                    <thead><tr><th>{t!(i18n, common.name)}</th><th>{t!(i18n, admins.state)}</th><th>{t!(i18n, admins.last_sign_in)}</th><th>{t!(i18n, admins.added)}</th><th></th></tr></thead>
                    <tbody>
                        {admins.into_iter().map(|a| {
                            let state = if a.disabled {
                                ("badge failure", td_string!(locale, admins.disabled).to_string())
                            } else if a.must_change_password {
                                ("badge neutral", td_string!(locale, admins.must_change).to_string())
                            } else {
                                ("badge success", td_string!(locale, admins.active).to_string())
                            };
                            let yourself = a.id == me;
                            view! {
                                <tr data-testid="administrator" data-name=a.username.clone()>
                                    <td>{a.username.clone()} {yourself.then(|| td_string!(locale, admins.you).to_string())}</td>
                                    <td><span class=state.0>{state.1}</span></td>
                                    <td>{match a.last_login_at.clone() {
                                        Some(stamp) => view! { <When stamp/> }.into_any(),
                                        None => td_string!(locale, common.never).to_string().into_any(),
                                    }}</td>
                                    <td><When stamp=a.created_at.clone()/></td>
                                    <td class="row-actions">
                                        {(!yourself).then(|| view! {
                                            {if a.disabled {
                                                view! {
                                                    <form method="post" action="/rpc/set_administrator_disabled" class="inline">
                                                        <input type="hidden" name="id" value=a.id.to_string()/>
                                                        <input type="hidden" name="disabled" value="false"/>
                                                        <button type="submit" class="button ghost" data-testid="toggle-disabled">{td_string!(locale, admins.enable).to_string()}</button>
                                                    </form>
                                                }.into_any()
                                            } else if disabling == Some(a.id) {
                                                // Disabling signs them out and stops their keys: a second step.
                                                view! {
                                                    <Confirm action="set_administrator_disabled"
                                                        question=td_string!(locale, admins.disable_q, name = a.username.clone()).to_string()
                                                        fields=vec![("id", a.id.to_string()), ("disabled", "true".to_owned())]
                                                        submit=td_string!(locale, admins.disable).to_string()
                                                        cancel="/admin/administrators".to_owned() testid="confirm-disable"/>
                                                }.into_any()
                                            } else {
                                                view! {
                                                    <a href=format!("/admin/administrators?disable={}", a.id) class="button ghost" data-testid="toggle-disabled">
                                                        {td_string!(locale, admins.disable).to_string()} "…"
                                                    </a>
                                                }.into_any()
                                            }}
                                            <form method="post" action="/rpc/reset_administrator_password" class="inline">
                                                <input type="hidden" name="id" value=a.id.to_string()/>
                                                <button type="submit" class="button ghost" data-testid="reset-password">{t!(i18n, admins.new_password)}</button>
                                            </form>
                                        })}
                                    </td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        <section class="card" aria-labelledby="add-title">
            <h2 id="add-title">{t!(i18n, admins.add_title)}</h2>
            <form method="post" action="/rpc/add_administrator" class="actions" data-testid="add-admin-form">
                {
                    let (error, typed) = refused.map_or((None, String::new()), |(m, v)| (Some(m), v));
                    let invalid = error.is_some();
                    view! {
                        <div class="field" class:has-error=invalid>
                            <label for="new-admin">{t!(i18n, common.name)}</label>
                            <input id="new-admin" name="username" required maxlength="64" autocomplete="off"
                                value=typed autofocus=invalid aria-invalid=invalid.then_some("true")
                                aria-describedby=invalid.then_some("new-admin-error")/>
                            {error.map(|message| view! {
                                <p class="field-error" id="new-admin-error" role="alert" data-testid="username-error">{message}</p>
                            })}
                        </div>
                    }
                }
                <button type="submit" class="button" data-testid="add-admin">{t!(i18n, admins.add)}</button>
            </form>
            <p class="help">{t!(i18n, admins.name_help)}</p>
        </section>
    }
}
