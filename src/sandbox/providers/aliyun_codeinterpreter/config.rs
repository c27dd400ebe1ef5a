//! The `aliyun_codeinterpreter` provider's settings: the seed's schema and rules (access key id
//! `LTAI…`, secret, account id, one of five regions, template name, timeout 1..30, the
//! service's hard cap), `AGENTRUN_*` environment fallbacks, and overridable endpoints.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{AliyunProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec, SelectOption},
    sandbox::{
        providers::{config_check::ConfigCheck, fields, http},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;
pub const REGIONS: [&str; 5] = [
    "cn-hangzhou",
    "cn-beijing",
    "cn-shanghai",
    "cn-shenzhen",
    "cn-guangzhou",
];

/// Fields that fall back to an environment variable when left blank (as RAGFlow's provider).
const ENV_FALLBACKS: [(&str, &str); 4] = [
    ("access_key_id", "AGENTRUN_ACCESS_KEY_ID"),
    ("access_key_secret", "AGENTRUN_ACCESS_KEY_SECRET"),
    ("account_id", "AGENTRUN_ACCOUNT_ID"),
    ("region", "AGENTRUN_REGION"),
];

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AliyunConfig {
    pub access_key_id: String,
    pub access_key_secret: String,
    pub account_id: String,
    pub region: String,
    pub template_name: String,
    pub timeout: u32,
    pub memory_mb: u32,
    pub max_output_bytes: u64,
    pub endpoint: String,
    pub control_endpoint: String,
}

impl Default for AliyunConfig {
    fn default() -> Self {
        AliyunConfig {
            access_key_id: String::new(),
            access_key_secret: String::new(),
            account_id: String::new(),
            region: "cn-hangzhou".into(),
            template_name: String::new(),
            timeout: 30,
            memory_mb: 256,
            max_output_bytes: MIB,
            endpoint: String::new(),
            control_endpoint: String::new(),
        }
    }
}

/// Written by hand: the secret never reaches a log line.
impl std::fmt::Debug for AliyunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AliyunConfig")
            .field("access_key_id", &self.access_key_id)
            .field("access_key_secret_set", &!self.access_key_secret.is_empty())
            .field("account_id", &self.account_id)
            .field("region", &self.region)
            .field("template_name", &self.template_name)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

pub fn schema() -> ConfigSchema {
    let d = AliyunConfig::default();
    ConfigSchema {
        fields: vec![
            FieldSpec::new("access_key_id", FieldKind::String, "Access Key ID")
                .describe("Aliyun AccessKey ID for authentication (or AGENTRUN_ACCESS_KEY_ID in the console's environment).")
                .placeholder("LTAI5t...")
                .group(FieldGroup::Deployment)
                .env("AGENTRUN_ACCESS_KEY_ID")
                .required(),
            FieldSpec::new("access_key_secret", FieldKind::Secret, "Access Key Secret")
                .describe("Aliyun AccessKey Secret: signs every request, never sent (or AGENTRUN_ACCESS_KEY_SECRET).")
                .group(FieldGroup::Deployment)
                .env("AGENTRUN_ACCESS_KEY_SECRET")
                .required(),
            FieldSpec::new("account_id", FieldKind::String, "Account ID")
                .describe("Aliyun primary account ID, required for API calls (or AGENTRUN_ACCOUNT_ID).")
                .placeholder("1234567890...")
                .group(FieldGroup::Deployment)
                .env("AGENTRUN_ACCOUNT_ID")
                .destination()
                .required(),
            FieldSpec::new(
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
            )
            .describe("Aliyun region for Code Interpreter service.")
            .default_value(json!(d.region))
            .group(FieldGroup::Deployment)
            .env("AGENTRUN_REGION")
            .destination(),
            FieldSpec::new("template_name", FieldKind::String, "Template Name")
                .describe(
                    "Optional sandbox template name for pre-configured environments. Empty: the \
                     console's own code-interpreter template, created on first use.",
                )
                .placeholder("my-interpreter")
                .group(FieldGroup::Deployment),
            FieldSpec::new(
                "timeout",
                FieldKind::Integer {
                    min: Some(1),
                    max: Some(30),
                },
                "Execution Timeout (seconds)",
            )
            .describe("Code execution timeout (max 30 seconds - hard limit)")
            .default_value(json!(d.timeout)),
            fields::memory_mb(
                d.memory_mb,
                "What one Python run may allocate inside the sandbox (its data segment); past it \
                 the run ends with memory_limit.",
            ),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size; the run then reports output_limit.",
            ),
            FieldSpec::new("endpoint", FieldKind::String, "Data endpoint override")
                .describe(
                    "Only for a private endpoint: the data API's URL instead of \
                     https://<account>-ram.agentrun-data.<region>.aliyuncs.com.",
                )
                .group(FieldGroup::Deployment)
                .destination(),
            FieldSpec::new("control_endpoint", FieldKind::String, "Control endpoint override")
                .describe(
                    "Only for a private endpoint: the template API's URL instead of \
                     https://agentrun.<region>.aliyuncs.com.",
                )
                .group(FieldGroup::Deployment)
                .destination(),
        ],
    }
}

pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider(raw)?))
}

/// Blank credentials and region taken from the environment, as RAGFlow's provider did.
fn with_environment(raw: &Map<String, Value>) -> Map<String, Value> {
    let mut values = raw.clone();
    for (key, variable) in ENV_FALLBACKS {
        let blank = values
            .get(key)
            .is_none_or(|v| v.as_str().is_some_and(|s| s.trim().is_empty()) || v.is_null());
        if let (true, Ok(value)) = (blank, std::env::var(variable)) {
            if !value.trim().is_empty() {
                values.insert(key.into(), json!(value.trim()));
            }
        }
    }
    values
}

/// Validates stored or submitted values and builds the provider: the schema's type checks,
/// the seed's rules and the override URLs, every bad field at once.
pub fn build_provider(raw: &Map<String, Value>) -> Result<AliyunProvider, Error> {
    let raw = with_environment(raw);
    let mut check = ConfigCheck::new(KIND, &schema(), &raw);
    // The seed's rules, on the submitted values even when another field failed.
    check.check("access_key_id", |c| {
        if c.submitted("access_key_id").starts_with("LTAI") {
            Ok(())
        } else {
            Err("Invalid AccessKey ID format (should start with 'LTAI').".into())
        }
    });
    check.check("account_id", |c| {
        if c.submitted("account_id")
            .chars()
            .all(|c| c.is_ascii_digit())
        {
            Ok(())
        } else {
            Err("Enter the numeric primary account ID (shown in the Aliyun console).".into())
        }
    });
    for key in ["endpoint", "control_endpoint"] {
        check.check_if_set(key, |url| {
            http::endpoint(url, "https://agentrun.example.internal").map(|_| ())
        });
    }
    AliyunProvider::new(check.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let given =
            map(json!({ "access_key_id": "LTAI5tX", "access_key_secret": "s", "account_id": "1" }));

        let config: AliyunConfig = testkit::schema_matches_config(&schema(), &given).unwrap();

        assert_eq!(
            (config.region.as_str(), config.timeout),
            ("cn-hangzhou", 30)
        );
    }

    #[test]
    fn the_seeds_rules_hold_every_bad_field_reported_at_once() {
        let error = build(&map(json!({
            "access_key_id": "INVALID_KEY", "access_key_secret": "s", "account_id": "12ab",
            "region": "us-west-1", "timeout": 60, "endpoint": "nope"
        })))
        .unwrap_err();

        let Error::ConfigInvalid { errors } = error else {
            panic!("{error}")
        };
        assert!(
            errors["region"].starts_with("Choose one of: cn-hangzhou, cn-beijing"),
            "{errors:?}"
        );
        assert_eq!(errors["timeout"], "Enter a number from 1 to 30.");
        assert!(errors["endpoint"].starts_with("Enter a URL"));
        assert_eq!(
            errors["access_key_id"],
            "Invalid AccessKey ID format (should start with 'LTAI')."
        );
        assert!(errors["account_id"].starts_with("Enter the numeric"));
    }

    #[test]
    fn the_debug_text_never_shows_the_secret() {
        let config = AliyunConfig {
            access_key_secret: "very-secret".into(),
            ..AliyunConfig::default()
        };

        assert!(!format!("{config:?}").contains("very-secret"));
    }
}
