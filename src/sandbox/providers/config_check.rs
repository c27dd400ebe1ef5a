//! The one sequence every provider's `build` follows: the schema's type checks, the
//! provider's own rules on each field the schema let through (every bad field reported at
//! once, so the form can mark them all), then the typed config.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    model::schema::{ConfigSchema, FieldErrors},
    sandbox::Error,
};

pub struct ConfigCheck<'a> {
    kind: &'static str,
    raw: &'a Map<String, Value>,
    /// The schema's normalized values (empty when it refused a field).
    values: Map<String, Value>,
    defaults: Map<String, Value>,
    errors: FieldErrors,
}

impl<'a> ConfigCheck<'a> {
    /// Runs `schema`'s type checks on `raw` (stored or submitted values of provider `kind`).
    pub fn new(kind: &'static str, schema: &ConfigSchema, raw: &'a Map<String, Value>) -> Self {
        let (values, errors) = match schema.normalize(raw) {
            Ok(values) => (values, FieldErrors::new()),
            Err(errors) => (Map::new(), errors),
        };
        ConfigCheck {
            kind,
            raw,
            values,
            defaults: schema.normalize(&Map::new()).unwrap_or_default(),
            errors,
        }
    }

    /// The field as submitted, trimmed (blank when absent or not text).
    pub fn submitted(&self, key: &str) -> &'a str {
        self.raw
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
    }

    /// The field's text, trimmed: as the schema normalized it, else as submitted (when
    /// another field failed the schema), else its default.
    pub fn text(&self, key: &str) -> String {
        self.values
            .get(key)
            .or_else(|| self.raw.get(key))
            .or_else(|| self.defaults.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// The field's whole number, as [`ConfigCheck::text`] finds the field (a number, or text
    /// that parses as one).
    pub fn integer(&self, key: &str) -> Option<i64> {
        let value = self
            .values
            .get(key)
            .or_else(|| self.raw.get(key))
            .or_else(|| self.defaults.get(key))?;
        value
            .as_i64()
            .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
    }

    /// Applies `rule` to the field unless the schema already refused it; a rule's message
    /// becomes the field's error.
    pub fn check(&mut self, key: &str, rule: impl FnOnce(&Self) -> Result<(), String>) {
        if self.errors.contains_key(key) {
            return;
        }
        if let Err(message) = rule(self) {
            self.errors.insert(key.to_owned(), message);
        }
    }

    /// [`ConfigCheck::check`] on the submitted text, only when the field is filled in.
    pub fn check_if_set(&mut self, key: &str, rule: impl FnOnce(&str) -> Result<(), String>) {
        let given = self.submitted(key);
        if !given.is_empty() {
            self.check(key, |_| rule(given));
        }
    }

    /// The typed config, or every field error found.
    pub fn finish<T: DeserializeOwned>(self) -> Result<T, Error> {
        if !self.errors.is_empty() {
            return Err(Error::ConfigInvalid {
                errors: self.errors,
            });
        }
        // The schema and the struct are kept in step by each provider's unit test; a
        // mismatch is a bug of this build, reported with its cause.
        let kind = self.kind;
        serde_json::from_value(Value::Object(self.values))
            .map_err(|source| Error::provider(kind, Mismatch { kind, source }))
    }
}

/// The schema let through values its config struct does not take.
#[derive(Debug, thiserror::Error)]
#[error("{kind} config: {source}")]
struct Mismatch {
    kind: &'static str,
    source: serde_json::Error,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::schema::{FieldKind, FieldSpec};

    fn schema() -> ConfigSchema {
        ConfigSchema {
            fields: vec![
                FieldSpec::new("host", FieldKind::String, "Host").default_value(json!("here")),
                FieldSpec::new(
                    "port",
                    FieldKind::Integer {
                        min: Some(1),
                        max: Some(9),
                    },
                    "Port",
                ),
            ],
        }
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Config {
        host: String,
        port: Option<i64>,
    }

    #[test]
    fn every_bad_field_is_reported_and_rules_skip_fields_the_schema_refused() {
        let raw = json!({"host": " there ", "port": 99});
        let raw = raw.as_object().unwrap();
        let mut check = ConfigCheck::new("test", &schema(), raw);

        assert_eq!(
            check.text("host"),
            "there",
            "submitted, since the port failed"
        );
        check.check("host", |c| Err(format!("no {}", c.text("host"))));
        check.check("port", |_| panic!("the schema refused it already"));

        let Err(Error::ConfigInvalid { errors }) = check.finish::<Config>() else {
            panic!("two bad fields")
        };
        assert_eq!(errors.len(), 2);
        assert_eq!(errors["host"], "no there");
    }

    #[test]
    fn good_values_become_the_typed_config_with_defaults() {
        let raw = Map::new();
        let mut check = ConfigCheck::new("test", &schema(), &raw);
        check.check_if_set("host", |_| panic!("blank: not checked"));

        assert_eq!(check.text("host"), "here");
        assert_eq!(
            check.finish::<Config>().unwrap(),
            Config {
                host: "here".into(),
                port: None
            }
        );
    }
}
