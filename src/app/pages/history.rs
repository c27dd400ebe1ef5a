use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    app::{
        components::{
            error_view::ErrorView,
            trial_panel::{status_hint, status_label},
        },
        format::When,
    },
    i18n::{t, td_string, use_i18n},
    model::history::{ExecutionDetail, HistoryFilter, HistoryFlash, HistoryPage},
    server_fns::history::{execution_history, execution_record, take_history_flash},
};

/// Every run, whoever asked: filters (a plain GET form), pages, export, and what is kept.
#[component]
pub fn HistoryListPage() -> impl IntoView {
    let query = use_query_map();
    let request = move || {
        query.with(|q| {
            let get = |k: &str| q.get(k).unwrap_or_default();
            let filter = HistoryFilter {
                provider: get("provider"),
                status: get("status"),
                caller: get("caller"),
                replica: get("replica"),
                session: get("session"),
                from: get("from"),
                to: get("to"),
            };
            let page = get("page").parse::<u32>().unwrap_or(1);
            (filter, page)
        })
    };
    let history = Resource::new(request, |(filter, page)| execution_history(filter, page));
    let flash = Resource::new(|| (), |_| take_history_flash());
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), history.title).to_string()/>
        <h1>{t!(i18n, history.title)}</h1>
        <p class="muted intro">{t!(i18n, history.intro)}</p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let history = history.get()?;
                    let flash = flash.get()?;
                    Some(history.and_then(|h| flash.map(|f| view! { <History page=h flash=f/> })))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn History(page: HistoryPage, flash: Option<HistoryFlash>) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let filter = page.filter.clone();
    let query = filter.query();
    let link = move |n: u32| {
        if query.is_empty() {
            format!("?page={n}")
        } else {
            format!("?{query}&page={n}")
        }
    };
    let export = |ext: &str| {
        let q = page.filter.query();
        if q.is_empty() {
            format!("/admin/history/export.{ext}")
        } else {
            format!("/admin/history/export.{ext}?{q}")
        }
    };
    let (current, pages) = (page.page, page.pages);
    // One console has nothing to tell apart: the column appears with a second replica.
    let show_replica = page.replicas.len() > 1;
    let settings = page.settings.clone();
    let option = |value: &str, label: String, chosen: &str| {
        let value = value.to_owned();
        let selected = value == chosen;
        view! { <option value=value.clone() selected=selected>{label}</option> }
    };
    view! {
        <section class="card">
            <form method="get" action="/admin/history" class="filters" data-testid="history-filters">
                <div class="field">
                    <label for="f-provider">{t!(i18n, common.provider)}</label>
                    <select id="f-provider" name="provider">
                        <option value="">{t!(i18n, common.any)}</option>
                        {page.providers.iter().map(|p| option(p, p.clone(), &filter.provider)).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-status">{t!(i18n, common.status)}</label>
                    <select id="f-status" name="status">
                        <option value="">{t!(i18n, common.any)}</option>
                        {page.statuses.iter().map(|s| option(s, status_label(locale, s), &filter.status)).collect_view()}
                    </select>
                </div>
                {(page.replicas.len() > 1 || !filter.replica.is_empty()).then(|| view! {
                    <div class="field">
                        <label for="f-replica">{t!(i18n, history.replica)}</label>
                        <select id="f-replica" name="replica">
                            <option value="">{t!(i18n, common.any)}</option>
                            {page.replicas.iter().map(|r| option(r, r.clone(), &filter.replica)).collect_view()}
                        </select>
                    </div>
                })}
                <div class="field">
                    <label for="f-caller">{t!(i18n, common.caller)}</label>
                    <input id="f-caller" name="caller" value=filter.caller.clone() placeholder=td_string!(locale, history.caller_placeholder).to_string()/>
                </div>
                <div class="field">
                    <label for="f-from">{t!(i18n, history.from)}</label>
                    <input id="f-from" name="from" type="datetime-local" value=filter.from.clone()/>
                </div>
                <div class="field">
                    <label for="f-to">{t!(i18n, history.to)}</label>
                    <input id="f-to" name="to" type="datetime-local" value=filter.to.clone()/>
                </div>
                <div class="actions">
                    <button type="submit" class="button" data-testid="filter">{t!(i18n, common.filter)}</button>
                    <a href="/admin/history" class="button ghost">{t!(i18n, common.clear)}</a>
                </div>
            </form>
        </section>
        <section class="card">
            <div class="row spread">
                <h2>{td_string!(locale, history.total, total = page.total).to_string()}</h2>
                <span>
                    {t!(i18n, history.export)} " " <a href=export("csv") data-testid="export-csv" download>"CSV"</a> " · "
                    <a href=export("json") data-testid="export-json" download>"JSON"</a>
                </span>
            </div>
            {if page.entries.is_empty() {
                view! { <p class="muted" data-testid="no-runs">{t!(i18n, history.no_runs)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table" data-testid="history">
                        <thead><tr>
                            <th>"#"</th><th>{t!(i18n, common.when)}</th><th>{t!(i18n, common.caller)}</th><th>{t!(i18n, common.source)}</th><th>{t!(i18n, common.provider)}</th>
                            <th>{t!(i18n, common.language)}</th><th>{t!(i18n, common.status)}</th><th>{t!(i18n, history.exit)}</th><th>"ms"</th>
                            {show_replica.then(|| view! { <th>{t!(i18n, history.replica)}</th> })}
                        </tr></thead>
                        <tbody>
                            {page.entries.into_iter().map(|r| {
                                let badge = if r.status == "success" { "badge success" } else { "badge failure" };
                                view! {
                                <tr data-testid="history-row">
                                    <td><a href=format!("/admin/history/{}", r.id)>{r.id}</a></td>
                                    <td><When stamp=r.created_at/></td>
                                    <td>{r.caller} <span class="muted">" (" {r.caller_kind} ")"</span></td>
                                    <td>{r.source}</td>
                                    <td>{r.provider}</td>
                                    <td>{r.language}</td>
                                    <td><span class=badge data-status=r.status.clone() title=status_hint(locale, &r.status)>{status_label(locale, &r.status)}</span></td>
                                    <td>{r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}</td>
                                    <td>{r.duration_ms}</td>
                                    {show_replica.then(|| view! { <td data-testid="history-replica">{r.replica}</td> })}
                                </tr>
                            }}).collect_view()}
                        </tbody>
                    </table>
                    </div>
                }.into_any()
            }}
            <nav class="pager" aria-label=td_string!(locale, common.pages).to_string()>
                {(current > 1).then(|| view! { <a href=link(current - 1) rel="prev">{t!(i18n, common.newer)}</a> })}
                <span class="muted" data-testid="history-pages">{td_string!(locale, common.page_of, current, pages).to_string()}</span>
                {(current < pages).then(|| view! { <a href=link(current + 1) rel="next">{t!(i18n, common.older)}</a> })}
            </nav>
        </section>
        <section class="card" id="history-settings">
            <h2>{t!(i18n, history.keeps)}</h2>
            {flash.map(|f| match f {
                HistoryFlash::Saved => view! { <p class="notice success" role="status" data-testid="history-notice">{t!(i18n, history.saved)}</p> }.into_any(),
                HistoryFlash::Invalid(message) => view! { <p class="notice error" role="alert" data-testid="history-notice">{message}</p> }.into_any(),
            })}
            <form method="post" action="/rpc/save_history_settings" data-testid="history-settings-form">
                <label class="check">
                    <input type="checkbox" name="keep_content" value="on" checked=settings.keep_content/>
                    {t!(i18n, history.keep_content)}
                </label>
                <div class="row">
                    <div class="field">
                        <label for="h-bytes">{t!(i18n, history.max_bytes)}</label>
                        <input id="h-bytes" name="max_content_bytes" type="number" min="1" max="1048576" value=settings.max_content_bytes.to_string()/>
                    </div>
                    <div class="field">
                        <label for="h-days">{t!(i18n, history.retention_days)}</label>
                        <input id="h-days" name="retention_days" type="number" min="1" max="3650" value=settings.retention_days.to_string()/>
                    </div>
                    <div class="field">
                        <label for="h-rows">{t!(i18n, history.max_rows)}</label>
                        <input id="h-rows" name="max_rows" type="number" min="100" max="10000000" value=settings.max_rows.to_string()/>
                    </div>
                </div>
                <div class="actions">
                    <button type="submit" class="button" data-testid="save-history-settings">{t!(i18n, settings.save)}</button>
                </div>
            </form>
        </section>
    }
}

/// One run in full.
#[component]
pub fn ExecutionPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || {
        params.with(|p| {
            p.get("id")
                .and_then(|id| id.parse::<i64>().ok())
                .unwrap_or(0)
        })
    };
    let record = Resource::new(id, execution_record);
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), run.title_short).to_string()/>
        <p><a href="/admin/history">"← " {t!(i18n, history.title)}</a></p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || record.get().map(|r| r.map(|detail| view! { <Execution detail/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Execution(detail: ExecutionDetail) -> impl IntoView {
    let s = detail.summary;
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let kept = |label: String, text: Option<String>, testid: &'static str| {
        text.map(|t| {
            view! {
                <h3>{label}</h3>
                <pre class="output mono" data-testid=testid>{t}</pre>
            }
        })
    };
    let none_kept = detail.code.is_none();
    view! {
        <h1>{td_string!(locale, run.title, id = s.id).to_string()}</h1>
        <section class="card" data-testid="run-detail">
            <dl class="facts">
                <dt>{t!(i18n, common.when)}</dt><dd><When stamp=s.created_at/></dd>
                <dt>{t!(i18n, common.caller)}</dt><dd>{s.caller} " (" {s.caller_kind} ")"</dd>
                <dt>{t!(i18n, common.source)}</dt><dd>{s.source}</dd>
                <dt>{t!(i18n, common.provider)}</dt><dd>{s.provider}</dd>
                <dt>{t!(i18n, common.language)}</dt><dd>{s.language}</dd>
                <dt>{t!(i18n, common.status)}</dt><dd data-testid="run-status" data-status=s.status.clone() title=status_hint(locale, &s.status)>{status_label(locale, &s.status)}</dd>
                <dt>{t!(i18n, report.exit_code)}</dt><dd>{s.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}</dd>
                <dt>{t!(i18n, run.duration)}</dt><dd>{s.duration_ms} " ms"</dd>
                {(!s.replica.is_empty()).then(|| view! { <dt>{t!(i18n, history.replica)}</dt><dd data-testid="run-replica">{s.replica.clone()}</dd> })}
                {s.session_id.clone().map(|session| {
                    let href = format!("/admin/history?session={}", crate::model::url::percent_encode(&session));
                    view! {
                        <dt>{t!(i18n, history.session)}</dt>
                        <dd><a class="mono" data-testid="run-session" href=href
                            title=td_string!(locale, history.session_cells).to_string()>{session}</a></dd>
                    }
                })}
                <dt>{t!(i18n, run.io)}</dt><dd>{td_string!(locale, run.io_bytes, input = s.input_bytes, output = s.output_bytes).to_string()}</dd>
                <dt>{t!(i18n, run.sha)}</dt><dd class="mono">{detail.code_sha256}</dd>
            </dl>
            {detail.error.map(|e| view! { <p class="notice error" role="alert">{e}</p> })}
            {none_kept.then(|| view! { <p class="muted">{t!(i18n, run.not_kept)}</p> })}
            {kept(td_string!(locale, trial.code).to_string(), detail.code, "run-code")}
            {kept("stdout".to_owned(), detail.stdout, "run-stdout")}
            {kept("stderr".to_owned(), detail.stderr, "run-stderr")}
            {detail.egress.map(|report| view! { <Network report/> })}
        </section>
    }
}

/// A run's connections under its provider's allow-list.
#[component]
fn Network(report: crate::model::egress::EgressReport) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let mut summary = td_string!(
        locale,
        run.egress_summary,
        attempts = report.attempts(),
        refused = report.egress_denied,
        out = report.bytes_out,
        into = report.bytes_in
    )
    .to_string();
    if report.limit_reached {
        summary.push_str(td_string!(locale, run.egress_cut));
    }
    let (refused, allowed) = (
        td_string!(locale, run.refused).to_string(),
        td_string!(locale, run.allowed).to_string(),
    );
    let rows = report
        .connections
        .into_iter()
        .map(|c| {
            let denied = c.denied();
            view! {
                <tr class=if denied { "denied" } else { "" }>
                    <td>{c.protocol}</td>
                    <td class="mono">{c.name.unwrap_or_else(|| "—".into())}</td>
                    <td class="mono">{c.address.unwrap_or_else(|| "—".into())}</td>
                    <td>{c.port}</td>
                    <td>{if denied { refused.clone() } else { allowed.clone() }}</td>
                    <td>{c.reason.unwrap_or_default()}</td>
                    <td>{c.bytes_out}</td>
                    <td>{c.bytes_in}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>{t!(i18n, settings.group.network)}</h3>
        <p data-testid="run-egress-summary">{summary}</p>
        <div class="table-scroll">
            <table class="table" data-testid="run-egress">
                <thead><tr>
                    <th scope="col">{t!(i18n, run.protocol)}</th><th scope="col">{t!(i18n, common.name)}</th>
                    <th scope="col">{t!(i18n, run.address)}</th><th scope="col">{t!(i18n, run.port)}</th>
                    <th scope="col">{t!(i18n, run.verdict)}</th><th scope="col">{t!(i18n, run.why)}</th>
                    <th scope="col">{t!(i18n, run.bytes_out)}</th><th scope="col">{t!(i18n, run.bytes_in)}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
