//! Provider configuration schemas: ordered field descriptions the settings page renders a form
//! from, and the type checks every provider's `build()` starts with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Per-field error messages, keyed by field key.
pub type FieldErrors = BTreeMap<String, String>;

/// Field-error key for problems that belong to no single field.
pub const FORM_ERROR: &str = "_form";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectOption {
    pub value: String,
    pub label: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    String,
    /// Encrypted at rest and never sent to the browser.
    Secret,
    /// A secret written on several lines (a PEM private key): kept as a [`FieldKind::Secret`] is.
    SecretText,
    Integer {
        min: Option<i64>,
        max: Option<i64>,
    },
    Boolean,
    Select {
        options: Vec<SelectOption>,
    },
    Multiline,
    Json,
}

impl FieldKind {
    /// A secret: encrypted at rest, never sent to the browser, kept when left blank.
    pub fn is_secret(&self) -> bool {
        matches!(self, FieldKind::Secret | FieldKind::SecretText)
    }
}

/// Which section of the form a field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldGroup {
    /// How code runs: timeouts, limits, images.
    Runtime,
    /// Where the provider is: endpoints, credentials.
    Deployment,
    /// What sandboxes may reach: the allow-list and its names.
    Network,
}

impl FieldGroup {
    pub fn label(self) -> &'static str {
        match self {
            FieldGroup::Runtime => "Runtime settings",
            FieldGroup::Deployment => "Deployment",
            FieldGroup::Network => "Network",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldSpec {
    pub key: String,
    pub kind: FieldKind,
    pub label: String,
    pub description: String,
    pub placeholder: Option<String>,
    pub default: Option<Value>,
    pub required: bool,
    pub readonly: bool,
    pub group: FieldGroup,
    /// An environment variable `configure --from-env` reads this field from (besides the
    /// generic `SANDBOX_<KIND>_<KEY>`), e.g. `AGENTRUN_ACCESS_KEY_ID`.
    #[serde(default)]
    pub env: Option<String>,
    /// Other names this setting is accepted under: RAGFlow's key for the same setting (its
    /// `local` provider's `timeout` is our `timeout_secs`), so a RAGFlow-made config applies
    /// as meant.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// This field decides where the provider's secrets are sent (an endpoint, a region, a
    /// host). A stored secret is reused only while every such field keeps its stored value.
    #[serde(default)]
    pub destination: bool,
    /// One of alternatives the form offers as tabs (the ssh provider's sign-in: `password`
    /// or `private_key`): fields with a choice that follow each other form one set, and only
    /// the chosen tab's fields show. Every field is still posted.
    #[serde(default)]
    pub choice: Option<String>,
}

impl FieldSpec {
    /// A field with the given key, kind and label; the rest filled in with the builder methods.
    pub fn new(key: &str, kind: FieldKind, label: &str) -> Self {
        FieldSpec {
            key: key.into(),
            kind,
            label: label.into(),
            description: String::new(),
            placeholder: None,
            default: None,
            required: false,
            readonly: false,
            group: FieldGroup::Runtime,
            env: None,
            aliases: Vec::new(),
            destination: false,
            choice: None,
        }
    }

    pub fn alias(mut self, name: &str) -> Self {
        self.aliases.push(name.into());
        self
    }

    /// Puts the field under the tab `option` of a set of alternatives (see `choice`).
    pub fn choice(mut self, option: &str) -> Self {
        self.choice = Some(option.into());
        self
    }

    /// Marks the field as one that decides where secrets go (see `destination`).
    pub fn destination(mut self) -> Self {
        self.destination = true;
        self
    }

    /// The field's value as `normalize` would store it: checked, trimmed, or its default
    /// when blank; `None` when it is invalid or has no value.
    pub fn normalized(&self, raw: Option<&Value>) -> Option<Value> {
        match raw.filter(|v| !self.readonly && !is_blank(v)) {
            Some(value) => check(self, value).ok(),
            None => self.default.clone(),
        }
    }

    pub fn env(mut self, variable: &str) -> Self {
        self.env = Some(variable.into());
        self
    }

    /// The environment variables `configure --from-env` reads this field from: the
    /// provider's own (`AGENTRUN_…`), then `SANDBOX_<KIND>_<KEY>`, then the same for each alias.
    pub fn env_names(&self, provider_kind: &str) -> Vec<String> {
        let prefix = env_prefix(provider_kind);
        self.env
            .iter()
            .cloned()
            .chain(
                std::iter::once(&self.key)
                    .chain(&self.aliases)
                    .map(|name| format!("{prefix}{}", env_word(name))),
            )
            .collect()
    }

    pub fn describe(mut self, text: &str) -> Self {
        self.description = text.into();
        self
    }

    pub fn placeholder(mut self, text: &str) -> Self {
        self.placeholder = Some(text.into());
        self
    }

    pub fn default_value(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }

    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    pub fn readonly(mut self) -> Self {
        self.readonly = true;
        self
    }

    pub fn group(mut self, group: FieldGroup) -> Self {
        self.group = group;
        self
    }
}

/// `SANDBOX_<KIND>_`: the prefix of the variables `configure --from-env` reads for a kind.
pub fn env_prefix(provider_kind: &str) -> String {
    format!("SANDBOX_{}_", env_word(provider_kind))
}

fn env_word(text: &str) -> String {
    text.to_ascii_uppercase().replace(['-', '.'], "_")
}

/// A provider's form, in display order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigSchema {
    pub fields: Vec<FieldSpec>,
}

impl ConfigSchema {
    pub fn field(&self, key: &str) -> Option<&FieldSpec> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The field a submitted key names: its own key or one of its aliases.
    pub fn field_named(&self, name: &str) -> Option<&FieldSpec> {
        self.field(name).or_else(|| {
            self.fields
                .iter()
                .find(|f| f.aliases.iter().any(|a| a == name))
        })
    }

