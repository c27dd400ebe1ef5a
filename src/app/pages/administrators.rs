use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::{
        components::{error_view::ErrorView, trial_panel::CopyButton},
        format::utc_time,
    },
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
    view! {
        <Title text="Administrators"/>
        <h1>"Administrators"</h1>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let admins = admins.get()?;
                    let me = me.get()?;
                    let flash = flash.get()?;
                    Some(admins.and_then(|a| me.and_then(|m| flash.map(|f| view! { <Admins admins=a me=m.id flash=f/> }))))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Admins(admins: Vec<AdminSummary>, me: i64, flash: Option<AccountFlash>) -> impl IntoView {
    let (notice, generated) = match flash {
        Some(AccountFlash::Notice(class, text)) => (Some((class, text)), None),
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
                <h2 id="otp-title">{format!("Password for {username}")}</h2>
                <p>"Give it to them over a safe channel. It is shown only now, and they must change it when they first sign in."</p>
                <pre class="output" id="one-time-password">{password}</pre>
                <CopyButton target="one-time-password"/>
            </section>
        })}
        <section class="card" aria-labelledby="admins-title">
            <h2 id="admins-title">"Who can sign in"</h2>
            <div class="table-wrap">
                <table class="table" data-testid="administrators">
                    <thead><tr><th>"Name"</th><th>"State"</th><th>"Last sign-in (UTC)"</th><th>"Added (UTC)"</th><th></th></tr></thead>
                    <tbody>
                        {admins.into_iter().map(|a| {
                            let state = if a.disabled {
                                ("badge failure", "disabled")
                            } else if a.must_change_password {
                                ("badge neutral", "must change password")
                            } else {
                                ("badge success", "active")
                            };
                            let yourself = a.id == me;
                            view! {
                                <tr data-testid="administrator" data-name=a.username.clone()>
                                    <td>{a.username.clone()} {yourself.then_some(" (you)")}</td>
                                    <td><span class=state.0>{state.1}</span></td>
                                    <td class="nowrap">{a.last_login_at.as_deref().map(utc_time).unwrap_or_else(|| "never".into())}</td>
                                    <td class="nowrap">{utc_time(&a.created_at)}</td>
                                    <td class="row-actions">
                                        {(!yourself).then(|| view! {
                                            <form method="post" action="/rpc/set_administrator_disabled" class="inline">
                                                <input type="hidden" name="id" value=a.id.to_string()/>
                                                <input type="hidden" name="disabled" value=(!a.disabled).to_string()/>
                                                <button type="submit" class="button ghost" data-testid="toggle-disabled">
                                                    {if a.disabled { "Enable" } else { "Disable" }}
                                                </button>
                                            </form>
                                            <form method="post" action="/rpc/reset_administrator_password" class="inline">
                                                <input type="hidden" name="id" value=a.id.to_string()/>
                                                <button type="submit" class="button ghost" data-testid="reset-password">"New password"</button>
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
            <h2 id="add-title">"Add an administrator"</h2>
            <form method="post" action="/rpc/add_administrator" class="actions" data-testid="add-admin-form">
                <div class="field">
                    <label for="new-admin">"Name"</label>
                    <input id="new-admin" name="username" required maxlength="64" autocomplete="off"/>
                </div>
                <button type="submit" class="button" data-testid="add-admin">"Add"</button>
            </form>
            <p class="help">"Letters, digits, '.', '_', '-' or '@'. A password is generated and shown once."</p>
        </section>
    }
}
