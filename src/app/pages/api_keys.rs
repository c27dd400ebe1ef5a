use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::{
        components::{error_view::ErrorView, trial_panel::CopyButton},
        format::When,
    },
    i18n::{t, td_string, use_i18n, Locale},
    model::api_key::{ApiKeyFlash, ApiKeyInfo, Scope},
    server_fns::api_keys::{list_api_keys, take_api_key_flash},
};

/// API keys for agents and scripts: create (the key is shown once), list, revoke. Plain forms:
/// the page works with JavaScript off.
#[component]
pub fn ApiKeysPage() -> impl IntoView {
    let keys = Resource::new(|| (), |_| list_api_keys());
    let flash = Resource::new(|| (), |_| take_api_key_flash());
    let query = leptos_router::hooks::use_query_map();
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), nav.api_keys).to_string()/>
        <h1>{t!(i18n, nav.api_keys)}</h1>
        <p class="muted intro">
            {t!(i18n, keys.intro_header)} " " <code>"Authorization: Bearer <key>"</code> " "
            {t!(i18n, keys.intro_scopes)} " " <code>"POST /api/v1/execute"</code> " · " <code>"POST /run"</code> " "
            {t!(i18n, keys.intro_openapi)} " " <a href="/api/v1/openapi.json">"/api/v1/openapi.json"</a>
        </p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let keys = keys.get()?;
                    let flash = flash.get()?;
                    let confirm = query.with(|q| q.get("revoke")).and_then(|id| id.parse::<i64>().ok());
                    Some(keys.and_then(|k| flash.map(|f| view! { <Keys keys=k flash=f confirm/> })))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Keys(keys: Vec<ApiKeyInfo>, flash: Option<ApiKeyFlash>, confirm: Option<i64>) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let (mut name, mut scopes) = (String::new(), vec![Scope::Execute]);
    let mut created = None;
    let mut notice = None;
    match flash {
        Some(ApiKeyFlash::Created(key)) => created = Some(key),
        Some(ApiKeyFlash::Revoked { name }) => {
            notice = Some((
                "success",
                td_string!(locale, keys.revoked, name).to_string(),
            ))
        }
        Some(ApiKeyFlash::Invalid {
            message,
            name: typed,
            scopes: ticked,
        }) => {
            notice = Some(("error", message));
            if !typed.is_empty() {
                name = typed;
                scopes = ticked;
            }
        }
        None => {}
    }
    let (pending, set_pending) = signal(false);
    let live = keys.iter().filter(|k| k.revoked_at.is_none()).count();
    view! {
        {created.map(|created| view! {
            <section class="card new-key" role="status" data-testid="new-key-card">
                <h2>{td_string!(locale, keys.created, name = created.info.name.clone()).to_string()}</h2>
                <p>{t!(i18n, keys.copy_now)}</p>
                <pre class="output mono" id="new-key" data-testid="new-key">{created.key.clone()}</pre>
                <CopyButton target="new-key"/>
                <p class="muted">{t!(i18n, keys.try_it)} " " <code class="mono">{format!(
                    "curl -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -d '{{\"language\":\"python\",\"code\":\"def main():\\n    return 42\"}}' <console>/api/v1/execute",
                    created.key
                )}</code></p>
            </section>
        })}
        {notice.map(|(class, text)| view! { <p class=format!("notice {class}") role="status" data-testid="key-notice">{text}</p> })}
        <section class="card">
            <h2>{t!(i18n, keys.create_title)}</h2>
            <form method="post" action="/rpc/create_api_key" data-testid="create-key-form"
                on:submit=move |_| set_pending.set(true)>
                <div class="field">
                    <label for="key-name">{t!(i18n, common.name)} " " <span class="required" aria-hidden="true">"*"</span></label>
                    <input id="key-name" name="name" required maxlength="64" value=name
                        placeholder="ragflow-prod" autocomplete="off"/>
                    <p class="help">{t!(i18n, keys.name_help)}</p>
                </div>
                <div class="field">
                    <label for="key-expiry">{t!(i18n, keys.expiry)}</label>
                    <input id="key-expiry" name="expires_days" type="number" min="1"
                        max=crate::model::api_key::MAX_EXPIRY_DAYS.to_string() placeholder=td_string!(locale, common.never).to_string()
                        aria-describedby="key-expiry-help"/>
                    <p class="help" id="key-expiry-help">{t!(i18n, keys.expiry_help)}</p>
                </div>
                <fieldset class="scopes">
                    <legend>{t!(i18n, keys.scopes)}</legend>
                    {Scope::ALL.into_iter().map(|scope| view! {
                        <label class="check">
                            <input type="checkbox" name=scope.id() value="on" checked=scopes.contains(&scope)
                                data-testid=format!("scope-{}", scope.id())/>
                            <b>{scope.id()}</b> " — " {scope_words(locale, scope)}
                        </label>
                    }).collect_view()}
                </fieldset>
                <div class="actions">
                    <button type="submit" class="button" disabled=pending data-testid="create-key">{t!(i18n, keys.create)}</button>
                    {move || pending.get().then(|| view! {
                        <span class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.working)}</span>
                    })}
                </div>
            </form>
        </section>
        <section class="card">
            <h2>{t!(i18n, keys.keys)} " " <span class="muted">{td_string!(locale, keys.live, live).to_string()}</span></h2>
            {if keys.is_empty() {
                view! { <p class="muted" data-testid="no-keys">{t!(i18n, keys.none)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table" data-testid="keys">
                        <thead><tr>
                            <th>{t!(i18n, common.name)}</th><th>{t!(i18n, keys.key)}</th><th>{t!(i18n, keys.scopes)}</th><th>{t!(i18n, keys.created_at)}</th><th>{t!(i18n, keys.expires)}</th><th>{t!(i18n, keys.last_used)}</th><th></th>
                        </tr></thead>
                        <tbody>
                            {keys.into_iter().map(|key| {
                                let confirming = confirm == Some(key.id);
                                view! { <KeyRow key confirming/> }
                            }).collect_view()}
                        </tbody>
                    </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn KeyRow(key: ApiKeyInfo, confirming: bool) -> impl IntoView {
    let scopes: Vec<_> = key.scopes.iter().map(|s| s.id()).collect();
    let revoked = key.revoked_at.clone();
    let is_revoked = revoked.is_some();
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let never = td_string!(locale, common.never).to_string();
    let time = |stamp: Option<String>| match stamp {
        Some(stamp) => view! { <When stamp/> }.into_any(),
        None => never.clone().into_any(),
    };
    view! {
        <tr class:revoked=is_revoked data-testid=format!("key-{}", key.name)>
            <td>{key.name.clone()}</td>
            <td class="mono">{format!("{}…", key.prefix)}</td>
            <td>{scopes.join(", ")}</td>
            <td><When stamp=key.created_at.clone()/> " " <span class="muted">{td_string!(locale, keys.created_by, name = key.created_by.clone()).to_string()}</span></td>
            <td>{time(key.expires_at.clone())}</td>
            <td>
                {time(key.last_used_at.clone())}
                {key.last_used_address.clone().map(|address| view! { " " <span class="muted">{td_string!(locale, keys.from_address, address).to_string()}</span> })}
            </td>
            <td>
                {match (revoked, confirming) {
                    (Some(at), _) => view! { <span class="badge failure">{t!(i18n, keys.revoked_badge)} " " <When stamp=at/></span> }.into_any(),
                    // Revoking breaks every agent that uses the key: it takes a second step.
                    (None, true) => view! {
                        <form method="post" action="/rpc/revoke_api_key" class="confirm" role="alertdialog"
                            aria-label=td_string!(locale, keys.revoke_q, name = key.name.clone()).to_string() data-testid="confirm-revoke">
                            <input type="hidden" name="id" value=key.id.to_string()/>
                            <p>{td_string!(locale, keys.revoke_confirm, name = key.name.clone()).to_string()}</p>
                            <button type="submit" class="button danger" autofocus
                                data-testid=format!("confirm-revoke-{}", key.name)>{t!(i18n, keys.revoke)}</button>
                            " " <a href="/admin/api-keys" class="button ghost" data-testid="cancel-revoke">{t!(i18n, common.cancel)}</a>
                        </form>
                    }.into_any(),
                    (None, false) => view! {
                        <a href=format!("/admin/api-keys?revoke={}", key.id) class="button ghost danger"
                            data-testid=format!("revoke-{}", key.name)>{t!(i18n, keys.revoke)} "…"</a>
                    }.into_any(),
                }}
            </td>
        </tr>
    }
}

/// What a scope allows, in the page's language.
fn scope_words(locale: Locale, scope: Scope) -> String {
    match scope {
        Scope::Execute => td_string!(locale, keys.scope_execute).to_string(),
        Scope::Admin => td_string!(locale, keys.scope_admin).to_string(),
    }
}
