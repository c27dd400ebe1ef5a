use leptos::prelude::*;

use crate::{
    i18n::{t, td_string, use_i18n},
    model::settings::ConnectionReport,
};

/// The result of "Test connection", as a dialog over the page. Without JavaScript it is an
/// open `<dialog>` whose "Close" is a `method="dialog"` form: the browser closes it where it
/// is, so both forms keep what the admin typed. Hydrated, it becomes modal (`showModal`:
/// focus inside, Esc closes, the page behind inert). Invalid fields are listed as links to
/// them. (`rel="external"` keeps the router's own click handling off those links.)
#[component]
pub fn ConnectionReportDialog(
    report: ConnectionReport,
    /// Labels of the form's fields by key, to name the invalid ones.
    #[prop(optional)]
    labels: Vec<(String, String)>,
) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let (open, set_open) = signal(true);
    let close = move |event: leptos::ev::MouseEvent| {
        event.prevent_default();
        set_open.set(false);
    };
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(dialog) = dialog.get() {
            // Server HTML opened it non-modally; reopen it as a modal, once, while the admin
            // has not closed it.
            if open.get_untracked() && !dialog.matches(":modal").unwrap_or(false) {
                dialog.close();
                let _ = dialog.show_modal();
            }
        }
    });
    let invalid: Vec<(String, String)> = report
        .errors
        .iter()
        .map(|(key, message)| {
            let label = labels
                .iter()
                .find(|(k, _)| k == key)
                .map_or_else(|| key.clone(), |(_, l)| l.clone());
            (format!("#field-{key}"), format!("{label}: {message}"))
        })
        .collect();
    let title = if report.passed {
        td_string!(i18n.get_locale_untracked(), report.passed).to_string()
    } else {
        td_string!(i18n.get_locale_untracked(), report.failed).to_string()
    };
    let class = if report.passed { "passed" } else { "failed" };
    // An allow-list's check: each allowed name and what the console resolved it to (or why
    // not), and what a sandbox met trying the metadata address and an unlisted name.
    let egress = report
        .health
        .as_ref()
        .and_then(|h| h.details.get("egress"))
        .cloned();
    let allow_list: Option<Vec<(String, String)>> = egress.map(|egress| {
        let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        let mut rows: Vec<(String, String)> = egress["resolved"]
            .as_object()
            .map(|names| names.iter().map(|(n, v)| (n.clone(), text(v))).collect())
            .unwrap_or_default();
        // Each allowed host:port as the console could (or could not) connect to it.
        if let Some(reach) = egress["reach"].as_object() {
            rows.extend(reach.iter().map(|(target, v)| (target.clone(), text(v))));
        }
        if let Some(checks) = egress["inside"].as_object() {
            rows.extend(checks.iter().map(|(check, v)| {
                (
                    td_string!(locale, report.from_sandbox, check).to_string(),
                    text(v),
                )
            }));
        }
        rows
    });
    view! {
        <Show when=move || open.get()>
            <div class="backdrop">
                <dialog open class="modal" data-testid="connection-report" aria-labelledby="report-title"
                    node_ref=dialog on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                        if ev.key() == "Escape" {
                            set_open.set(false);
                        }
                    }>
                    <h2 id="report-title" class=class>{title.clone()}</h2>
                    <p data-testid="connection-message">{report.message.clone()}</p>
                    {(!invalid.is_empty()).then(|| view! {
                        <ul class="invalid-fields" data-testid="invalid-fields">
                            {invalid.clone().into_iter().map(|(href, text)| view! {
                                <li><a href=href rel="external" on:click=move |_| set_open.set(false)>{text}</a></li>
                            }).collect_view()}
                        </ul>
                    })}
                    {report.detail.clone().map(|detail| view! {
                        <details class="detail"><summary>{t!(i18n, common.details)}</summary><pre class="output">{detail}</pre></details>
                    })}
                    <dl class="facts">
                        <dt>{t!(i18n, report.health_check)}</dt>
                        <dd>{match report.health.as_ref().map(|h| h.healthy) {
                            None => t!(i18n, report.not_reached).into_any(),
                            Some(true) => t!(i18n, report.healthy).into_any(),
                            Some(false) => t!(i18n, report.unhealthy).into_any(),
                        }}</dd>
                        {report.health.as_ref().map(|h| view! { <dt>{t!(i18n, report.health)}</dt><dd data-testid="connection-health">{h.message.clone()}</dd> })}
                        <dt>{t!(i18n, report.exit_code)}</dt>
                        <dd>{report.exit_code.map_or("—".to_owned(), |c| c.to_string())}</dd>
                        <dt>{t!(i18n, report.execution_time)}</dt>
                        <dd>{report.execution_time_ms.map_or("—".to_owned(), |ms| format!("{ms} ms"))}</dd>
                        <dt>{t!(i18n, report.latency)}</dt>
                        <dd>{format!("{} ms", report.latency_ms)}</dd>
                    </dl>
                    {allow_list.clone().map(|rows| view! {
                        <h3>{t!(i18n, report.allow_list)}</h3>
                        <dl class="facts" data-testid="connection-allow-list">
                            {rows.into_iter().map(|(name, value)| view! { <dt class="mono">{name}</dt><dd class="mono">{value}</dd> }).collect_view()}
                        </dl>
                    })}
                    {(!report.stdout.is_empty()).then(|| view! { <h3>"stdout"</h3><pre class="output">{report.stdout.clone()}</pre> })}
                    {(!report.stderr.is_empty()).then(|| view! { <h3>"stderr"</h3><pre class="output error">{report.stderr.clone()}</pre> })}
                    <form method="dialog" class="close-form">
                        <button type="submit" class="button" data-testid="close-report" on:click=close>{t!(i18n, common.close)}</button>
                    </form>
                </dialog>
            </div>
        </Show>
    }
}
