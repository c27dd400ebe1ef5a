//! Alternatives offered as tabs (the ssh provider's sign-in: a password or a private key): a
//! radio button per tab, and only the chosen tab's fields shown, by CSS (`:has`), so it works
//! the same with JavaScript off. Every field is still posted; the provider decides what a
//! filled-in field of the other tab means.

use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::{
    i18n::{t, use_i18n},
    model::schema::{FieldErrors, FieldSpec},
};

/// The tab that opens first: the one with an error, else one whose field holds a value (a
/// stored secret counts), else the first.
pub fn chosen_tab(
    fields: &[FieldSpec],
    secrets_set: &[String],
    values: &Map<String, Value>,
    errors: &FieldErrors,
) -> String {
    let filled = |f: &&FieldSpec| {
        secrets_set.contains(&f.key)
            || values
                .get(&f.key)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.trim().is_empty())
    };
    fields
        .iter()
        .find(|f| errors.contains_key(&f.key))
        .or_else(|| fields.iter().find(filled))
        .or(fields.first())
        .and_then(|f| f.choice.clone())
        .unwrap_or_default()
}

/// The set of tabs, with `control` rendering each field.
pub fn choice_tabs<V: IntoView + 'static>(
    fields: Vec<FieldSpec>,
    chosen: String,
    control: &dyn Fn(FieldSpec) -> V,
) -> impl IntoView {
    let i18n = use_i18n();
    let mut options: Vec<String> = Vec::new();
    for field in &fields {
        if let Some(option) = &field.choice {
            if !options.contains(option) {
                options.push(option.clone());
            }
        }
    }
    let tabs = options
        .iter()
        .map(|option| {
            let label = match option.as_str() {
                "password" => t!(i18n, settings.choice.password).into_any(),
                "private_key" => t!(i18n, settings.choice.private_key).into_any(),
                other => other.to_owned().into_any(),
            };
            view! {
                <label class="tab">
                    <input type="radio" name="choice" value=option.clone() checked=*option == chosen
                        data-testid=format!("choice-{option}")/>
                    <span>{label}</span>
                </label>
            }
        })
        .collect_view();
    let panels = options
        .into_iter()
        .map(|option| {
            let inside = fields
                .iter()
                .filter(|f| f.choice.as_deref() == Some(option.as_str()))
                .cloned()
                .map(control)
                .collect_view();
            view! { <div class="choice-panel" data-option=option>{inside}</div> }
        })
        .collect_view();
    view! {
        <fieldset class="choice">
            <legend>{t!(i18n, settings.choice.sign_in)}</legend>
            <div class="tabs">{tabs}</div>
            {panels}
        </fieldset>
    }
}
