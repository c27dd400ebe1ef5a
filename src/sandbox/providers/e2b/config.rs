//! The `e2b` provider's settings: schema, typed config, and the one validating `build()`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{E2bProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec},
    sandbox::{
        providers::{config_check::ConfigCheck, fields, http},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct E2bConfig {
    pub api_key: String,
    pub domain: String,
    pub template: String,
    pub sandbox_timeout_secs: u32,
    pub request_timeout_secs: u32,
    pub timeout_secs: u32,
    pub memory_mb: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
    pub api_url: String,
    pub sandbox_url: String,
}

impl Default for E2bConfig {
    fn default() -> Self {
        E2bConfig {
            api_key: String::new(),
            domain: "e2b.app".into(),
            template: "code-interpreter-v1".into(),
            sandbox_timeout_secs: 300,
            request_timeout_secs: 30,
            timeout_secs: 30,
            memory_mb: 256,
            max_output_bytes: MIB,
            max_artifacts: 10,
            max_artifact_bytes: 10 * MIB,
            api_url: String::new(),
            sandbox_url: String::new(),
        }
    }
}

/// Written by hand: the API key never reaches a log line.
impl std::fmt::Debug for E2bConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E2bConfig")
            .field("api_key_set", &!self.api_key.is_empty())
            .field("domain", &self.domain)
            .field("template", &self.template)
            .field("api_url", &self.api_url)
            .field("sandbox_url", &self.sandbox_url)
            .finish_non_exhaustive()
    }
}

pub fn schema() -> ConfigSchema {
    let d = E2bConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest artifact returned (files in ./artifacts/ and charts the code displays).",
    );
    ConfigSchema {
        fields: vec![
            FieldSpec::new("api_key", FieldKind::Secret, "API key")
                .describe("Your E2B API key, sent as X-API-Key.")
                .placeholder("e2b_…")
                .group(FieldGroup::Deployment)
                .env("E2B_API_KEY")
                .required(),
            FieldSpec::new("domain", FieldKind::String, "Domain")
                .describe("E2B's domain: the API is https://api.<domain>, sandboxes https://49999-<id>.<domain>.")
                .default_value(json!(d.domain))
                .group(FieldGroup::Deployment)
                .env("E2B_DOMAIN")
                .destination()
                .required(),
            FieldSpec::new("template", FieldKind::String, "Template")
                .describe("Sandbox template (id or alias); it must run E2B's code interpreter.")
                .default_value(json!(d.template))
                .group(FieldGroup::Deployment)
                .required(),
            FieldSpec::new("sandbox_timeout_secs", fields::integer(30, 86_400), "Sandbox timeout (seconds)")
                .describe(
                    "Lifetime E2B gives each sandbox (its `timeout`). Each run deletes its \
                     sandbox when it ends; this only bounds one that could not be deleted.",
                )
                .default_value(json!(d.sandbox_timeout_secs)),
            FieldSpec::new("request_timeout_secs", fields::integer(1, 300), "Request timeout (seconds)")
                .describe("How long one API call (create, delete, health) may take.")
                .default_value(json!(d.request_timeout_secs))
                // RAGFlow's e2b provider: "Request Timeout (seconds)".
                .alias("timeout"),
            fields::timeout_secs(d.timeout_secs, "the sandbox"),
            fields::memory_mb(
                d.memory_mb,
                "What one Python run may allocate inside the sandbox (its data segment); past it \
                 the run ends with memory_limit.",
            ),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size; the run then reports output_limit.",
            ),
            max_artifacts,
            max_artifact_bytes,
            FieldSpec::new("api_url", FieldKind::String, "API URL override")
                .describe("Only for a self-hosted or proxied E2B: the API's URL instead of https://api.<domain>.")
                .group(FieldGroup::Deployment)
                .destination(),
            FieldSpec::new("sandbox_url", FieldKind::String, "Sandbox URL override")
                .describe(
                    "Only for a self-hosted or proxied E2B: one URL for every sandbox, routed by \
                     the E2b-Sandbox-Id and E2b-Sandbox-Port headers.",
                )
                .group(FieldGroup::Deployment)
                .destination(),
        ],
    }
}

pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider(raw)?))
}

/// Validates stored or submitted values and builds the provider: the schema's type checks,
/// the domain and the override URLs, every bad field at once.
pub fn build_provider(raw: &Map<String, Value>) -> Result<E2bProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    for key in ["api_url", "sandbox_url"] {
        check.check_if_set(key, |url| {
            http::endpoint(url, "https://api.e2b.example").map(|_| ())
        });
    }
    check.check_if_set("domain", |domain| {
        if domain.contains("://") || domain.contains('/') || domain.contains(char::is_whitespace) {
            Err("Enter a domain name only, e.g. e2b.app.".into())
        } else {
            Ok(())
        }
    });
    E2bProvider::new(check.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let given = Map::from_iter([("api_key".to_owned(), json!("e2b_x"))]);

        let config: E2bConfig = testkit::schema_matches_config(&schema(), &given).unwrap();

        assert_eq!(config.api_key, "e2b_x");
        assert_eq!(config.template, "code-interpreter-v1");
    }

    #[test]
    fn build_wants_a_key_a_bare_domain_and_real_override_urls() {
        let raw = json!({ "domain": "https://e2b.app", "sandbox_url": "nope" });

        let Err(Error::ConfigInvalid { errors }) = build(raw.as_object().unwrap()) else {
            panic!("accepted")
        };

        assert_eq!(errors["api_key"], "This field is required.");
        assert!(errors["domain"].starts_with("Enter a domain name only"));
        assert!(errors["sandbox_url"].starts_with("Enter a URL"));
    }
}
