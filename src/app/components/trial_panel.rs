use leptos::prelude::*;

use crate::{
    app::{components::provider_form::Pending, format::textarea_html},
    i18n::{t, td_string, use_i18n, Locale},
    model::{
        execution::{ExecStatus, ExecutionResult, Language},
        settings::TrialInput,
    },
};

const SAMPLE_CODE: &str = "def main(name):\n    return {\"hi\": name}\n";
const SAMPLE_ARGUMENTS: &str = "{\"name\": \"Ada\"}";

/// The provider a trial runs on: the one whose settings the page shows.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialTarget {
    pub kind: String,
    pub name: String,
    pub active: bool,
    /// It has saved settings (else it runs with its defaults).
    pub saved: bool,
}

/// Trial run on the selected provider (the active one as it runs, another one from its saved
/// settings): code, language, JSON arguments, timeout; and the result of the last run. Part
/// of the settings page's one form, so a trial keeps the settings typed above it, and a save
/// or a test keeps the code typed here; it works without JavaScript. Hydrated, Ctrl+Enter
/// (or Cmd+Enter) in the code runs it, Tab indents only once the admin edits the code (Esc
/// then Tab leaves the box), and a timer counts
/// while a run is pending.
#[component]
pub fn TrialPanel(
    target: TrialTarget,
    input: Option<TrialInput>,
    result: Option<Result<ExecutionResult, String>>,
    /// Where each of the result's artifacts downloads from (the console's own address).
    downloads: Vec<String>,
    pending: RwSignal<Option<Pending>>,
) -> impl IntoView {
    let input = input.unwrap_or_else(|| TrialInput {
        language: "python".into(),
        code: SAMPLE_CODE.into(),
        arguments: SAMPLE_ARGUMENTS.into(),
        timeout_secs: String::new(),
    });
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let (json_error, set_json_error) = signal(None::<String>);
    let check_json = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        let problem = match serde_json::from_str::<serde_json::Value>(&text) {
            _ if text.trim().is_empty() => None,
            Ok(serde_json::Value::Object(_)) => None,
            Ok(_) => Some(td_string!(locale, trial.not_object).to_string()),
            Err(e) => Some(td_string!(locale, trial.not_json, error = e).to_string()),
        };
        set_json_error.set(problem);
    };
    let name = target.name.clone();
    let runs_on = match (target.active, target.saved) {
        (true, _) => td_string!(locale, trial.on_active, name).to_string(),
        (false, true) => td_string!(locale, trial.on_saved, name).to_string(),
        (false, false) => td_string!(locale, trial.on_defaults, name).to_string(),
    };
    // Whether the admin is editing the code: Tab indents only then. Tabbing into the box
    // (or Esc) is not editing, so Tab moves on; typing or clicking in it is.
    let editing = RwSignal::new(false);
    // Line numbers beside the code: from the server's copy of the code, then (hydrated)
    // counted as it is typed, and scrolled with it.
    let lines = RwSignal::new(line_count(&input.code));
    let gutter = NodeRef::<leptos::html::Pre>::new();
    let numbers = move || {
        (1..=lines.get())
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let elapsed = RwSignal::new(0u32);
    start_timer(pending, elapsed);
    let busy = move || pending.get().is_some();
    view! {
        <section class="card trial" id="trial" data-testid="trial-form" aria-labelledby="trial-title">
            <h2 id="trial-title">{t!(i18n, trial.title)}</h2>
            <p class="runs-on" data-testid="trial-runs-on"><strong>{t!(i18n, trial.runs_on)}</strong>" " {runs_on}</p>
            <p class="muted">
                <code>"main()"</code> " " {t!(i18n, trial.main_args)} " "
                <kbd>"Ctrl"</kbd> "+" <kbd>"Enter"</kbd> " " {t!(i18n, trial.keys)}
            </p>
            <div class="row">
                <div class="field">
                    <label for="trial-language">{t!(i18n, trial.language)}</label>
                    <select id="trial-language" name="language">
                        {Language::ALL.into_iter().map(|l| {
                            let selected = l.id() == input.language;
                            view! { <option value=l.id() selected=selected>{l.label()}</option> }
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="trial-timeout">{t!(i18n, trial.timeout)}</label>
                    <input id="trial-timeout" name="timeout_secs" type="number" min="1" max=crate::model::execution::MAX_TIMEOUT_SECS.to_string() value=input.timeout_secs.clone() placeholder=td_string!(i18n.get_locale_untracked(), trial.timeout_placeholder).to_string()/>
                </div>
            </div>
            <div class="field">
                <label for="trial-code">{t!(i18n, trial.code)}</label>
                <div class="editor">
                    <pre class="gutter mono" aria-hidden="true" node_ref=gutter data-testid="code-lines">{numbers}</pre>
                    <textarea id="trial-code" name="code" rows="12" class="mono code" spellcheck="false" wrap="off"
                        on:keydown=move |ev| code_keys(ev, editing)
                        on:focus=move |_| editing.set(false)
                        on:blur=move |_| editing.set(false)
                        on:pointerdown=move |_| editing.set(true)
                        on:input=move |ev| {
                            editing.set(true);
                            lines.set(line_count(&event_target_value(&ev)));
                        }
                        on:scroll=move |ev| follow_scroll(&ev, gutter)
                        inner_html=textarea_html(&input.code)></textarea>
                </div>
            </div>
            <div class="field" class:has-error=move || json_error.get().is_some()>
                <label for="trial-arguments">{t!(i18n, trial.arguments)}</label>
                <textarea id="trial-arguments" name="arguments" rows="3" class="mono" spellcheck="false"
                    on:input=check_json inner_html=textarea_html(&input.arguments)></textarea>
                {move || json_error.get().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
            </div>
            <div class="actions">
                <button type="submit" class="button" formaction="/rpc/run_trial" id="trial-run"
                    disabled=busy data-testid="run">{t!(i18n, trial.run)}</button>
                {move || (pending.get() == Some(Pending::Run)).then(|| view! {
                    <span class="loading" data-testid="trial-pending"><span class="spinner" aria-hidden="true"></span>
                        " " {move || td_string!(locale, trial.running, secs = elapsed.get()).to_string()}</span>
                })}
            </div>
            {result.map(|result| match result {
                Ok(result) => view! { <ResultView result downloads/> }.into_any(),
                Err(message) => view! { <p class="notice error" role="alert" data-testid="trial-error">{message}</p> }.into_any(),
            })}
        </section>
    }
}

/// How many lines the code box shows for `code` (a last empty line counts: the cursor can
/// stand there).
fn line_count(code: &str) -> usize {
    code.split('\n').count()
}

/// Keeps the line numbers level with the code when the code box scrolls (hydrated only).
fn follow_scroll(ev: &leptos::ev::Event, gutter: NodeRef<leptos::html::Pre>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let area = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok());
        if let (Some(area), Some(gutter)) = (area, gutter.get()) {
            gutter.set_scroll_top(area.scroll_top());
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (ev, gutter);
}

/// Counts the seconds of a pending run in `elapsed` (hydrated only).
fn start_timer(pending: RwSignal<Option<Pending>>, elapsed: RwSignal<u32>) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if pending.get() == Some(Pending::Run) {
            elapsed.set(0);
            let _ = set_interval_with_handle(
                move || elapsed.update(|s| *s += 1),
                std::time::Duration::from_secs(1),
            );
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (pending, elapsed);
}

/// The code box's keys: Ctrl/Cmd+Enter runs the trial; Tab inserts four spaces while the
/// admin is editing (typed or clicked in the box) and moves on otherwise (tabbing through the
/// page, or after Esc).
fn code_keys(ev: leptos::ev::KeyboardEvent, editing: RwSignal<bool>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let key = ev.key();
        if key == "Enter" && (ev.ctrl_key() || ev.meta_key()) {
            ev.prevent_default();
            let document = document();
            let run = document
                .get_element_by_id("trial-run")
                .and_then(|b| b.dyn_into::<web_sys::HtmlElement>().ok());
            if let Some(run) = run {
                // A click submits the form the way the button does (its formaction).
                run.click();
            }
            return;
        }
        if key == "Escape" {
            editing.set(false);
            return;
        }
        if key != "Tab" || ev.shift_key() || ev.ctrl_key() || ev.alt_key() || ev.meta_key() {
            return;
        }
        if editing.get_untracked() {
            insert_spaces_on_tab(ev);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (ev, editing);
}

/// Tab in the code editor inserts four spaces instead of leaving the field.
#[cfg(feature = "hydrate")]
fn insert_spaces_on_tab(ev: leptos::ev::KeyboardEvent) {
    use wasm_bindgen::JsCast;
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
    let i18n = use_i18n();
    let (label, hint) = status_words(i18n.get_locale_untracked(), result.status);
    let ok = result.status == ExecStatus::Success;
    let returned = result
        .result
        .present
        .then(|| serde_json::to_string_pretty(&result.result.value).unwrap_or_default());
    let cut = result.status == ExecStatus::OutputLimit;
    let empty_stdout = result.stdout.is_empty();
    view! {
        <div class="result" data-testid="trial-result">
            <p>
                <span class=if ok { "badge success" } else { "badge failure" } data-testid="trial-status"
                    data-status=result.status.id() title=hint.clone()>{label}</span>
                " " {t!(i18n, trial.exit_code)} " " {result.exit_code.map_or("—".to_owned(), |c| c.to_string())}
                " · " {result.wall_time_ms} " ms"
                " · "
                <span class="muted" data-testid="trial-status-hint">{hint}</span>
            </p>
            {returned.map(|text| view! {
                <h3>{t!(i18n, trial.return_value)} " " <span class="muted">"(" {result.result.json_type.clone()} ")"</span> <CopyButton target="trial-return"/></h3>
                <pre class="output" id="trial-return" data-testid="trial-return">{text}</pre>
            })}
            <h3>"stdout " <CopyButton target="trial-stdout"/></h3>
            {if empty_stdout {
                view! { <p class="muted" data-testid="trial-stdout">{t!(i18n, trial.nothing_printed)}</p> }.into_any()
            } else {
                view! { <pre class="output" id="trial-stdout" data-testid="trial-stdout">{result.stdout}</pre> }.into_any()
            }}
            {cut.then(|| view! { <p class="cut-marker" data-testid="output-cut">{t!(i18n, trial.output_cut)}</p> })}
            {(!result.stderr.is_empty()).then(|| view! {
                <h3>"stderr " <CopyButton target="trial-stderr"/></h3>
                <pre class="output error" id="trial-stderr" data-testid="trial-stderr">{result.stderr.clone()}</pre>
            })}
            {(!result.artifacts.is_empty()).then(|| view! {
                <h3>{t!(i18n, trial.artifacts)}</h3>
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
                                " " {td_string!(i18n.get_locale_untracked(), trial.bytes, size = a.size).to_string()}
                            </li>
                        }
                    }).collect_view()}
                </ul>
            })}
        </div>
    }
}

/// A button that copies the text of element `target` (shown once hydrated: without
/// JavaScript there is nothing to copy with).
#[component]
pub fn CopyButton(target: &'static str) -> impl IntoView {
    let i18n = use_i18n();
    let hydrated = RwSignal::new(false);
    let copied = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let text = document()
                .get_element_by_id(target)
                .and_then(|e| e.text_content())
                .unwrap_or_default();
            let _ = window().navigator().clipboard().write_text(&text);
            copied.set(true);
        }
    };
    view! {
        <Show when=move || hydrated.get()>
            <button type="button" class="copy" on:click=copy data-testid=format!("copy-{target}")
                aria-label=format!("{} {}", td_string!(i18n.get_locale_untracked(), common.copy), target.trim_start_matches("trial-"))>
                {move || if copied.get() { td_string!(i18n.get_locale_untracked(), common.copied).to_string() } else { td_string!(i18n.get_locale_untracked(), common.copy).to_string() }}
            </button>
        </Show>
    }
}

