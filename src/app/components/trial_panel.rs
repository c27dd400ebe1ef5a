use leptos::prelude::*;

use crate::{
    app::format::textarea_html,
    model::{
        execution::{ExecStatus, ExecutionResult, Language},
        settings::TrialInput,
    },
};

const SAMPLE_CODE: &str = "def main(name):\n    return {\"hi\": name}\n";
const SAMPLE_ARGUMENTS: &str = "{\"name\": \"Ada\"}";

/// Trial run through the active provider: code, language, JSON arguments, timeout; and the
/// result of the last run. A plain form: it works without JavaScript.
#[component]
pub fn TrialPanel(
    input: Option<TrialInput>,
    result: Option<Result<ExecutionResult, String>>,
    /// Where each of the result's artifacts downloads from (the console's own address).
    downloads: Vec<String>,
    /// The active provider's languages.
    languages: Vec<Language>,
) -> impl IntoView {
    let input = input.unwrap_or_else(|| TrialInput {
        language: "python".into(),
        code: SAMPLE_CODE.into(),
        arguments: SAMPLE_ARGUMENTS.into(),
        timeout_secs: String::new(),
    });
    let (pending, set_pending) = signal(false);
    let (json_error, set_json_error) = signal(None::<String>);
    let check_json = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        let problem = match serde_json::from_str::<serde_json::Value>(&text) {
            _ if text.trim().is_empty() => None,
            Ok(serde_json::Value::Object(_)) => None,
            Ok(_) => Some("Arguments must be a JSON object.".to_owned()),
            Err(e) => Some(format!("Not valid JSON: {e}")),
        };
        set_json_error.set(problem);
    };
    view! {
        <section class="card trial" id="trial">
            <h2>"Trial run"</h2>
            <p class="muted">"Runs code through the active provider. " <code>"main()"</code> " receives the arguments: Python as keyword arguments, JavaScript as one object."</p>
            <form method="post" action="/rpc/run_trial" novalidate data-testid="trial-form"
                on:submit=move |ev| {
                    if json_error.get_untracked().is_some() {
                        ev.prevent_default();
                    } else {
                        set_pending.set(true);
                    }
                }>
                <div class="row">
                    <div class="field">
                        <label for="trial-language">"Language"</label>
                        <select id="trial-language" name="language">
                            {languages.into_iter().map(|l| {
                                let selected = l.id() == input.language;
                                view! { <option value=l.id() selected=selected>{l.id()}</option> }
                            }).collect_view()}
                        </select>
                    </div>
                    <div class="field">
                        <label for="trial-timeout">"Timeout (seconds)"</label>
                        <input id="trial-timeout" name="timeout_secs" type="number" min="1" max=crate::model::execution::MAX_TIMEOUT_SECS.to_string() value=input.timeout_secs.clone() placeholder="provider default"/>
                    </div>
                </div>
                <div class="field">
                    <label for="trial-code">"Code"</label>
                    <textarea id="trial-code" name="code" rows="10" class="mono code" spellcheck="false"
                        on:keydown=insert_spaces_on_tab inner_html=textarea_html(&input.code)></textarea>
                </div>
                <div class="field" class:has-error=move || json_error.get().is_some()>
                    <label for="trial-arguments">"Arguments (JSON object)"</label>
                    <textarea id="trial-arguments" name="arguments" rows="3" class="mono" spellcheck="false"
                        on:input=check_json inner_html=textarea_html(&input.arguments)></textarea>
                    {move || json_error.get().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
                </div>
                <div class="actions">
                    <button type="submit" class="button" disabled=pending data-testid="run">"Run"</button>
                    {move || pending.get().then(|| view! {
                        <span class="loading"><span class="spinner" aria-hidden="true"></span>" Running…"</span>
                    })}
                </div>
            </form>
            {result.map(|result| match result {
                Ok(result) => view! { <ResultView result downloads/> }.into_any(),
                Err(message) => view! { <p class="notice error" role="alert" data-testid="trial-error">{message}</p> }.into_any(),
            })}
        </section>
    }
}

/// Tab in the code editor inserts four spaces instead of leaving the field.
fn insert_spaces_on_tab(ev: leptos::ev::KeyboardEvent) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if ev.key() != "Tab" || ev.shift_key() || ev.ctrl_key() || ev.alt_key() || ev.meta_key() {
            return;
        }
        let Some(area) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
        else {
            return;
        };
        ev.prevent_default();
        let start = area.selection_start().ok().flatten().unwrap_or(0);
        if area.set_range_text("    ").is_ok() {
            let _ = area.set_selection_start(Some(start + 4));
            let _ = area.set_selection_end(Some(start + 4));
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = ev;
}

/// Image types a page may show inline; in an `<img>` even SVG runs no script.
const PREVIEWED: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/svg+xml",
];

#[component]
fn ResultView(result: ExecutionResult, downloads: Vec<String>) -> impl IntoView {
    let status = result.status.id();
    let ok = result.status == ExecStatus::Success;
    let returned = result
        .result
        .present
        .then(|| serde_json::to_string_pretty(&result.result.value).unwrap_or_default());
    view! {
        <div class="result" data-testid="trial-result">
            <p>
                <span class=if ok { "badge success" } else { "badge failure" } data-testid="trial-status">{status}</span>
                " exit code " {result.exit_code.map_or("—".to_owned(), |c| c.to_string())}
                " · " {result.wall_time_ms} " ms"
            </p>
            {returned.map(|text| view! {
                <h3>"Return value " <span class="muted">"(" {result.result.json_type.clone()} ")"</span></h3>
                <pre class="output" data-testid="trial-return">{text}</pre>
            })}
            <h3>"stdout"</h3>
            <pre class="output" data-testid="trial-stdout">{result.stdout}</pre>
            {(!result.stderr.is_empty()).then(|| view! { <h3>"stderr"</h3><pre class="output error" data-testid="trial-stderr">{result.stderr.clone()}</pre> })}
            {(!result.artifacts.is_empty()).then(|| view! {
                <h3>"Artifacts"</h3>
                <ul class="artifacts">
                    {result.artifacts.into_iter().enumerate().map(|(n, a)| {
                        // Previews are data: images only: an <img> runs nothing, and a data:
                        // URL has no origin to run in. Downloads come from the console, as
                        // attachments (see server::artifacts).
                        let preview = PREVIEWED.contains(&a.mime_type.as_str())
                            .then(|| format!("data:{};base64,{}", a.mime_type, a.content_b64));
                        let download = downloads.get(n).cloned();
                        view! {
                            <li data-testid="artifact">
                                {preview.map(|src| view! { <img src=src alt=a.name.clone()/> })}
                                {match download {
                                    Some(href) => view! { <a href=href rel="external" data-testid="artifact-download">{a.name.clone()}</a> }.into_any(),
                                    None => view! { <span>{a.name.clone()}</span> }.into_any(),
                                }}
                                " (" {a.size} " bytes)"
                            </li>
                        }
                    }).collect_view()}
                </ul>
            })}
        </div>
    }
}
