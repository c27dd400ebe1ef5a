use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::components::error_view::ErrorView, model::audit::AuditPage,
    server_fns::audit::settings_audit,
};

/// Who changed which sandbox settings, and when: key names only, never values.
#[component]
pub fn SettingsAuditPage() -> impl IntoView {
    let query = use_query_map();
    let page = move || {
        query
            .with(|q| q.get("page"))
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(1)
    };
    let audit = Resource::new(page, settings_audit);
    view! {
        <Title text="Settings audit"/>
        <h1>"Settings audit"</h1>
        <p class="muted intro">
            "Every change to the sandbox settings, from the console, the API or the command line. "
            "Only the names of changed keys are recorded: secret values never appear here."
        </p>
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
        return view! { <section class="card"><p class="muted" data-testid="no-audit">"No changes yet."</p></section> }
            .into_any();
    }
    let (current, pages) = (page.page, page.pages);
    view! {
        <section class="card">
            <table class="table" data-testid="audit">
                <thead><tr>
                    <th>"When"</th><th>"Who"</th><th>"Provider"</th><th>"Action"</th><th>"Changed keys"</th>
                </tr></thead>
                <tbody>
                    {page.entries.into_iter().map(|entry| view! {
                        <tr data-testid="audit-row">
                            <td class="nowrap">{crate::app::format::utc_time(&entry.created_at)} " UTC"</td>
                            <td>{entry.actor}</td>
                            <td>{entry.provider.unwrap_or_else(|| entry.setting.clone())}</td>
                            <td>{entry.action}</td>
                            <td class="mono">{if entry.changed_keys.is_empty() { "—".to_owned() } else { entry.changed_keys.join(", ") }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <nav class="pager" aria-label="Pages">
                {(current > 1).then(|| view! { <a href=format!("?page={}", current - 1) rel="prev">"← Newer"</a> })}
                <span class="muted" data-testid="audit-pages">{format!("Page {current} of {pages} · {} changes", page.total)}</span>
                {(current < pages).then(|| view! { <a href=format!("?page={}", current + 1) rel="next">"Older →"</a> })}
            </nav>
        </section>
    }
    .into_any()
}