/// The history's status for a request refused before anything ran.
const NOT_RUN: &str = "error";

/// A run status from the history (`program_error`) in words with its hint; `None` for an id
/// this build does not know.
fn status_id_words(locale: Locale, id: &str) -> Option<(String, String)> {
    if id == NOT_RUN {
        return Some((
            td_string!(locale, status.not_run.label).to_string(),
            td_string!(locale, status.not_run.hint).to_string(),
        ));
    }
    ExecStatus::ALL
        .into_iter()
        .find(|s| s.id() == id)
        .map(|s| status_words(locale, s))
}

/// A run status from the history in words ("Program error"); an unknown id as it is.
pub fn status_label(locale: Locale, id: &str) -> String {
    status_id_words(locale, id).map_or_else(|| id.to_owned(), |(label, _)| label)
}

/// What a run status means, in one sentence (for a tooltip).
pub fn status_hint(locale: Locale, id: &str) -> String {
    status_id_words(locale, id)
        .map(|(_, hint)| hint)
        .unwrap_or_default()
}

/// A status in words, with its one-sentence hint, in `locale`.
fn status_words(locale: Locale, status: ExecStatus) -> (String, String) {
    let (label, hint) = match status {
        ExecStatus::Success => (
            td_string!(locale, status.success.label),
            td_string!(locale, status.success.hint),
        ),
        ExecStatus::ProgramError => (
            td_string!(locale, status.program_error.label),
            td_string!(locale, status.program_error.hint),
        ),
        ExecStatus::Timeout => (
            td_string!(locale, status.timeout.label),
            td_string!(locale, status.timeout.hint),
        ),
        ExecStatus::MemoryLimit => (
            td_string!(locale, status.memory_limit.label),
            td_string!(locale, status.memory_limit.hint),
        ),
        ExecStatus::OutputLimit => (
            td_string!(locale, status.output_limit.label),
            td_string!(locale, status.output_limit.hint),
        ),
        ExecStatus::ProcessLimit => (
            td_string!(locale, status.process_limit.label),
            td_string!(locale, status.process_limit.hint),
        ),
        ExecStatus::EgressLimit => (
            td_string!(locale, status.egress_limit.label),
            td_string!(locale, status.egress_limit.hint),
        ),
        ExecStatus::PoolBusy => (
            td_string!(locale, status.pool_busy.label),
            td_string!(locale, status.pool_busy.hint),
        ),
        ExecStatus::ProviderError => (
            td_string!(locale, status.provider_error.label),
            td_string!(locale, status.provider_error.hint),
        ),
    };
    (label.to_string(), hint.to_string())
}

#[cfg(test)]
mod tests {
    use super::line_count;

    #[test]
    fn the_line_numbers_count_the_line_after_a_last_newline() {
        assert_eq!(line_count(""), 1);
        assert_eq!(line_count("def main():\n    return 1"), 2);
        assert_eq!(line_count("def main():\n    return 1\n"), 3);
    }
}
