//! How the UI writes values the server sends as text.

use std::fmt::Write as _;

use chrono::{format::StrftimeItems, DateTime, NaiveDateTime};
use leptos::prelude::*;

use crate::{
    i18n::{td_string, use_i18n, Locale},
    model::provider::PoolState,
};

/// A stored UTC timestamp as the admin's language writes dates, to the second and marked UTC:
/// `Dec 2, 2026, 14:07:09 UTC`, `2026年12月2日 14:07:09 UTC`. A stamp that does not parse is
/// shown as stored.
pub fn local_time(locale: Locale, stamp: &str) -> String {
    let pattern = td_string!(locale, common.datetime).to_string();
    let parsed = DateTime::parse_from_rfc3339(stamp)
        .map(|t| t.naive_utc())
        .or_else(|_| {
            NaiveDateTime::parse_from_str(stamp.get(..19).unwrap_or(stamp), "%Y-%m-%d %H:%M:%S")
        });
    let mut out = String::new();
    match parsed {
        Ok(t) if write!(out, "{}", t.format_with_items(StrftimeItems::new(&pattern))).is_ok() => {
            out
        }
        _ => stamp.to_owned(),
    }
}

/// A timestamp in the page's language, with the stored value as its machine-readable form.
#[component]
pub fn When(#[prop(into)] stamp: String) -> impl IntoView {
    let text = local_time(use_i18n().get_locale_untracked(), &stamp);
    view! { <time datetime=stamp class="nowrap">{text}</time> }
}

/// The one pool line a card shows, live: its figure, or, while the provider is unhealthy,
/// that no sandbox is ready (an unhealthy docker pool is not "4 idle").
pub fn pool_line(locale: Locale, pool: &PoolState, healthy: bool) -> String {
    if healthy {
        crate::i18n::td_string!(locale, settings.pool, pool = pool_text(locale, pool)).to_string()
    } else {
        crate::i18n::td_string!(locale, settings.pool_unhealthy).to_string()
    }
}

/// A pool in the page's language: the words every page uses ("1 busy, 1 warming, 2 idle of
/// 4"), through the same catalog as the docker health check that writes them.
pub fn pool_text(locale: Locale, pool: &PoolState) -> String {
    let text = crate::model::messages::localize(locale, &pool.describe());
    match &pool.ahead {
        Some(ahead) => format!(
            "{text} · {}",
            crate::model::messages::localize(locale, &ahead.describe())
        ),
        None => text,
    }
}

/// The content of a `<textarea>`, to give as its `inner_html`. Leptos writes a textarea's
/// children to server HTML unescaped (tachys treats it like `<script>`), so text typed by a
/// user (`</textarea><script>…`) would end the element and run as markup in the console's
/// origin. Escaped, the parser reads it back as the same text in both places it is parsed:
/// the server's HTML and, after client-side navigation, `innerHTML` (both RCDATA). The HTML
/// parser drops a newline right after `<textarea>`, so the server doubles a leading one.
pub fn textarea_html(text: &str) -> String {
    let escaped = html_escape::encode_text(text);
    if cfg!(feature = "ssr") && text.starts_with('\n') {
        format!("\n{escaped}")
    } else {
        escaped.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{local_time, pool_line, pool_text, textarea_html};
    use crate::{i18n::Locale, model::provider::PoolState};

    #[test]
    fn timestamps_are_written_in_the_chosen_language_and_marked_utc() {
        let stamp = "2026-12-02T14:07:09.123Z";
        assert_eq!(local_time(Locale::en, stamp), "Dec 2, 2026, 14:07:09 UTC");
        assert_eq!(
            local_time(Locale::zh_CN, stamp),
            "2026年12月2日 14:07:09 UTC"
        );
        // SQLite's own format reads the same; anything else is shown as stored.
        assert_eq!(
            local_time(Locale::en, "2026-12-02 04:07:09"),
            "Dec 2, 2026, 04:07:09 UTC"
        );
        assert_eq!(local_time(Locale::en, "soon"), "soon");
    }

    #[test]
    fn the_pool_reads_the_same_in_every_place_and_language() {
        let pool = PoolState {
            size: 4,
            busy: 1,
            warming: 1,
            waiting: 0,
            ahead: None,
        };
        assert_eq!(pool_text(Locale::en, &pool), pool.describe());
        assert_eq!(
            pool_text(Locale::zh_CN, &pool),
            "共 4 个：1 个忙碌，1 个预热中，2 个空闲"
        );
        let calm = PoolState { warming: 0, ..pool };
        assert_eq!(pool_text(Locale::en, &calm), calm.describe());
        // One line per card: the live figure, or none at all while the provider is unhealthy
        // (a broken docker pool is not "4 idle").
        assert_eq!(
            pool_line(Locale::en, &calm, true),
            "Pool: 1 busy, 3 idle of 4"
        );
        assert_eq!(
            pool_line(Locale::en, &calm, false),
            "Pool: no sandbox is ready (the provider is unhealthy)."
        );
    }

    #[test]
    fn textarea_text_cannot_close_its_element() {
        let hostile = "</textarea><script>alert(1)</script> & &amp;";
        let html = textarea_html(hostile);
        assert!(!html.contains('<'), "{html}");
        assert_eq!(
            html,
            "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; &amp;amp;"
        );
    }
}
