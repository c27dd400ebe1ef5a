use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    app::{components::error_view::ErrorView, format::utc_time as when},
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
                from: get("from"),
                to: get("to"),
            };
            let page = get("page").parse::<u32>().unwrap_or(1);
            (filter, page)
        })
    };
    let history = Resource::new(request, |(filter, page)| execution_history(filter, page));
    let flash = Resource::new(|| (), |_| take_history_flash());
    view! {
        <Title text="Execution history"/>
        <h1>"Execution history"</h1>
        <p class="muted intro">
            "Every run: trial runs, connection tests, the REST API, RAGFlow's /run and the command line. "
            "The code is identified by its SHA-256; code and output are kept only while you switch that on below."
        </p>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
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
    let settings = page.settings.clone();
    let option = |value: &str, chosen: &str| {
        let value = value.to_owned();
        let selected = value == chosen;
        view! { <option value=value.clone() selected=selected>{value.clone()}</option> }
    };
    view! {
        <section class="card">
            <form method="get" action="/admin/history" class="filters" data-testid="history-filters">
                <div class="field">
                    <label for="f-provider">"Provider"</label>
                    <select id="f-provider" name="provider">
                        <option value="">"any"</option>
                        {page.providers.iter().map(|p| option(p, &filter.provider)).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-status">"Status"</label>
                    <select id="f-status" name="status">
                        <option value="">"any"</option>
                        {page.statuses.iter().map(|s| option(s, &filter.status)).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-caller">"Caller"</label>
                    <input id="f-caller" name="caller" value=filter.caller.clone() placeholder="key name or admin"/>
                </div>
                <div class="field">
                    <label for="f-from">"From (UTC)"</label>
                    <input id="f-from" name="from" type="datetime-local" value=filter.from.clone()/>
                </div>
                <div class="field">
                    <label for="f-to">"To (UTC)"</label>
                    <input id="f-to" name="to" type="datetime-local" value=filter.to.clone()/>
                </div>
                <div class="actions">
                    <button type="submit" class="button" data-testid="filter">"Filter"</button>
                    <a href="/admin/history" class="button ghost">"Clear"</a>
                </div>
            </form>
        </section>
        <section class="card">
            <div class="row spread">
                <h2>{format!("{} run(s)", page.total)}</h2>
                <span>
                    "Export: " <a href=export("csv") data-testid="export-csv" download>"CSV"</a> " · "
                    <a href=export("json") data-testid="export-json" download>"JSON"</a>
                </span>
            </div>
            {if page.entries.is_empty() {
                view! { <p class="muted" data-testid="no-runs">"No runs match."</p> }.into_any()
            } else {
                view! {
                    <table class="table" data-testid="history">
                        <thead><tr>
                            <th>"#"</th><th>"When (UTC)"</th><th>"Caller"</th><th>"Source"</th><th>"Provider"</th>
                            <th>"Language"</th><th>"Status"</th><th>"Exit"</th><th>"ms"</th>
                        </tr></thead>
                        <tbody>
                            {page.entries.into_iter().map(|r| {
                                let badge = if r.status == "success" { "badge success" } else { "badge failure" };
                                view! {
                                <tr data-testid="history-row">
                                    <td><a href=format!("/admin/history/{}", r.id)>{r.id}</a></td>
                                    <td class="nowrap">{when(&r.created_at)}</td>
                                    <td>{r.caller} <span class="muted">" (" {r.caller_kind} ")"</span></td>
                                    <td>{r.source}</td>
                                    <td>{r.provider}</td>
                                    <td>{r.language}</td>
                                    <td><span class=badge>{r.status}</span></td>
                                    <td>{r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}</td>
                                    <td>{r.duration_ms}</td>
                                </tr>
                            }}).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            <nav class="pager" aria-label="Pages">
                {(current > 1).then(|| view! { <a href=link(current - 1) rel="prev">"← Newer"</a> })}
                <span class="muted" data-testid="history-pages">{format!("Page {current} of {pages}")}</span>
                {(current < pages).then(|| view! { <a href=link(current + 1) rel="next">"Older →"</a> })}
            </nav>
        </section>
        <section class="card" id="history-settings">
            <h2>"What the history keeps"</h2>
            {flash.map(|f| match f {
                HistoryFlash::Saved => view! { <p class="notice success" role="status" data-testid="history-notice">"Saved. The retention was applied."</p> }.into_any(),
                HistoryFlash::Invalid(message) => view! { <p class="notice error" role="alert" data-testid="history-notice">{message}</p> }.into_any(),
            })}
            <form method="post" action="/rpc/save_history_settings" data-testid="history-settings-form">
                <label class="check">
                    <input type="checkbox" name="keep_content" value="on" checked=settings.keep_content/>
                    "Keep the code, stdout and stderr of each run (off: only the hash and sizes)"
                </label>
                <div class="row">
                    <div class="field">
                        <label for="h-bytes">"Keep at most (bytes each)"</label>
                        <input id="h-bytes" name="max_content_bytes" type="number" min="1" max="1048576" value=settings.max_content_bytes.to_string()/>
                    </div>
                    <div class="field">
                        <label for="h-days">"Delete runs older than (days)"</label>
                        <input id="h-days" name="retention_days" type="number" min="1" max="3650" value=settings.retention_days.to_string()/>
                    </div>
                    <div class="field">
                        <label for="h-rows">"Keep at most (runs)"</label>
                        <input id="h-rows" name="max_rows" type="number" min="100" max="10000000" value=settings.max_rows.to_string()/>
                    </div>
                </div>
                <div class="actions">
                    <button type="submit" class="button" data-testid="save-history-settings">"Save"</button>
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
    view! {
        <Title text="Run"/>
        <p><a href="/admin/history">"← Execution history"</a></p>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || record.get().map(|r| r.map(|detail| view! { <Execution detail/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Execution(detail: ExecutionDetail) -> impl IntoView {
    let s = detail.summary;
    let kept = |label: &'static str, text: Option<String>, testid: &'static str| {
        text.map(|t| {
            view! {
                <h3>{label}</h3>
                <pre class="output mono" data-testid=testid>{t}</pre>
            }
        })
    };
    let none_kept = detail.code.is_none();
    view! {
        <h1>{format!("Run #{}", s.id)}</h1>
        <section class="card" data-testid="run-detail">
            <dl class="facts">
                <dt>"When (UTC)"</dt><dd>{when(&s.created_at)}</dd>
                <dt>"Caller"</dt><dd>{s.caller} " (" {s.caller_kind} ")"</dd>
                <dt>"Source"</dt><dd>{s.source}</dd>
                <dt>"Provider"</dt><dd>{s.provider}</dd>
                <dt>"Language"</dt><dd>{s.language}</dd>
                <dt>"Status"</dt><dd data-testid="run-status">{s.status}</dd>
                <dt>"Exit code"</dt><dd>{s.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}</dd>
                <dt>"Duration"</dt><dd>{s.duration_ms} " ms"</dd>
                <dt>"Input / output"</dt><dd>{s.input_bytes} " / " {s.output_bytes} " bytes"</dd>
                <dt>"Code SHA-256"</dt><dd class="mono">{detail.code_sha256}</dd>
            </dl>
            {detail.error.map(|e| view! { <p class="notice error" role="alert">{e}</p> })}
            {none_kept.then(|| view! { <p class="muted">"Code and output were not kept for this run (see the history settings)."</p> })}
            {kept("Code", detail.code, "run-code")}
            {kept("stdout", detail.stdout, "run-stdout")}
            {kept("stderr", detail.stderr, "run-stderr")}
            {detail.egress.map(|report| view! { <Network report/> })}
        </section>
    }
}

/// A run's connections under its provider's allow-list.
#[component]
fn Network(report: crate::model::egress::EgressReport) -> impl IntoView {
    let summary = format!(
        "{} connection(s), {} refused, {} bytes out, {} bytes in{}",
        report.attempts(),
        report.egress_denied,
        report.bytes_out,
        report.bytes_in,
        if report.limit_reached {
            "; cut at the provider's traffic limit"
        } else {
            ""
        }
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
                    <td>{if denied { "refused" } else { "allowed" }}</td>
                    <td>{c.reason.unwrap_or_default()}</td>
                    <td>{c.bytes_out}</td>
                    <td>{c.bytes_in}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>"Network"</h3>
        <p data-testid="run-egress-summary">{summary}</p>
        <div class="table-scroll">
            <table class="table" data-testid="run-egress">
                <thead><tr>
                    <th scope="col">"Protocol"</th><th scope="col">"Name"</th>
                    <th scope="col">"Address"</th><th scope="col">"Port"</th>
                    <th scope="col">"Verdict"</th><th scope="col">"Why"</th>
                    <th scope="col">"Bytes out"</th><th scope="col">"Bytes in"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