    /// Submitted values under the schema's own keys: aliases renamed, and any key the schema
    /// does not know refused (under `FORM_ERROR`, naming the unknown keys and the known ones),
    /// as is a setting given twice (under its key and an alias). What every door (form, API,
    /// CLI) passes submissions through, so no setting is ever silently dropped.
    pub fn canonical(&self, raw: Map<String, Value>) -> Result<Map<String, Value>, FieldErrors> {
        let mut values = Map::new();
        let mut unknown = Vec::new();
        let mut twice = Vec::new();
        for (name, value) in raw {
            match self.field_named(&name) {
                Some(field) => {
                    if values.contains_key(&field.key) {
                        twice.push(field.key.clone());
                    }
                    values.insert(field.key.clone(), value);
                }
                None => unknown.push(name),
            }
        }
        let mut problems = Vec::new();
        if !unknown.is_empty() {
            unknown.sort();
            problems.push(format!(
                "Unknown settings: {}. The settings here are: {}.",
                unknown.join(", "),
                self.describe_keys()
            ));
        }
        if !twice.is_empty() {
            problems.push(format!(
                "Given twice, under its name and under another name for it: {}. Send each once.",
                twice.join(", ")
            ));
        }
        if problems.is_empty() {
            Ok(values)
        } else {
            Err(FieldErrors::from([(
                FORM_ERROR.to_owned(),
                problems.join(" "),
            )]))
        }
    }

