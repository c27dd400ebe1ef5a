use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::{
    app::components::field_control::FieldControl,
    model::{
        schema::{FieldErrors, FieldGroup, FORM_ERROR},
        settings::ProviderCard,
    },
};

/// A provider's settings form, built field by field from its schema, grouped into sections.
/// A plain form: Save posts to the save function, "Test connection" posts the same (unsaved)
/// values to the test function; both work without JavaScript.
#[component]
pub fn ProviderForm(
    card: ProviderCard,
    values: Map<String, Value>,
    errors: FieldErrors,
    notice: Option<(&'static str, String)>,
) -> impl IntoView {
    let (pending, set_pending) = signal(false);
    // A stored secret is only reused while these keep their stored values.
    let destinations: Vec<String> = card
        .schema
        .destinations()
        .map(|f| f.label.clone())
        .collect();
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
            let controls = fields
                .into_iter()
                .map(|field| {
                    let value = values.get(&field.key).cloned();
                    let secret_set = card.secrets_set.contains(&field.key);
                    let error = errors.get(&field.key).cloned();
                    let destinations = destinations.clone();
                    view! { <FieldControl field value secret_set error destinations/> }
                })
                .collect_view();
            view! {
                <fieldset class="section">
                    <legend>{group.label()}</legend>
                    {controls}
                </fieldset>
            }
        })
    });
    let form_error = errors.get(FORM_ERROR).cloned();
    view! {
        <form method="post" action="/rpc/save_sandbox_settings" class="card provider-form" novalidate
            data-testid="provider-form" on:submit=move |_| set_pending.set(true)>
            <h2>{card.info.name.clone()}</h2>
            {notice.map(|(class, text)| view! {
                <p class=format!("notice {class}") role="status" data-testid="save-notice">{text}</p>
            })}
            {form_error.map(|e| view! { <p class="notice error" role="alert">{e}</p> })}
            <input type="hidden" name="kind" value=card.info.kind.clone()/>
            <input type="hidden" name="expected_version" value=card.version.map(|v| v.to_string()).unwrap_or_default()/>
            {sections}
            {(!card.active).then(|| view! {
                <label class="check">
                    <input type="checkbox" name="make_active" value="on"/>
                    " Make this the active provider"
                </label>
            })}
            <div class="actions">
                <button type="submit" class="button" disabled=pending data-testid="save">"Save"</button>
                <button type="submit" class="button ghost" formaction="/rpc/test_sandbox_connection"
                    disabled=pending data-testid="test-connection">"Test connection"</button>
                {move || pending.get().then(|| view! {
                    <span class="loading"><span class="spinner" aria-hidden="true"></span>" Working…"</span>
                })}
            </div>
            {card.updated_at.clone().map(|at| view! {
                <p class="help">"Last saved " {at} {card.updated_by.clone().map(|by| format!(" by {by}"))} "."</p>
            })}
        </form>
    }
}
