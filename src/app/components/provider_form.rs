use leptos::prelude::*;
use serde_json::{Map, Value};

use super::choice_tabs::{choice_tabs, chosen_tab};

use crate::{
    app::components::field_control::FieldControl,
    i18n::{t, use_i18n},
    model::{
        schema::{FieldErrors, FieldGroup, FieldSpec, FORM_ERROR},
        settings::ProviderCard,
    },
};

/// Which post of the settings form is under way (hydrated only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// Save or Test connection.
    Save,
    /// The trial run.
    Run,
}

/// A provider's settings, built field by field from its schema, in collapsible sections,
/// with Save and Test connection in an action bar at its top that stays in view. It sits in the page's
/// one form (with the trial run): Save posts it to the save function, "Test connection"
/// posts the same (unsaved) values to the test function; both work without JavaScript.
/// `unhealthy` is set when the last save was refused by the health check: (the provider is
/// the active one, the save asked to make it active); it offers the explicit second steps.
#[component]
pub fn ProviderForm(
    card: ProviderCard,
    values: Map<String, Value>,
    errors: FieldErrors,
    unhealthy: Option<(bool, bool)>,
    pending: RwSignal<Option<Pending>>,
) -> impl IntoView {
    let i18n = use_i18n();
    // A stored secret is only reused while these keep their stored values.
    let destinations: Vec<String> = card
        .schema
        .destinations()
        .map(|f| f.label.clone())
        .collect();
    let has_secrets = card.schema.fields.iter().any(|f| f.kind.is_secret());
    let first_error = card
        .schema
        .fields
        .iter()
        .find(|f| errors.contains_key(&f.key))
        .map(|f| f.key.clone());
    let sections = [
        FieldGroup::Deployment,
        FieldGroup::Runtime,
        FieldGroup::Network,
    ]
    .map(|group| {
        let fields: Vec<_> = card
            .schema
            .fields
            .iter()
            .filter(|f| f.group == group)
            .cloned()
            .collect();
        (!fields.is_empty()).then(|| {
            let control = |field: FieldSpec| {
                let value = values.get(&field.key).cloned();
                let secret_set = card.secrets_set.contains(&field.key);
                let error = errors.get(&field.key).cloned();
                let destinations = destinations.clone();
                let focus = first_error.as_deref() == Some(field.key.as_str());
                view! { <FieldControl field value secret_set error destinations focus/> }
            };
            let mut controls = Vec::new();
            let mut fields = fields.into_iter().peekable();
            while let Some(field) = fields.next() {
                if field.choice.is_none() {
                    controls.push(control(field).into_any());
                    continue;
                }
                let mut set = vec![field];
                while let Some(next) = fields.next_if(|f| f.choice.is_some()) {
                    set.push(next);
                }
                let chosen = chosen_tab(&set, &card.secrets_set, &values, &errors);
                controls.push(choice_tabs(set, chosen, &control).into_any());
            }
            view! {
                <details class="section" open>
                    <summary>{match group {
                        FieldGroup::Deployment => t!(i18n, settings.group.deployment).into_any(),
                        FieldGroup::Runtime => t!(i18n, settings.group.runtime).into_any(),
                        FieldGroup::Network => t!(i18n, settings.group.network).into_any(),
                    }}</summary>
                    <div class="section-body">{controls}</div>
                </details>
            }
        })
    });
    let form_error = errors.get(FORM_ERROR).cloned();
    let busy = move || pending.get().is_some();
    view! {
        <section class="card provider-form" aria-labelledby="provider-title">
            <h2 id="provider-title">{card.info.name.clone()}</h2>
            <div class="actions sticky-actions" data-testid="action-bar">
                <button type="submit" class="button" disabled=busy data-testid="save">{t!(i18n, settings.save)}</button>
                <button type="submit" class="button ghost" formaction="/rpc/test_sandbox_connection"
                    disabled=busy data-testid="test-connection">{t!(i18n, settings.test_connection)}</button>
                {move || (pending.get() == Some(Pending::Save)).then(|| view! {
                    <span class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.working)}</span>
                })}
                {card.active.then(|| view! { <span class="help">{t!(i18n, settings.health_first)}</span> })}
            </div>
            {(!card.active).then(|| view! {
                <label class="check">
                    <input type="checkbox" name="make_active" value="on" checked=unhealthy.is_some_and(|(_, m)| m)/>
                    " " {t!(i18n, settings.make_active)}
                </label>
            })}
            {form_error.map(|e| view! { <p class="notice error" role="alert">{e}</p> })}
            {unhealthy.map(|(active, _)| view! {
                <div class="notice error anyway" data-testid="unhealthy">
                    <p>{t!(i18n, settings.choose)}</p>
                    <div class="actions">
                        <button type="submit" class="button danger" name="anyway" value="activate"
                            data-testid="activate-anyway">
                            {t!(i18n, settings.activate_anyway)}
                        </button>
                        <button type="submit" class="button ghost" name="anyway" value="inactive"
                            data-testid="save-inactive">{t!(i18n, settings.save_inactive)}</button>
                    </div>
                    <p class="help">
                        {if active {
                            t!(i18n, settings.save_inactive_active_help).into_any()
                        } else {
                            t!(i18n, settings.save_inactive_help).into_any()
                        }}
                        {has_secrets.then(|| view! { " " {t!(i18n, settings.secrets_again)} })}
                    </p>
                </div>
            })}
            <input type="hidden" name="kind" value=card.info.kind.clone()/>
            <input type="hidden" name="expected_version" value=card.version.map(|v| v.to_string()).unwrap_or_default()/>
            {sections}
            {card.updated_at.clone().map(|at| {
                let at = crate::app::format::local_time(i18n.get_locale_untracked(), &at);
                let by = card.updated_by.clone().unwrap_or_default();
                view! { <p class="help">{t!(i18n, settings.last_saved, at, by)}</p> }
            })}
        </section>
    }
}
