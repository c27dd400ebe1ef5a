use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::components::{error_view::ErrorView, trial_panel::CopyButton},
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
    view! {
        <Title text="API keys"/>
        <h1>"API keys"</h1>
        <p class="muted intro">
            "Agents and scripts run code with an API key: "
            <code>"Authorization: Bearer <key>"</code>
            ". Keys with the " <b>"execute"</b> " scope may call " <code>"POST /api/v1/execute"</code>
            " and RAGFlow's " <code>"POST /run"</code> "; keys with the " <b>"admin"</b>
            " scope may change sandbox settings through RAGFlow's admin API. The API is described at "
            <a href="/api/v1/openapi.json">"/api/v1/openapi.json"</a> "."
        </p>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
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
    let (mut name, mut scopes) = (String::new(), vec![Scope::Execute]);
    let mut created = None;
    let mut notice = None;
    match flash {
        Some(ApiKeyFlash::Created(key)) => created = Some(key),
        Some(ApiKeyFlash::Revoked { name }) => {
            notice = Some((
                "success",
                format!("Revoked '{name}': requests with it are refused from now on."),
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
                <h2>"Key created: " {created.info.name.clone()}</h2>
                <p>"Copy it now. Only a hash is stored: it cannot be shown again."</p>
                <pre class="output mono" id="new-key" data-testid="new-key">{created.key.clone()}</pre>
                <CopyButton target="new-key"/>
                <p class="muted">"Try it: "<code class="mono">{format!(
                    "curl -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -d '{{\"language\":\"python\",\"code\":\"def main():\\n    return 42\"}}' <console>/api/v1/execute",
                    created.key
                )}</code></p>
            </section>
        })}
        {notice.map(|(class, text)| view! { <p class=format!("notice {class}") role="status" data-testid="key-notice">{text}</p> })}
        <section class="card">
            <h2>"Create a key"</h2>
            <form method="post" action="/rpc/create_api_key" data-testid="create-key-form"
                on:submit=move |_| set_pending.set(true)>
                <div class="field">
                    <label for="key-name">"Name " <span class="required" aria-hidden="true">"*"</span></label>
                    <input id="key-name" name="name" required maxlength="64" value=name
                        placeholder="ragflow-prod" autocomplete="off"/>
                    <p class="help">"Shown as the caller in the execution history."</p>
                </div>
                <div class="field">
                    <label for="key-expiry">"Expires after (days)"</label>
                    <input id="key-expiry" name="expires_days" type="number" min="1"
                        max=crate::model::api_key::MAX_EXPIRY_DAYS.to_string() placeholder="never"
                        aria-describedby="key-expiry-help"/>
                    <p class="help" id="key-expiry-help">"Leave blank for a key that never expires. An expired key is refused like a revoked one."</p>
                </div>
                <fieldset class="scopes">
                    <legend>"Scopes"</legend>
                    {Scope::ALL.into_iter().map(|scope| view! {
                        <label class="check">
                            <input type="checkbox" name=scope.id() value="on" checked=scopes.contains(&scope)
                                data-testid=format!("scope-{}", scope.id())/>
                            <b>{scope.id()}</b> " — " {scope.describe()}
                        </label>
                    }).collect_view()}
                </fieldset>
                <div class="actions">
                    <button type="submit" class="button" disabled=pending data-testid="create-key">"Create key"</button>
                    {move || pending.get().then(|| view! {
                        <span class="loading"><span class="spinner" aria-hidden="true"></span>" Creating…"</span>
                    })}
                </div>
            </form>
        </section>
        <section class="card">
            <h2>"Keys " <span class="muted">{format!("({live} live)")}</span></h2>
            {if keys.is_empty() {
                view! { <p class="muted" data-testid="no-keys">"No keys yet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table" data-testid="keys">
                        <thead><tr>
                            <th>"Name"</th><th>"Key"</th><th>"Scopes"</th><th>"Created"</th><th>"Expires"</th><th>"Last used"</th><th></th>
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
    view! {
        <tr class:revoked=is_revoked data-testid=format!("key-{}", key.name)>
            <td>{key.name.clone()}</td>
            <td class="mono">{format!("{}…", key.prefix)}</td>
            <td>{scopes.join(", ")}</td>
            <td>{short_time(&key.created_at)} <span class="muted">" by " {key.created_by.clone()}</span></td>
            <td>{key.expires_at.as_deref().map_or_else(|| "never".to_owned(), short_time)}</td>
            <td>
                {key.last_used_at.as_deref().map_or_else(|| "never".to_owned(), short_time)}
                {key.last_used_address.clone().map(|a| view! { <span class="muted">" from " {a}</span> })}
            </td>
            <td>
                {match (revoked, confirming) {
                    (Some(at), _) => view! { <span class="badge failure">"Revoked " {short_time(&at)}</span> }.into_any(),
                    // Revoking breaks every agent that uses the key: it takes a second step.
                    (None, true) => view! {
                        <form method="post" action="/rpc/revoke_api_key" class="confirm" role="alertdialog"
                            aria-label=format!("Revoke {}?", key.name) data-testid="confirm-revoke">
                            <input type="hidden" name="id" value=key.id.to_string()/>
                            <p>{format!("Revoke '{}'? Agents that use it are refused at once.", key.name)}</p>
                            <button type="submit" class="button danger" autofocus
                                data-testid=format!("confirm-revoke-{}", key.name)>"Revoke"</button>
                            " " <a href="/admin/api-keys" class="button ghost" data-testid="cancel-revoke">"Cancel"</a>
                        </form>
                    }.into_any(),
                    (None, false) => view! {
                        <a href=format!("/admin/api-keys?revoke={}", key.id) class="button ghost danger"
                            data-testid=format!("revoke-{}", key.name)>"Revoke…"</a>
                    }.into_any(),
                }}
            </td>
        </tr>
    }
}

/// `2026-12-02T14:07:09.123Z` → `2026-12-02 14:07 UTC`.
fn short_time(stamp: &str) -> String {
    match (stamp.get(..10), stamp.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => stamp.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::short_time;

    #[test]
    fn times_are_shortened_to_the_minute() {
        assert_eq!(
            short_time("2026-12-02T14:07:09.123Z"),
            "2026-12-02 14:07 UTC"
        );
        assert_eq!(short_time("soon"), "soon");
    }
}
