//! Sentences the server writes (field checks, health checks, connection tests, network
//! failures) in the admin's language. As in gettext, the catalog is keyed by the English text:
//! `locales/messages/<locale>.json` maps English templates (`Enter a number from {min} to
//! {max}.`) to their translation. A sentence that matches a template whole is written again
//! with the same values; one that matches none stays English. A value is translated too when
//! it is a sentence of its own, or a list of them joined by "; ".
//!
//! The providers and services keep writing plain English (they know nothing of languages);
//! the doors that answer a page call [`Localize::localize`] on what they send.

use std::{collections::HashMap, sync::OnceLock};

use crate::{
    i18n::Locale,
    model::{
        dashboard::Dashboard,
        provider::HealthReport,
        schema::FieldErrors,
        settings::{ConnectionReport, FlashOutcome, SandboxFlash, SandboxSettings, SaveOutcome},
    },
};

/// The Simplified Chinese catalog.
pub const ZH_CN: &str = include_str!("../../locales/messages/zh-CN.json");

/// How deep values are translated (a value's values, and no further).
const DEPTH: u8 = 2;

#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Value(String),
}

#[derive(Debug)]
struct Template {
    english: Vec<Piece>,
    translated: Vec<Piece>,
}

/// One language's templates, the most specific (most literal text) first.
#[derive(Debug, Default)]
pub struct Catalog {
    templates: Vec<Template>,
}

/// `Enter {min} or more.` → text, value, text.
fn pieces(template: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_owned()));
        }
        out.push(Piece::Value(rest[open + 1..open + close].to_owned()));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_owned()));
    }
    out
}

/// Whether `text` is `pieces` whole; the values found go to `found`, by name. A value is the
/// shortest non-empty text after which the rest matches.
fn matches<'p, 't>(
    pieces: &'p [Piece],
    text: &'t str,
    found: &mut Vec<(&'p str, &'t str)>,
) -> bool {
    match pieces.split_first() {
        None => text.is_empty(),
        Some((Piece::Text(literal), rest)) => text
            .strip_prefix(literal.as_str())
            .is_some_and(|after| matches(rest, after, found)),
        Some((Piece::Value(name), rest)) => {
            let ends: Vec<usize> = match rest.first() {
                Some(Piece::Text(next)) => text
                    .match_indices(next.as_str())
                    .map(|(at, _)| at)
                    .collect(),
                _ => vec![text.len()],
            };
            for end in ends.into_iter().filter(|&end| end > 0) {
                let mark = found.len();
                found.push((name.as_str(), &text[..end]));
                if matches(rest, &text[end..], found) {
                    return true;
                }
                found.truncate(mark);
            }
            false
        }
    }
}

impl Catalog {
    /// The catalog in `json` (English template → translation); an unreadable one is empty.
    pub fn parse(json: &str) -> Self {
        let table: HashMap<String, String> = serde_json::from_str(json).unwrap_or_default();
        let mut templates: Vec<Template> = table
            .iter()
            .map(|(english, translated)| Template {
                english: pieces(english),
                translated: pieces(translated),
            })
            .collect();
        let literal = |t: &Template| -> usize {
            t.english
                .iter()
                .map(|p| match p {
                    Piece::Text(text) => text.len(),
                    Piece::Value(_) => 0,
                })
                .sum()
        };
        templates.sort_by_key(|t| std::cmp::Reverse(literal(t)));
        Self { templates }
    }

    /// `text` in the catalog's language, or as it is when no template matches it.
    pub fn translate(&self, text: &str) -> String {
        self.translate_at(text, DEPTH)
    }

    fn translate_at(&self, text: &str, depth: u8) -> String {
        // A value that lists sentences: each on its own (before a template could take the
        // whole list as one of its values).
        if depth < DEPTH && text.contains("; ") {
            return text
                .split("; ")
                .map(|item| self.translate_at(item, depth))
                .collect::<Vec<_>>()
                .join("；");
        }
        for template in &self.templates {
            let mut found = Vec::new();
            if matches(&template.english, text, &mut found) {
                return template
                    .translated
                    .iter()
                    .map(|piece| match piece {
                        Piece::Text(text) => text.clone(),
                        Piece::Value(name) => {
                            let value =
                                found.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v);
                            if depth > 0 {
                                self.translate_at(value, depth - 1)
                            } else {
                                value.to_owned()
                            }
                        }
                    })
                    .collect();
            }
        }
        text.to_owned()
    }

    /// Templates whose translation names a value the English does not give, or drops one it
    /// gives (for the tests).
    pub fn mismatched(&self) -> Vec<String> {
        let names = |pieces: &[Piece]| -> Vec<String> {
            let mut names: Vec<String> = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Value(name) => Some(name.clone()),
                    Piece::Text(_) => None,
                })
                .collect();
            names.sort();
            names
        };
        self.templates
            .iter()
            .filter(|t| names(&t.english) != names(&t.translated))
            .map(|t| format!("{:?}", t.english))
            .collect()
    }
}

fn zh_cn() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::parse(ZH_CN))
}

/// `text` in `locale`.
pub fn localize(locale: Locale, text: &str) -> String {
    match locale {
        Locale::zh_CN => zh_cn().translate(text),
        Locale::en => text.to_owned(),
    }
}