    /// `key (also alias), ...` for messages.
    pub fn describe_keys(&self) -> String {
        self.fields
            .iter()
            .map(|f| {
                if f.aliases.is_empty() {
                    f.key.clone()
                } else {
                    format!("{} (also {})", f.key, f.aliases.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The fields that decide where secrets are sent.
    pub fn destinations(&self) -> impl Iterator<Item = &FieldSpec> {
        self.fields.iter().filter(|f| f.destination)
    }

    /// Type-checks raw values (JSON from storage or strings from a form) against the schema.
    /// Returns the values as typed JSON, with defaults for what is missing, or one message per
    /// bad field. Keys the schema does not know are dropped: nothing carries over from
    /// another provider. Read-only fields always take their default.
    pub fn normalize(&self, raw: &Map<String, Value>) -> Result<Map<String, Value>, FieldErrors> {
        let mut values = Map::new();
        let mut errors = FieldErrors::new();
        for field in &self.fields {
            let given = if field.readonly {
                None
            } else {
                raw.get(&field.key).filter(|v| !is_blank(v))
            };
            let checked = match given {
                Some(value) => check(field, value),
                None => match &field.default {
                    Some(default) => Ok(default.clone()),
                    None if matches!(field.kind, FieldKind::Boolean) => Ok(Value::Bool(false)),
                    None if field.required => Err("This field is required.".to_owned()),
                    None => continue,
                },
            };
            match checked {
                Ok(value) => {
                    values.insert(field.key.clone(), value);
                }
                Err(message) => {
                    errors.insert(field.key.clone(), message);
                }
            }
        }
        if errors.is_empty() {
            Ok(values)
        } else {
            Err(errors)
        }
    }
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

fn check(field: &FieldSpec, value: &Value) -> Result<Value, String> {
    match &field.kind {
        FieldKind::String => text(value).map(|s| Value::String(s.trim().to_owned())),
        FieldKind::Secret | FieldKind::SecretText | FieldKind::Multiline => {
            text(value).map(Value::String)
        }
        FieldKind::Integer { min, max } => {
            let number = match value {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            }
            .ok_or("Enter a whole number.")?;
            match (min, max) {
                (Some(min), Some(max)) if number < *min || number > *max => {
                    Err(format!("Enter a number from {min} to {max}."))
                }
                (Some(min), None) if number < *min => {
                    Err(format!("Enter a number of at least {min}."))
                }
                (None, Some(max)) if number > *max => {
                    Err(format!("Enter a number of at most {max}."))
                }
                _ => Ok(Value::from(number)),
            }
        }
        FieldKind::Boolean => match value {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "on" | "1" | "yes" => Ok(Value::Bool(true)),
                "false" | "off" | "0" | "no" => Ok(Value::Bool(false)),
                _ => Err("Choose yes or no.".into()),
            },
            _ => Err("Choose yes or no.".into()),
        },
        FieldKind::Select { options } => {
            let chosen = text(value)?;
            if options.iter().any(|o| o.value == chosen) {
                Ok(Value::String(chosen))
            } else {
                let allowed: Vec<_> = options.iter().map(|o| o.value.as_str()).collect();
                Err(format!("Choose one of: {}.", allowed.join(", ")))
            }
        }
        FieldKind::Json => match value {
            Value::String(s) => {
                serde_json::from_str(s).map_err(|e| format!("This is not valid JSON: {e}."))
            }
            other => Ok(other.clone()),
        },
    }
}

fn text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err("Enter text.".into()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> ConfigSchema {
        ConfigSchema {
            fields: vec![
                FieldSpec::new("endpoint", FieldKind::String, "Endpoint")
                    .required()
                    .group(FieldGroup::Deployment),
                FieldSpec::new("token", FieldKind::Secret, "Token"),
                FieldSpec::new(
                    "timeout",
                    FieldKind::Integer {
                        min: Some(1),
                        max: Some(600),
                    },
                    "Timeout",
                )
                .default_value(json!(30)),
                FieldSpec::new("strict", FieldKind::Boolean, "Strict"),
                FieldSpec::new(
                    "region",
                    FieldKind::Select {
                        options: ["cn-hangzhou", "ap-southeast-1"]
                            .map(|v| SelectOption {
                                value: v.into(),
                                label: v.into(),
                            })
                            .to_vec(),
                    },
                    "Region",
                )
                .default_value(json!("cn-hangzhou")),
                FieldSpec::new("extra", FieldKind::Json, "Extra"),
                FieldSpec::new("version", FieldKind::String, "Version")
                    .readonly()
                    .default_value(json!("v1")),
            ],
        }
    }

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn form_strings_become_typed_values_with_defaults_and_unknown_keys_dropped() {
        let raw = map(
            json!({ "endpoint": " http://x:9385 ", "timeout": "45", "strict": "on", "extra": "{\"a\": [1, null]}", "version": "hacked", "old_provider_key": "x" }),
        );

        let values = schema().normalize(&raw).unwrap();

        assert_eq!(
            Value::Object(values),
            json!({ "endpoint": "http://x:9385", "timeout": 45, "strict": true, "region": "cn-hangzhou", "extra": { "a": [1, null] }, "version": "v1" })
        );
    }

    #[test]
    fn blank_required_fields_bad_numbers_options_and_json_each_get_a_message() {
        let raw = map(
            json!({ "endpoint": "   ", "timeout": "0", "region": "mars-1", "extra": "{oops", "strict": "maybe" }),
        );

        let errors = schema().normalize(&raw).unwrap_err();

        assert_eq!(errors["endpoint"], "This field is required.");
        assert_eq!(errors["timeout"], "Enter a number from 1 to 600.");
        assert!(errors["region"].starts_with("Choose one of: cn-hangzhou, ap-southeast-1"));
        assert!(errors["extra"].starts_with("This is not valid JSON"));
        assert_eq!(errors["strict"], "Choose yes or no.");
        assert_eq!(errors.len(), 5);
    }

    #[test]
    fn an_integer_field_rejects_text_and_blank_keeps_the_default() {
        let bad = schema()
            .normalize(&map(json!({ "endpoint": "e", "timeout": "ten" })))
            .unwrap_err();
        let blank = schema()
            .normalize(&map(json!({ "endpoint": "e", "timeout": "" })))
            .unwrap();

        assert_eq!(bad["timeout"], "Enter a whole number.");
        assert_eq!(
            blank["timeout"],
            json!(30),
            "a blank number is not silently 0"
        );
    }

    #[test]
    fn aliases_become_keys_and_unknown_keys_are_refused_by_name() {
        let schema = ConfigSchema {
            fields: vec![
                FieldSpec::new("timeout_secs", FieldKind::String, "Timeout").alias("timeout"),
                FieldSpec::new("endpoint", FieldKind::String, "Endpoint"),
            ],
        };

        let renamed = schema
            .canonical(map(json!({ "timeout": 5, "endpoint": "e" })))
            .unwrap();
        let unknown = schema
            .canonical(map(json!({ "timeout": 5, "work_dir": "/tmp", "zzz": 1 })))
            .unwrap_err();
        let twice = schema
            .canonical(map(json!({ "timeout": 5, "timeout_secs": 6 })))
            .unwrap_err();

        assert_eq!(
            Value::Object(renamed),
            json!({ "timeout_secs": 5, "endpoint": "e" })
        );
        assert_eq!(
            unknown[FORM_ERROR],
            "Unknown settings: work_dir, zzz. The settings here are: timeout_secs (also timeout), endpoint."
        );
        assert!(twice[FORM_ERROR].contains("Given twice"), "{twice:?}");
    }

    #[test]
    fn schemas_travel_as_json_for_the_browser() {
        let schema = schema();
        let text = serde_json::to_string(&schema).unwrap();
        assert!(
            text.contains(r#""type":"integer","min":1,"max":600"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<ConfigSchema>(&text).unwrap(), schema);
    }
}
