use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::{components::error_view::ErrorView, format::When},
    i18n::{t, td_string, use_i18n, Locale},
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
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    view! {
        <Title text=td_string!(locale, nav.audit).to_string()/>
        <h1>{t!(i18n, nav.audit)}</h1>
        <p class="muted intro">{t!(i18n, audit.intro)}</p>
        <ul class="tabs" data-testid="audit-views">
            {move || {
                let (_, current, actor) = page();
                let current = AuditView::from_id(&current);
                AuditView::ALL.into_iter().map(|view| {
                    view! { <li><a href=view.href(1, &actor) aria-current=(view == current).then_some("page")>{view_label(locale, view)}</a></li> }
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
                        <label for="audit-actor">{t!(i18n, audit.who_filter)}</label>
                        <input id="audit-actor" name="actor" value=actor.clone() placeholder="admin, api-key:…"/>
                    </div>
                    <div class="actions">
                        <button type="submit" class="button ghost">{t!(i18n, common.filter)}</button>
                        <a class="button ghost" href=view.export_href(&actor) rel="external" data-testid="audit-export">{t!(i18n, audit.export)}</a>
                    </div>
                }
            }}
        </form>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || audit.get().map(|result| result.map(|page| view! { <AuditTable page/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn AuditTable(page: AuditPage) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    if page.entries.is_empty() {
        return view! { <section class="card"><p class="muted" data-testid="no-audit">{t!(i18n, audit.empty)}</p></section> }
            .into_any();
    }
    let (current, pages, view) = (page.page, page.pages, page.view);
    let actor = page.actor.clone();
    view! {
        <section class="card">
            <div class="table-wrap">
            <table class="table" data-testid="audit">
                <thead><tr>
                    <th>{t!(i18n, common.when)}</th><th>{t!(i18n, audit.who)}</th><th>{t!(i18n, common.provider)}</th><th>{t!(i18n, audit.action)}</th><th>{t!(i18n, audit.changed_keys)}</th><th>{t!(i18n, common.details)}</th>
                </tr></thead>
                <tbody>
                    {page.entries.into_iter().map(|entry| view! {
                        <tr data-testid="audit-row">
                            <td><When stamp=entry.created_at/></td>
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
            <nav class="pager" aria-label=td_string!(locale, common.pages).to_string()>
                {(current > 1).then(|| view! { <a href=view.href(current - 1, &actor) rel="prev">{t!(i18n, common.newer)}</a> })}
                <span class="muted" data-testid="audit-pages">{td_string!(locale, common.page_of, current, pages).to_string()} " · " {page.total} " " {view_noun(locale, view)}</span>
                {(current < pages).then(|| view! { <a href=view.href(current + 1, &actor) rel="next">{t!(i18n, common.older)}</a> })}
            </nav>
        </section>
    }
    .into_any()
}

/// A view's tab label, in the page's language.
fn view_label(locale: Locale, view: AuditView) -> String {
    match view {
        AuditView::Changes => td_string!(locale, audit.view.changes).to_string(),
        AuditView::Tests => td_string!(locale, audit.view.tests).to_string(),
        AuditView::SignIns => td_string!(locale, audit.view.sign_ins).to_string(),
        AuditView::Accounts => td_string!(locale, audit.view.accounts).to_string(),
        AuditView::Environments => td_string!(locale, audit.view.environments).to_string(),
    }
}

/// What the pager counts ("12 changes"), in the page's language.
fn view_noun(locale: Locale, view: AuditView) -> String {
    match view {
        AuditView::Changes => td_string!(locale, audit.noun.changes).to_string(),
        AuditView::Tests => td_string!(locale, audit.noun.tests).to_string(),
        AuditView::SignIns => td_string!(locale, audit.noun.sign_ins).to_string(),
        AuditView::Accounts => td_string!(locale, audit.noun.accounts).to_string(),
        AuditView::Environments => td_string!(locale, audit.noun.environments).to_string(),
    }
}
