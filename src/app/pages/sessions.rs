use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::components::error_view::ErrorView,
    i18n::{t, td_string, use_i18n},
    model::session::SessionSummary,
    server_fns::sessions::list_sandbox_sessions,
};

/// The sandbox sessions open now (held for API keys: E2B's SDK, our sessions API), with a
/// close button each (a plain form behind a confirmation: it works with JavaScript off).
#[component]
pub fn SessionsPage() -> impl IntoView {
    let sessions = Resource::new(|| (), |_| list_sandbox_sessions());
    let query = use_query_map();
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), nav.sessions).to_string()/>
        <h1>{t!(i18n, nav.sessions)}</h1>
        <p class="lead">{t!(i18n, sessions.intro)}</p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let closing = query.with(|q| q.get("close"));
                    sessions.get().map(|list| list.map(|list| view! { <Sessions list closing/> }))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

/// Seconds as the table shows them: `42 s`, `3 min`, `2 h 5 min`.
fn span(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs / 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

#[component]
fn Sessions(list: Vec<SessionSummary>, closing: Option<String>) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    view! {
        <section class="card">
            <h2>{td_string!(locale, sessions.open, count = list.len()).to_string()}</h2>
            {if list.is_empty() {
                view! { <p class="muted" data-testid="no-sessions">{t!(i18n, sessions.none)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table" data-testid="sessions">
                        <thead><tr>
                            <th>{t!(i18n, sessions.id)}</th><th>{t!(i18n, sessions.key)}</th>
                            <th>{t!(i18n, sessions.provider)}</th><th>{t!(i18n, sessions.language)}</th>
                            <th>{t!(i18n, sessions.age)}</th><th>{t!(i18n, sessions.idle)}</th>
                            <th>{t!(i18n, sessions.cells)}</th><th>{t!(i18n, sessions.ends_in)}</th><th></th>
                        </tr></thead>
                        <tbody>
                            {list.into_iter().map(|session| {
                                let confirming = closing.as_deref() == Some(session.id.as_str());
                                view! { <SessionRow session confirming/> }
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
fn SessionRow(session: SessionSummary, confirming: bool) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let short = session.id.chars().take(12).collect::<String>();
    view! {
        <tr data-testid=format!("session-{}", session.id)>
            <td class="mono" title=session.id.clone()>{format!("{short}…")}</td>
            <td>{session.key_name.clone()}</td>
            <td>{session.provider.clone()}</td>
            <td>{session.language.clone()}</td>
            <td class="nowrap">{span(session.age_secs)}</td>
            <td class="nowrap">{span(session.idle_secs)}</td>
            <td>{session.cells}</td>
            <td class="nowrap">{span(session.remaining_secs)}</td>
            <td>
                {if confirming {
                    view! {
                        <form method="post" action="/rpc/close_sandbox_session" class="confirm" role="alertdialog"
                            aria-label=td_string!(locale, sessions.close_q, key = session.key_name.clone()).to_string()
                            data-testid="confirm-close">
                            <input type="hidden" name="id" value=session.id.clone()/>
                            <p>{td_string!(locale, sessions.close_confirm, key = session.key_name.clone()).to_string()}</p>
                            <button type="submit" class="button danger" autofocus data-testid="confirm-close-session">{t!(i18n, sessions.close)}</button>
                            " " <a href="/admin/sessions" class="button ghost">{t!(i18n, common.cancel)}</a>
                        </form>
                    }.into_any()
                } else {
                    view! {
                        <a href=format!("/admin/sessions?close={}", session.id) class="button ghost danger"
                            data-testid="close-session">{t!(i18n, sessions.close)} "…"</a>
                    }.into_any()
                }}
            </td>
        </tr>
    }
}
