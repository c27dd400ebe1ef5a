use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::components::error_view::ErrorView,
    model::audit::{AuditPage, AuditView},
    server_fns::audit::settings_audit,
};

/// Who changed which settings, tested which connection, signed in from where, and when: key
/// names only, never values.
#[component]
pub fn SettingsAuditPage() -> impl IntoView {
    let query = use_query_map();
    let page = move || {
        let page = query
            .with(|q| q.get("page"))
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(1);
        let view = query.with(|q| q.get("view")).unwrap_or_default();
        let actor = query.with(|q| q.get("actor")).unwrap_or_default();
        (page, view, actor)
    };
    let audit = Resource::new(page, |(page, view, actor)| {
        settings_audit(page, view, actor)
    });
    view! {
        <Title text="Audit"/>
        <h1>"Audit"</h1>
        <p class="muted intro">
            "Every change to the settings (from the console, the API or the command line), every connection test, "
            "every sign-in, and every change to administrators, passwords, sessions and API keys. Only the names of "
            "changed keys are recorded: setting and secret values never appear here."
        </p>
        <ul class="tabs" data-testid="audit-views">
            {move || {
                let (_, current, actor) = page();
                let current = AuditView::from_id(&current);
                AuditView::ALL.into_iter().map(|view| {
                    view! { <li><a href=view.href(1, &actor) aria-current=(view == current).then_some("page")>{view.label()}</a></li> }
                }).collect_view()
            }}
        </ul>
        <form method="get" class="filters" data-testid="audit-filter">
            {move || {
                let (_, view, actor) = page();
                let view = AuditView::from_id(&view);
                view! {
                    <input type="hidden" name="view" value=view.id()/>
                    <div class="field">
                        <label for="audit-actor">"Who (part of the name)"</label>
                        <input id="audit-actor" name="actor" value=actor.clone() placeholder="admin, api-key:…"/>
                    </div>
                    <div class="actions">
                        <button type="submit" class="button ghost">"Filter"</button>
                        <a class="button ghost" href=view.export_href(&actor) rel="external" data-testid="audit-export">"Export CSV"</a>
                    </div>
                }
            }}
        </form>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || audit.get().map(|result| result.map(|page| view! { <AuditTable page/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn AuditTable(page: AuditPage) -> impl IntoView {
    if page.entries.is_empty() {
        return view! { <section class="card"><p class="muted" data-testid="no-audit">"Nothing recorded yet."</p></section> }
            .into_any();
    }
    let (current, pages, view) = (page.page, page.pages, page.view);
    let actor = page.actor.clone();
    view! {
        <section class="card">
            <div class="table-wrap">
            <table class="table" data-testid="audit">
                <thead><tr>
                    <th>"When"</th><th>"Who"</th><th>"Provider"</th><th>"Action"</th><th>"Changed keys"</th><th>"Details"</th>
                </tr></thead>
                <tbody>
                    {page.entries.into_iter().map(|entry| view! {
                        <tr data-testid="audit-row">
                            <td class="nowrap">{crate::app::format::utc_time(&entry.created_at)} " UTC"</td>
                            <td>{entry.actor}</td>
                            <td>{entry.provider.unwrap_or_else(|| entry.setting.clone())}</td>
                            <td>{entry.action}</td>
                            <td class="mono">{if entry.changed_keys.is_empty() { "—".to_owned() } else { entry.changed_keys.join(", ") }}</td>
                            <td class="mono">{if entry.detail.is_empty() {
                                "—".to_owned()
                            } else {
                                entry.detail.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("; ")
                            }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            </div>
            <nav class="pager" aria-label="Pages">
                {(current > 1).then(|| view! { <a href=view.href(current - 1, &actor) rel="prev">"← Newer"</a> })}
                <span class="muted" data-testid="audit-pages">{format!("Page {current} of {pages} · {} {}", page.total, view.noun())}</span>
                {(current < pages).then(|| view! { <a href=view.href(current + 1, &actor) rel="next">"Older →"</a> })}
            </nav>
        </section>
    }
    .into_any()
}
