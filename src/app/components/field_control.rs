use leptos::prelude::*;
use serde_json::Value;

use crate::{
    app::format::textarea_html,
    i18n::{td_string, use_i18n},
    model::schema::{FieldKind, FieldSpec},
};

/// One form field rendered from its schema entry: label (with a required marker), the control
/// for its kind, hints, description, and the error for it, if any. Posted as `values[<key>]`.
#[component]
pub fn FieldControl(
    field: FieldSpec,
    value: Option<Value>,
    secret_set: bool,
    error: Option<String>,
    /// Labels of the fields that decide where secrets go; a kept secret needs them unchanged.
    #[prop(optional)]
    destinations: Vec<String>,
    /// The first field to fix after a post: it takes the focus.
    #[prop(optional)]
    focus: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let id = format!("field-{}", field.key);
    let help_id = format!("help-{}", field.key);
    let error_id = format!("error-{}", field.key);
    let described = [
        (!field.description.is_empty() || matches!(field.kind, FieldKind::Integer { .. }))
            .then(|| help_id.clone()),
        error.as_ref().map(|_| error_id.clone()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    let described = (!described.is_empty()).then_some(described);
    let name = format!("values[{}]", field.key);
    let text = value.as_ref().map(display).unwrap_or_default();
    let placeholder = field.placeholder.clone().unwrap_or_default();
    let invalid = error.is_some();
    let control = match &field.kind {
        FieldKind::String => view! {
            <input id=id.clone() name=name type="text" value=text placeholder=placeholder
                required=field.required readonly=field.readonly disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus/>
        }
        .into_any(),
        FieldKind::Secret => {
            let hint = if secret_set { td_string!(i18n.get_locale_untracked(), settings.field.secret_set).to_string() } else { placeholder };
            view! {
                <input id=id.clone() name=name type="password" value="" placeholder=hint autocomplete="off"
                    required=field.required && !secret_set disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus/>
            }
            .into_any()
        }
        FieldKind::SecretText => {
            // Never filled in: a stored key stays unless a new one is pasted.
            let hint = if secret_set { td_string!(i18n.get_locale_untracked(), settings.field.secret_set).to_string() } else { placeholder };
            view! {
                <textarea id=id.clone() name=name rows="6" class="mono" placeholder=hint autocomplete="off" spellcheck="false"
                    required=field.required && !secret_set disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus
                    inner_html=textarea_html("")></textarea>
            }
            .into_any()
        }
        FieldKind::Integer { min, max } => view! {
            <input id=id.clone() name=name type="number" step="1" value=text placeholder=placeholder
                min=min.map(|m| m.to_string()) max=max.map(|m| m.to_string())
                required=field.required readonly=field.readonly disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus/>
        }
        .into_any(),
        FieldKind::Boolean => {
            // A switch: a checkbox, plus a marker that it was on the form, so an unticked
            // switch posts "false" (not "missing", which would mean the default) — with
            // JavaScript off too.
            let on = text == "true";
            view! {
                <span class="switch">
                    <input id=id.clone() name=name type="checkbox" role="switch" value="true" checked=on
                        disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus/>
                    <span class="track" aria-hidden="true"></span>
                </span>
                <input type="hidden" name=format!("switch[{}]", field.key) value="1"/>
            }
            .into_any()
        }
        FieldKind::Select { options } => {
            let options = options.clone();
            view! {
                <select id=id.clone() name=name disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus>
                    {options.into_iter().map(|o| {
                        let selected = o.value == text;
                        view! { <option value=o.value selected=selected>{o.label}</option> }
                    }).collect_view()}
                </select>
            }
            .into_any()
        }
        FieldKind::Multiline | FieldKind::Json => view! {
            <textarea id=id.clone() name=name rows="6" class="mono" placeholder=placeholder
                readonly=field.readonly disabled=field.readonly aria-invalid=invalid.to_string() aria-describedby=described.clone() autofocus=focus
                inner_html=textarea_html(&text)></textarea>
        }
        .into_any(),
    };
    let keep_note = (field.kind.is_secret() && secret_set && !destinations.is_empty()).then(|| {
        td_string!(
            locale,
            settings.field.secret_destination,
            fields = destinations.join(" / ")
        )
        .to_string()
    });
    let hint = match &field.kind {
        FieldKind::Integer {
            min: Some(min),
            max: Some(max),
        } => Some(td_string!(locale, settings.field.from_to, min = *min, max = *max).to_string()),
        FieldKind::Integer {
            min: Some(min),
            max: None,
        } => Some(td_string!(locale, settings.field.at_least, min = *min).to_string()),
        FieldKind::Integer {
            min: None,
            max: Some(max),
        } => Some(td_string!(locale, settings.field.at_most, max = *max).to_string()),
        _ => None,
    };
    view! {
        <div class="field" class:has-error=invalid data-field=field.key.clone()>
            <label for=id>
                {field.label.clone()}
                {field.required.then(|| view! { <span class="required" title=td_string!(i18n.get_locale_untracked(), settings.field.required).to_string()>" *"</span> })}
            </label>
            {control}
            {(!field.description.is_empty() || hint.is_some()).then(|| view! {
                <p class="help" id=help_id.clone()>{field.description.clone()} " " {hint}</p>
            })}
            {keep_note.map(|note| view! { <p class="help" data-testid="secret-destination-note">{note}</p> })}
            {error.map(|e| view! { <p class="field-error" id=error_id.clone() role="alert">{e}</p> })}
        </div>
    }
}

/// A stored value as form text.
fn display(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}
