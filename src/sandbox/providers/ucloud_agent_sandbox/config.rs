//! The `ucloud_agent_sandbox` provider's settings: RAGFlow's fields (its keys accepted as
//! aliases), the typed config, and the one validating `build()`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{UcloudProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec, SelectOption},
    sandbox::{
        providers::{config_check::ConfigCheck, fields, http},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;
/// The regions RAGFlow documents: `<region>.sandbox.ucloudai.com`.
pub const REGIONS: [&str; 2] = ["cn-wlcb", "us-ca"];

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UcloudConfig {
    pub api_key: String,
    pub region: String,
    pub domain: String,
    pub api_url: String,
    pub sandbox_url: String,
    pub template: String,
    pub allow_internet_access: bool,
    pub insecure_http: bool,
    pub timeout_secs: u32,
    pub sandbox_timeout_secs: u32,
    pub request_timeout_secs: u32,
    pub memory_mb: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
}

impl Default for UcloudConfig {
    fn default() -> Self {
        UcloudConfig {
            api_key: String::new(),
            region: REGIONS[0].into(),
            domain: String::new(),
            api_url: String::new(),
            sandbox_url: String::new(),
            template: "base".into(),
            allow_internet_access: false,
            insecure_http: false,
            timeout_secs: 30,
            sandbox_timeout_secs: 300,
            request_timeout_secs: 30,
            memory_mb: 256,
            max_output_bytes: MIB,
            max_artifacts: 20,
            max_artifact_bytes: 10 * MIB,
        }
    }
}

impl UcloudConfig {
    /// `<region>.sandbox.ucloudai.com`, unless overridden.
    pub fn domain(&self) -> String {
        match self.domain.trim() {
            "" => format!("{}.sandbox.ucloudai.com", self.region.trim()),
            domain => domain.to_owned(),
        }
    }

    pub fn scheme(&self) -> &'static str {
        if self.insecure_http {
            "http"
        } else {
            "https"
        }
    }
}

/// Written by hand: the API key never reaches a log line.
impl std::fmt::Debug for UcloudConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UcloudConfig")
            .field("api_key_set", &!self.api_key.is_empty())
            .field("region", &self.region)
            .field("domain", &self.domain)
            .field("api_url", &self.api_url)
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

pub fn schema() -> ConfigSchema {
    let d = UcloudConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest file from ./artifacts/ returned with a result.",
    );
    let deployment = |spec: FieldSpec| spec.group(FieldGroup::Deployment);
    ConfigSchema {
        fields: vec![
            deployment(FieldSpec::new("api_key", FieldKind::Secret, "API key"))
                .describe("Your UCloud Agent Sandbox API key (from ModelVerse API Keys), sent as X-API-Key.")
                .env("UCLOUD_SANDBOX_API_KEY")
                .required(),
            deployment(FieldSpec::new(
                "region",
                FieldKind::Select {
                    options: REGIONS
                        .iter()
                        .map(|r| SelectOption {
                            value: (*r).into(),
                            label: (*r).into(),
                        })
                        .collect(),
                },
                "Region",
            ))
            .describe("Where sandboxes run: the API is api.<region>.sandbox.ucloudai.com.")
            .default_value(json!(d.region))
            .env("UCLOUD_SANDBOX_REGION")
            .destination(),
            deployment(FieldSpec::new("domain", FieldKind::String, "Domain override"))
                .describe("Only for a private deployment: the sandbox domain instead of <region>.sandbox.ucloudai.com.")
                .destination(),
            deployment(FieldSpec::new("api_url", FieldKind::String, "API URL override"))
                .describe("Only for a private deployment: the control-plane URL instead of https://api.<domain>.")
                .destination(),
            deployment(FieldSpec::new("sandbox_url", FieldKind::String, "Sandbox URL override"))
                .describe(
                    "Only for a proxied deployment: one URL for every sandbox, routed by the \
                     E2b-Sandbox-Id and E2b-Sandbox-Port headers.",
                )
                .destination(),
            deployment(FieldSpec::new("insecure_http", FieldKind::Boolean, "Plain HTTP"))
                .describe(
                    "Talk to the API and the sandboxes over http:// instead of https:// (the API \
                     key then travels unencrypted). Only for a trusted private network.",
                )
                .default_value(json!(d.insecure_http))
                .destination(),
            FieldSpec::new("template", FieldKind::String, "Template")
                .describe("Sandbox template; the base template has Python and Node.js.")
                .default_value(json!(d.template))
                .required(),
            FieldSpec::new("allow_internet_access", FieldKind::Boolean, "Internet access")
                .describe("Let programs reach the internet from the sandbox. Off by default.")
                .default_value(json!(d.allow_internet_access)),
            fields::timeout_secs(d.timeout_secs, "the sandbox").alias("timeout"),
            FieldSpec::new("sandbox_timeout_secs", fields::integer(60, 86_400), "Sandbox lifetime (seconds)")
                .describe(
                    "Lifetime UCloud gives each sandbox. Each run deletes its sandbox when it \
                     ends; this only bounds one that could not be deleted.",
                )
                .default_value(json!(d.sandbox_timeout_secs))
                .alias("sandbox_timeout"),
            FieldSpec::new("request_timeout_secs", fields::integer(1, 300), "Request timeout (seconds)")
                .describe("How long one API call (create, delete, upload) may take.")
                .default_value(json!(d.request_timeout_secs)),
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
        ],
    }
}

pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider(raw)?))
}

/// Validates stored or submitted values and builds the provider, every bad field at once.
pub fn build_provider(raw: &Map<String, Value>) -> Result<UcloudProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    for key in ["api_url", "sandbox_url"] {
        check.check_if_set(key, |url| {
            http::endpoint(url, "https://api.cn-wlcb.sandbox.ucloudai.com").map(|_| ())
        });
    }
    check.check_if_set("domain", |domain| {
        if domain.contains("://") || domain.contains('/') || domain.contains(char::is_whitespace) {
            Err("Enter a domain name only, e.g. cn-wlcb.sandbox.ucloudai.com.".into())
        } else {
            Ok(())
        }
    });
    UcloudProvider::new(check.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let given = Map::from_iter([("api_key".to_owned(), json!("k"))]);

        let config: UcloudConfig = testkit::schema_matches_config(&schema(), &given).unwrap();

        assert_eq!(config.domain(), "cn-wlcb.sandbox.ucloudai.com");
        assert_eq!(config.template, "base");
    }

    #[test]
    fn ragflow_keys_apply_and_a_region_outside_the_list_is_refused() {
        let raw =
            json!({ "api_key": "k", "timeout": 45, "sandbox_timeout": 600, "region": "mars" });

        let canonical = schema()
            .canonical(raw.as_object().cloned().unwrap())
            .unwrap();
        let Err(Error::ConfigInvalid { errors }) = build(&canonical) else {
            panic!("accepted")
        };

        assert_eq!(
            (
                &canonical["timeout_secs"],
                &canonical["sandbox_timeout_secs"]
            ),
            (&json!(45), &json!(600))
        );
        assert_eq!(errors.keys().collect::<Vec<_>>(), ["region"]);
    }
}
