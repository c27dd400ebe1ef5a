use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::components::{
        connection_report::ConnectionReportDialog,
        error_view::ErrorView,
        provider_form::{Pending, ProviderForm},
        setting_versions::SettingVersions,
        trial_panel::{TrialPanel, TrialTarget},
    },
    i18n::{t, td_string, use_i18n, Locale},
    model::{
        schema::FieldErrors,
        settings::{FlashOutcome, SandboxFlash, SandboxSettings, SaveOutcome},
    },
    server_fns::sandbox::{get_sandbox_settings, history_url, page_url, take_sandbox_flash},
};

/// The sandbox-settings page: provider cards, the selected provider's form (from its schema)
/// with its trial run, or its saved versions (the History tab).
#[component]
pub fn SandboxSettingsPage() -> impl IntoView {
    let settings = Resource::new(|| (), |_| get_sandbox_settings());
    let flash = Resource::new(|| (), |_| take_sandbox_flash());
    let query = use_query_map();
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), settings.title).to_string()/>
        <h1>{t!(i18n, settings.title)}</h1>
        <p class="muted intro">{t!(i18n, settings.intro)}</p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let settings = settings.get()?;
                    let flash = flash.get()?;
                    let requested = query.with(|q| q.get("provider"));
                    let history = query.with(|q| q.get("tab")).as_deref() == Some("history");
                    let confirm_restore = query.with(|q| q.get("restore")).and_then(|id| id.parse::<i64>().ok());
                    Some(settings.and_then(|s| flash.map(|f| view! { <Settings settings=s flash=f requested history confirm_restore/> })))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

