//! Secret fields of provider configs: sealed before they are stored, opened to build a
//! provider, left out of whatever goes back to a browser, and kept when a form leaves them
//! blank — unless a field that decides where they go changed.

use serde_json::{Map, Value};

use super::SandboxService;
use crate::{
    model::schema::FieldErrors,
    server::{
        db::system_setting::SettingError,
        secrets::{SecretBox, SecretError},
    },
};

/// A stored secret field that cannot be opened (the secret key changed, or the value is
/// damaged).
#[derive(Debug, thiserror::Error)]
#[error("{key}: {source}")]
pub(super) struct Unopenable {
    key: String,
    source: SecretError,
}

/// Why submitted values could not be completed with the stored secrets.
#[derive(Debug)]
pub(super) enum NotMerged {
    /// Fields the admin must fix: unknown keys, or a secret to type again.
    Invalid(FieldErrors),
    /// The stored settings could not be read.
    Store(SettingError),
}

impl From<SettingError> for NotMerged {
    fn from(error: SettingError) -> Self {
        NotMerged::Store(error)
    }
}

impl SandboxService {
    /// The keys of `kind`'s secret fields (none for an unknown kind).
    pub(super) fn secret_keys(&self, kind: &str) -> Vec<String> {
        self.schema_of(kind).map_or_else(Vec::new, |schema| {
            schema
                .fields
                .into_iter()
                .filter(|f| f.kind.is_secret())
                .map(|f| f.key)
                .collect()
        })
    }

    /// Stored secret fields decrypted, for building a provider.
    pub(super) fn open_secrets(
        &self,
        kind: &str,
        mut values: Map<String, Value>,
    ) -> Result<Map<String, Value>, Unopenable> {
        for key in self.secret_keys(kind) {
            if let Some(Value::String(sealed)) = values.get(&key) {
                if SecretBox::is_sealed(sealed) {
                    let plain = match self.secrets.open(sealed) {
                        Ok(plain) => plain,
                        Err(source) => return Err(Unopenable { key, source }),
                    };
                    values.insert(key, Value::String(plain));
                }
            }
        }
        Ok(values)
    }

    /// Secret fields encrypted, for storing.
    pub(super) fn seal_secrets(
        &self,
        kind: &str,
        mut values: Map<String, Value>,
    ) -> Map<String, Value> {
        for key in self.secret_keys(kind) {
            if let Some(Value::String(plain)) = values.get(&key) {
                if !plain.is_empty() && !SecretBox::is_sealed(plain) {
                    let sealed = self.secrets.seal(plain);
                    values.insert(key, Value::String(sealed));
                }
            }
        }
        values
    }

    /// `values` without the provider's secret fields: what may travel back to a browser.
    /// Also returns the keys of the secrets that were set (not blank). An unknown kind
    /// gives nothing back at all.
    pub(super) fn strip_secrets(
        &self,
        kind: &str,
        mut values: Map<String, Value>,
    ) -> (Map<String, Value>, Vec<String>) {
        if self.registry.get(kind).is_err() {
            return (Map::new(), Vec::new());
        }
        let mut set = Vec::new();
        for key in self.secret_keys(kind) {
            if values
                .remove(&key)
                .is_some_and(|v| !v.as_str().unwrap_or_default().is_empty())
            {
                set.push(key);
            }
        }
        (values, set)
    }

    /// `values` without the provider's secret fields: what may travel back to a browser.
    pub fn without_secrets(&self, kind: &str, values: Map<String, Value>) -> Map<String, Value> {
        self.strip_secrets(kind, values).0
    }

    /// Submitted values under the schema's keys (aliases renamed), with blank secret fields
    /// filled from the stored secrets — but only while every field that decides where the
    /// secrets go keeps its stored value. Otherwise each blank secret that has a stored value
    /// is an error on its own field: it must be typed again, so a stored secret is never sent
    /// to a destination it was not saved for. Unknown keys are refused, by name.
    pub(super) async fn with_stored_secrets(
        &self,
        kind: &str,
        values: Map<String, Value>,
    ) -> Result<Map<String, Value>, NotMerged> {
        let Some(schema) = self.schema_of(kind) else {
            return Ok(values);
        };
        let mut values = schema.canonical(values).map_err(NotMerged::Invalid)?;
        let stored = self.stored_values(&self.pool, kind).await?;
        let moved: Vec<&str> = schema
            .destinations()
            .filter(|field| {
                field.normalized(values.get(&field.key)) != field.normalized(stored.get(&field.key))
            })
            .map(|field| field.label.as_str())
            .collect();
        let blank_in = |values: &Map<String, Value>, key: &str| {
            values
                .get(key)
                .is_none_or(|v| v.as_str().is_some_and(|s| s.is_empty()))
        };
        // The alternatives typed in (the ssh sign-in's password or key): a stored secret of
        // another alternative is not needed, so a moved destination drops it, as the form's
        // tabs mean, instead of asking for it again.
        let typed: Vec<&str> = schema
            .fields
            .iter()
            .filter(|f| f.kind.is_secret() && !blank_in(&values, &f.key))
            .filter_map(|f| f.choice.as_deref())
            .collect();
        let mut errors = FieldErrors::new();
        for field in schema.fields.iter().filter(|f| f.kind.is_secret()) {
            let blank = blank_in(&values, &field.key);
            let other_chosen = field
                .choice
                .as_deref()
                .is_some_and(|mine| typed.iter().any(|t| *t != mine));
            if blank && other_chosen && !moved.is_empty() {
                continue;
            }
            let kept = stored
                .get(&field.key)
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()));
            if let (true, Some(secret)) = (blank, kept) {
                if moved.is_empty() {
                    values.insert(field.key.clone(), secret.clone());
                } else {
                    errors.insert(
                        field.key.clone(),
                        format!(
                            "{} changed, and the saved {} is only sent where it was saved for: type it again.",
                            moved.join(" and "),
                            field.label
                        ),
                    );
                }
            }
        }
        if errors.is_empty() {
            Ok(values)
        } else {
            Err(NotMerged::Invalid(errors))
        }
    }
}

impl SandboxService {
    /// Whether this console's secret key opens every provider secret stored (a replica
    /// started with another key cannot run those providers, and must not report ready).
    /// `Err` says which setting it cannot open.
    pub async fn stored_secrets_open(&self) -> Result<(), String> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "select name, value from system_setting where name like 'sandbox.%' and value like $1",
        )
        .bind("%enc:v1:%")
        .fetch_all(&self.pool)
        .await
        .map_err(|e| format!("the stored settings cannot be read: {e}"))?;
        for (name, value) in rows {
            let value: Value = serde_json::from_str(&value).unwrap_or_default();
            for (key, field) in value.as_object().into_iter().flatten() {
                let Some(sealed) = field.as_str().filter(|s| SecretBox::is_sealed(s)) else {
                    continue;
                };
                if self.secrets.open(sealed).is_err() {
                    return Err(format!(
                        "this console's secret key does not open the stored secret {name}.{key}: \
                         start every replica with the same SANDBOX_CONSOLE_SECRET_KEY"
                    ));
                }
            }
        }
        Ok(())
    }
}
