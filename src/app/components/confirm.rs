use leptos::prelude::*;

use crate::i18n::{t, use_i18n};

/// The second step of an act that cannot be taken back (revoke, restore, delete, disable): a
/// small form that asks `question`, posts `fields` to `/rpc/<action>` when confirmed, and
/// goes back to `cancel` otherwise. Reached by a link (`?delete=…`), so it works with
/// JavaScript off.
#[component]
pub fn Confirm(
    action: &'static str,
    question: String,
    fields: Vec<(&'static str, String)>,
    submit: String,
    cancel: String,
    testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let label = question.clone();
    view! {
        <form method="post" action=format!("/rpc/{action}") class="confirm" role="alertdialog"
            aria-label=label data-testid=testid>
            {fields.into_iter().map(|(name, value)| view! { <input type="hidden" name=name value=value/> }).collect_view()}
            <p>{question}</p>
            <button type="submit" class="button danger" autofocus data-testid=format!("{testid}-yes")>{submit}</button>
            " " <a href=cancel class="button ghost" data-testid=format!("{testid}-cancel")>{t!(i18n, common.cancel)}</a>
        </form>
    }
}