/// A notice for the top of the page: its class (`success`, `error`, `info`) and text.
type Notice = (&'static str, String);

fn save_notice(locale: Locale, outcome: &SaveOutcome, restored: Option<i64>) -> Notice {
    match outcome {
        SaveOutcome::Saved {
            version,
            active,
            warning,
            ..
        } => {
            let version = *version;
            let text = match (restored, *active) {
                (Some(id), true) => {
                    td_string!(locale, settings.restored_live, id, version).to_string()
                }
                (Some(id), false) => td_string!(locale, settings.restored, id, version).to_string(),
                (None, true) => td_string!(locale, settings.saved_live, version).to_string(),
                (None, false) => td_string!(locale, settings.saved, version).to_string(),
            };
            match warning {
                Some(warning) => ("info", format!("{text} {warning}")),
                None => ("success", text),
            }
        }
        SaveOutcome::Invalid { .. } => ("error", td_string!(locale, settings.invalid).to_string()),
        SaveOutcome::Conflict { message } => ("error", message.clone()),
        SaveOutcome::Unhealthy { health, active, .. } => {
            let why = sentence(&health.message);
            let text = match (restored, *active) {
                (Some(_), _) => td_string!(locale, settings.unhealthy_restore, why).to_string(),
                (None, true) => td_string!(locale, settings.unhealthy_active, why).to_string(),
                (None, false) => {
                    td_string!(locale, settings.unhealthy_make_active, why).to_string()
                }
            };
            ("error", text)
        }
        SaveOutcome::Kept { id } => (
            "info",
            td_string!(locale, settings.kept, id = *id).to_string(),
        ),
    }
}

/// `text` as a sentence: a capital first letter, and a full stop.
fn sentence(text: &str) -> String {
    let text = text.trim();
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let mut out: String = first.to_uppercase().chain(chars).collect();
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

#[component]
fn Settings(
    settings: SandboxSettings,
    flash: Option<SandboxFlash>,
    requested: Option<String>,
    history: bool,
    /// A saved version whose Restore waits to be confirmed.
    confirm_restore: Option<i64>,
) -> impl IntoView {
    let selected = requested
        .filter(|k| settings.providers.iter().any(|p| &p.info.kind == k))
        .or_else(|| {
            flash
                .as_ref()
                .map(|f| f.kind.clone())
                .filter(|k| !k.is_empty())
        })
        .unwrap_or_else(|| settings.active_kind.clone());
    let card = settings
        .providers
        .iter()
        .find(|p| p.info.kind == selected)
        .cloned();
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let mut errors = FieldErrors::new();
    let mut notice: Option<Notice> = None;
    let mut report = None;
    let mut trial = None;
    let mut trial_input = None;
    let mut submitted = None;
    let mut unhealthy = None;
    let mut restore_again = None;
    if let Some(flash) = flash {
        let same = flash.kind == selected;
        trial_input = flash.trial.clone();
        let typed = (!flash.values.is_empty()).then_some(flash.values);
        match flash.outcome {
            FlashOutcome::Save(outcome) if same => {
                notice = Some(save_notice(locale, &outcome, None));
                match outcome {
                    SaveOutcome::Invalid { errors: e } => {
                        errors = e;
                        submitted = typed;
                    }
                    SaveOutcome::Unhealthy {
                        make_active,
                        active,
                        ..
                    } => {
                        unhealthy = Some((active, make_active));
                        submitted = typed;
                    }
                    SaveOutcome::Kept { .. } | SaveOutcome::Conflict { .. } => submitted = typed,
                    SaveOutcome::Saved { .. } => {}
                }
            }
            FlashOutcome::Restore { id, outcome } if same => {
                notice = Some(save_notice(locale, &outcome, Some(id)));
                if let SaveOutcome::Invalid { errors } = &outcome {
                    let why = errors.values().next().cloned().unwrap_or_default();
                    notice = Some((
                        "error",
                        td_string!(locale, settings.not_restored, id, why).to_string(),
                    ));
                }
                if matches!(outcome, SaveOutcome::Unhealthy { .. }) {
                    restore_again = Some(id);
                }
            }
            FlashOutcome::Test(r) if same => {
                errors = r.errors.clone();
                submitted = typed;
                report = Some(r);
            }
            FlashOutcome::Trial {
                input,
                result,
                downloads,
            } if same => {
                submitted = typed;
                trial_input = Some(input);
                trial = Some((result, downloads));
            }
            _ => {}
        }
    }
    let (trial_result, downloads) = trial.map_or((None, Vec::new()), |(r, d)| (Some(r), d));
    let pending = RwSignal::new(None::<Pending>);
    let labels: Vec<(String, String)> = card
        .as_ref()
        .map(|c| {
            c.schema
                .fields
                .iter()
                .map(|f| (f.key.clone(), f.label.clone()))
                .collect()
        })
        .unwrap_or_default();
    let health = settings.active_health.clone();
    view! {
        <div class="notices" role="status" aria-live="polite" data-testid="notices">
            {notice.map(|(class, text)| view! {
                <p class=format!("notice {class}") tabindex="-1" autofocus=errors.is_empty() data-testid="save-notice">{text}</p>
            })}
        </div>
        <ul class="provider-cards" aria-label=td_string!(i18n.get_locale_untracked(), settings.providers).to_string()>
            {settings.providers.iter().map(|p| {
                let is_selected = p.info.kind == selected;
                let configured = p.version.is_some() && !p.active;
                view! {
                    <li>
                        <a class="provider-card" class:selected=is_selected class:active=p.active
                            href=page_url(&p.info.kind) data-testid=format!("provider-{}", p.info.kind)
                            aria-current=is_selected.then_some("true")>
                            <span class="name">{p.info.name.clone()}</span>
                            {p.active.then(|| {
                                let health = health.clone();
                                let (class, label) = if health.healthy {
                                    ("badge success", td_string!(i18n.get_locale_untracked(), settings.healthy).to_string())
                                } else {
                                    ("badge failure", td_string!(i18n.get_locale_untracked(), settings.unhealthy).to_string())
                                };
                                view! {
                                    <span class="badges">
                                        <span class="badge success">{t!(i18n, settings.active)}</span>
                                        <span class=class title=health.message.clone() data-testid="health-badge">{label}</span>
                                    </span>
                                    <span class="health-message" data-testid="health-message">{health.message}</span>
                                    {settings.active_pool.map(|pool| view! {
                                        <span class="pool" data-testid="pool-status">
                                            {crate::app::format::pool_line(i18n.get_locale_untracked(), &pool, health.healthy)}
                                        </span>
                                    })}
                                }
                            })}
                            {configured.then(|| view! { <span class="badges"><span class="badge neutral">{t!(i18n, settings.configured)}</span></span> })}
                            <span class="description">{p.info.description.clone()}</span>
                            <span class="tags">{p.info.tags.iter().map(|t| view! { <span class="tag">{t.clone()}</span> }).collect_view()}</span>
                        </a>
                    </li>
                }
            }).collect_view()}
        </ul>
        {card.map(|card| {
            let kind = card.info.kind.clone();
            let tabs = view! {
                <nav class="tabs" aria-label=format!("{} settings", card.info.name)>
                    <a href=page_url(&kind) aria-current=(!history).then_some("page") data-testid="tab-settings">{t!(i18n, settings.tab_settings)}</a>
                    <a href=history_url(&kind) aria-current=history.then_some("page") data-testid="tab-history">{t!(i18n, settings.tab_history)}</a>
                </nav>
            };
            if history {
                view! {
                    {tabs}
                    <SettingVersions kind=kind current=card.version restore_again confirm=confirm_restore/>
                }.into_any()
            } else {
                let values = submitted.clone().unwrap_or_else(|| card.values.clone());
                let target = TrialTarget {
                    kind: kind.clone(),
                    name: card.info.name.clone(),
                    active: card.active,
                    saved: card.version.is_some(),
                };
                view! {
                    {tabs}
                    <form method="post" action="/rpc/save_sandbox_settings" novalidate class="settings-form"
                        data-testid="provider-form"
                        on:submit=move |ev| {
                            if pending.get_untracked().is_none() {
                                pending.set(Some(submitter(&ev)));
                            }
                        }>
                        // The form's default button, disabled: Enter in a field submits
                        // nothing (it would otherwise save, and activate).
                        <button type="submit" disabled hidden aria-hidden="true" tabindex="-1"></button>
                        <ProviderForm card values errors unhealthy pending/>
                        <TrialPanel target input=trial_input result=trial_result downloads pending/>
                    </form>
                }.into_any()
            }
        })}
        {report.map(|report| view! { <ConnectionReportDialog report labels/> })}
    }
}

/// Which of the form's buttons sent it.
fn submitter(ev: &leptos::ev::SubmitEvent) -> Pending {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let action = ev
            .submitter()
            .and_then(|s| s.dyn_into::<web_sys::HtmlButtonElement>().ok())
            .map(|b| b.form_action())
            .unwrap_or_default();
        if action.ends_with("/rpc/run_trial") {
            return Pending::Run;
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = ev;
    Pending::Save
}
