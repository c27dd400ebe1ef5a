use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    app::components::{
        connection_report::ConnectionReportDialog, error_view::ErrorView,
        provider_form::ProviderForm, trial_panel::TrialPanel,
    },
    model::{
        schema::FieldErrors,
        settings::{FlashOutcome, SandboxFlash, SandboxSettings, SaveOutcome},
    },
    server_fns::sandbox::{get_sandbox_settings, page_url, take_sandbox_flash},
};

/// The sandbox-settings page: provider cards, the selected provider's form (from its schema),
/// test connection, and a trial run.
#[component]
pub fn SandboxSettingsPage() -> impl IntoView {
    let settings = Resource::new(|| (), |_| get_sandbox_settings());
    let flash = Resource::new(|| (), |_| take_sandbox_flash());
    let query = use_query_map();
    view! {
        <Title text="Sandbox settings"/>
        <h1>"Sandbox settings"</h1>
        <p class="muted intro">
            "Choose where untrusted Python and JavaScript run. Select a provider to configure it, "
            "test the connection with the values in the form (nothing is saved), save, and try some code."
        </p>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let settings = settings.get()?;
                    let flash = flash.get()?;
                    let requested = query.with(|q| q.get("provider"));
                    Some(settings.and_then(|s| flash.map(|f| view! { <Settings settings=s flash=f requested/> })))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn Settings(
    settings: SandboxSettings,
    flash: Option<SandboxFlash>,
    requested: Option<String>,
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
    let mut errors = FieldErrors::new();
    let mut notice = None;
    let mut report = None;
    let mut trial = None;
    let mut submitted = None;
    if let Some(flash) = flash {
        let same = flash.kind == selected;
        match flash.outcome {
            FlashOutcome::Save(outcome) if same => match outcome {
                SaveOutcome::Saved { version, active } => {
                    let live = if active {
                        " New runs use these settings now."
                    } else {
                        ""
                    };
                    notice = Some(("success", format!("Saved (version {version}).{live}")));
                }
                SaveOutcome::Invalid { errors: e } => {
                    notice = Some((
                        "error",
                        "Nothing was saved: fix the marked fields.".to_owned(),
                    ));
                    errors = e;
                    submitted = Some(flash.values);
                }
                SaveOutcome::Conflict { message } => notice = Some(("error", message)),
            },
            FlashOutcome::Test(r) if same => {
                errors = r.errors.clone();
                submitted = Some(flash.values);
                report = Some(r);
            }
            FlashOutcome::Trial {
                input,
                result,
                downloads,
            } => trial = Some((input, result, downloads)),
            _ => {}
        }
    }
    let (trial_input, trial_result, downloads) =
        trial.map_or((None, None, Vec::new()), |(i, r, d)| (Some(i), Some(r), d));
    view! {
        <div class="provider-cards" role="list">
            {settings.providers.iter().map(|p| {
                let is_selected = p.info.kind == selected;
                view! {
                    <a role="listitem" class="provider-card" class:selected=is_selected class:active=p.active
                        href=page_url(&p.info.kind) data-testid=format!("provider-{}", p.info.kind)
                        aria-current=is_selected.then_some("true")>
                        <span class="name">{p.info.name.clone()}</span>
                        {p.active.then(|| {
                            let health = settings.active_health.clone();
                            let (class, label) = if health.healthy { ("badge success", "Healthy") } else { ("badge failure", "Unhealthy") };
                            view! {
                                <span class="badges">
                                    <span class="badge success">"Active"</span>
                                    <span class=class title=health.message.clone() data-testid="health-badge">{label}</span>
                                </span>
                                <span class="health-message" data-testid="health-message">{health.message}</span>
                                {settings.active_pool.map(|pool| view! {
                                    <span class="pool" data-testid="pool-status">
                                        {format!("Pool: {} busy of {}", pool.busy, pool.size)}
                                    </span>
                                })}
                            }
                        })}
                        <span class="description">{p.info.description.clone()}</span>
                        <span class="tags">{p.info.tags.iter().map(|t| view! { <span class="tag">{t.clone()}</span> }).collect_view()}</span>
                    </a>
                }
            }).collect_view()}
        </div>
        {card.map(|card| {
            let values = submitted.unwrap_or_else(|| card.values.clone());
            view! { <ProviderForm card values errors notice/> }
        })}
        {report.map(|report| view! { <ConnectionReportDialog report close_href=page_url(&selected)/> })}
        <TrialPanel input=trial_input result=trial_result downloads languages=settings.active_languages.clone()/>
    }
}