/// What carries server sentences to a page, put in the page's language.
pub trait Localize {
    fn localize(&mut self, locale: Locale);
}

impl Localize for String {
    fn localize(&mut self, locale: Locale) {
        *self = localize(locale, self);
    }
}

impl Localize for HealthReport {
    fn localize(&mut self, locale: Locale) {
        self.message.localize(locale);
    }
}

impl Localize for FieldErrors {
    fn localize(&mut self, locale: Locale) {
        self.values_mut().for_each(|m| m.localize(locale));
    }
}

impl Localize for SaveOutcome {
    fn localize(&mut self, locale: Locale) {
        match self {
            SaveOutcome::Unhealthy { health, .. } => health.localize(locale),
            SaveOutcome::Invalid { errors } => errors.localize(locale),
            SaveOutcome::Conflict { message } => message.localize(locale),
            SaveOutcome::Saved { .. } | SaveOutcome::Kept { .. } => {}
        }
    }
}

impl Localize for ConnectionReport {
    fn localize(&mut self, locale: Locale) {
        // `detail` is the raw failure chain: it stays as the system wrote it.
        self.message.localize(locale);
        if let Some(health) = &mut self.health {
            health.localize(locale);
        }
        self.errors.localize(locale);
    }
}

impl Localize for SandboxSettings {
    fn localize(&mut self, locale: Locale) {
        self.active_health.localize(locale);
    }
}

impl Localize for SandboxFlash {
    fn localize(&mut self, locale: Locale) {
        match &mut self.outcome {
            FlashOutcome::Save(outcome) | FlashOutcome::Restore { outcome, .. } => {
                outcome.localize(locale)
            }
            FlashOutcome::Test(report) => report.localize(locale),
            FlashOutcome::Trial { .. } => {}
        }
    }
}

impl Localize for Dashboard {
    fn localize(&mut self, locale: Locale) {
        self.health.localize(locale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_are_translated_with_their_values_and_others_stay_english() {
        let zh = Catalog::parse(ZH_CN);
        assert_eq!(
            zh.translate("Enter a number from 1 to 600."),
            "请输入 1 到 600 之间的数。"
        );
        assert_eq!(zh.translate("This field is required."), "此项必填。");
        assert_eq!(
            zh.translate("Nothing is listening on 127.0.0.1:9 — is the service there running, and is the port right?"),
            "127.0.0.1:9 上没有服务在监听：那里的服务在运行吗？端口对吗？"
        );
        assert_eq!(
            zh.translate("dockerd 27.5.1 answered; runtime runc and the images are there."),
            "dockerd 27.5.1 已响应；运行时 runc 和镜像都已就绪。"
        );
        // No template: as it is.
        assert_eq!(
            zh.translate("the probe crashed: boom"),
            "the probe crashed: boom"
        );
        assert_eq!(
            localize(Locale::en, "This field is required."),
            "This field is required."
        );
    }

    #[test]
    fn every_translation_keeps_the_values_of_its_english() {
        assert_eq!(Catalog::parse(ZH_CN).mismatched(), Vec::<String>::new());
        // The check sees a dropped value.
        let bad = Catalog::parse(r#"{"Enter {min} or more.": "请输入数字。"}"#);
        assert_eq!(bad.mismatched().len(), 1);
    }

    #[test]
    fn the_schemas_own_messages_are_all_in_the_catalog() {
        use crate::model::schema::{ConfigSchema, FieldKind, FieldSpec, SelectOption};
        use serde_json::json;
        let schema = ConfigSchema {
            fields: vec![
                FieldSpec::new("endpoint", FieldKind::String, "Endpoint").required(),
                FieldSpec::new(
                    "n",
                    FieldKind::Integer {
                        min: Some(1),
                        max: Some(9),
                    },
                    "N",
                ),
                FieldSpec::new(
                    "low",
                    FieldKind::Integer {
                        min: Some(1),
                        max: None,
                    },
                    "Low",
                ),
                FieldSpec::new(
                    "high",
                    FieldKind::Integer {
                        min: None,
                        max: Some(9),
                    },
                    "High",
                ),
                FieldSpec::new(
                    "whole",
                    FieldKind::Integer {
                        min: None,
                        max: None,
                    },
                    "Whole",
                ),
                FieldSpec::new("yes", FieldKind::Boolean, "Yes"),
                FieldSpec::new(
                    "pick",
                    FieldKind::Select {
                        options: vec![SelectOption {
                            value: "a".into(),
                            label: "A".into(),
                        }],
                    },
                    "Pick",
                ),
                FieldSpec::new("doc", FieldKind::Json, "Doc"),
                FieldSpec::new("text", FieldKind::Multiline, "Text"),
            ],
        };
        let raw = json!({
            "n": 99, "low": 0, "high": 10, "whole": "x", "yes": "maybe", "pick": "b",
            "doc": "{", "text": [1], "zzz": 1
        });
        let errors = schema.normalize(raw.as_object().unwrap()).unwrap_err();
        assert!(errors.len() >= 9, "{errors:?}");
        let zh = Catalog::parse(ZH_CN);
        for (key, message) in errors {
            assert_ne!(
                zh.translate(&message),
                message,
                "{key}: {message:?} has no translation"
            );
        }
    }
}
