//! The `tenki` provider's settings: RAGFlow's fields (its keys accepted as aliases), checked
//! as Tenki's SDK checks them before it sends anything, the typed config and `build()`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{TenkiProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec},
    sandbox::{
        providers::{config_check::ConfigCheck, fields, http},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;
pub const DEFAULT_API: &str = "https://api.tenki.cloud";

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TenkiConfig {
    pub api_key: String,
    pub base_url: String,
    pub image: String,
    pub allow_outbound: bool,
    pub timeout_secs: u32,
    pub max_lifetime_secs: u32,
    pub cpu_cores: u32,
    pub memory_mb: u32,
    pub disk_size_gb: u32,
    pub request_timeout_secs: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
}

impl Default for TenkiConfig {
    fn default() -> Self {
        TenkiConfig {
            api_key: String::new(),
            base_url: String::new(),
            image: String::new(),
            allow_outbound: false,
            timeout_secs: 30,
            max_lifetime_secs: 3600,
            cpu_cores: 0,
            memory_mb: 0,
            disk_size_gb: 0,
            request_timeout_secs: 30,
            max_output_bytes: MIB,
            max_artifacts: 20,
            max_artifact_bytes: 10 * MIB,
        }
    }
}

impl TenkiConfig {
    pub fn api(&self) -> &str {
        match self.base_url.trim() {
            "" => DEFAULT_API,
            url => url,
        }
    }
}

/// Written by hand: the API key never reaches a log line.
impl std::fmt::Debug for TenkiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenkiConfig")
            .field("api_key_set", &!self.api_key.is_empty())
            .field("base_url", &self.base_url)
            .field("image", &self.image)
            .field("allow_outbound", &self.allow_outbound)
            .finish_non_exhaustive()
    }
}

pub fn schema() -> ConfigSchema {
    let d = TenkiConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest file from ./artifacts/ returned with a result.",
    );
    let deployment = |spec: FieldSpec| spec.group(FieldGroup::Deployment);
    ConfigSchema {
        fields: vec![
            deployment(FieldSpec::new("api_key", FieldKind::Secret, "API key"))
                .describe("Your Tenki API key (app.tenki.cloud, API Keys), sent as a bearer token to the API only.")
                .placeholder("tk_…")
                .env("TENKI_API_KEY")
                .required(),
            deployment(FieldSpec::new("base_url", FieldKind::String, "API URL"))
                .describe("Leave blank for https://api.tenki.cloud; http:// is plain HTTP/2 (a private test service only).")
                .placeholder(DEFAULT_API)
                .destination(),
            FieldSpec::new("image", FieldKind::String, "Image")
                .describe("The sandbox image; blank is Tenki's default image (Python 3 and Node.js)."),
            FieldSpec::new("allow_outbound", FieldKind::Boolean, "Outbound network")
                .describe("Let programs connect out of the sandbox. Off by default: no network.")
                .default_value(json!(d.allow_outbound)),
            fields::timeout_secs(d.timeout_secs, "the program").alias("timeout"),
            FieldSpec::new("max_lifetime_secs", fields::integer(60, 86_400), "Sandbox lifetime (seconds)")
                .describe(
                    "Tenki reclaims a sandbox after this. Each run ends its sandbox when it is \
                     done; this only bounds one that could not be ended.",
                )
                .default_value(json!(d.max_lifetime_secs))
                .alias("max_lifetime"),
            FieldSpec::new("cpu_cores", fields::integer(0, 16), "vCPU cores")
                .describe("vCPUs per sandbox; 0 is Tenki's default.")
                .default_value(json!(d.cpu_cores)),
            FieldSpec::new("memory_mb", fields::integer(0, 65_536), "Memory (MB)")
                .describe("Memory per sandbox: 0 for Tenki's default, else an even number from 128.")
                .default_value(json!(d.memory_mb)),
            FieldSpec::new("disk_size_gb", fields::integer(0, 100), "Disk (GB)")
                .describe("Disk per sandbox: 0 for Tenki's default, else 5 to 100.")
                .default_value(json!(d.disk_size_gb)),
            FieldSpec::new("request_timeout_secs", fields::integer(1, 300), "Request timeout (seconds)")
                .describe("How long one API call (create, write a file, end) may take.")
                .default_value(json!(d.request_timeout_secs)),
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

/// Validates stored or submitted values and builds the provider, every bad field at once:
/// what Tenki's SDK would refuse before sending anything is refused here, by field.
pub fn build_provider(raw: &Map<String, Value>) -> Result<TenkiProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    check.check_if_set("api_key", |key| {
        if key.starts_with("tk_") {
            Ok(())
        } else {
            Err("A Tenki API key starts with tk_.".into())
        }
    });
    check.check_if_set("base_url", |url| {
        http::endpoint(url, DEFAULT_API).map(|_| ())
    });
    check.check("memory_mb", |c| match c.integer("memory_mb") {
        Some(mb) if mb != 0 && (mb < 128 || mb % 2 != 0) => {
            Err("Enter 0, or an even number from 128.".into())
        }
        _ => Ok(()),
    });
    check.check("disk_size_gb", |c| match c.integer("disk_size_gb") {
        Some(1..=4) => Err("Enter 0, or 5 to 100.".into()),
        _ => Ok(()),
    });
    TenkiProvider::new(check.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let given = Map::from_iter([("api_key".to_owned(), json!("tk_x"))]);

        let config: TenkiConfig = testkit::schema_matches_config(&schema(), &given).unwrap();

        assert_eq!(config.api(), DEFAULT_API);
        assert_eq!(config.max_lifetime_secs, 3600);
    }

    #[test]
    fn what_tenki_refuses_is_refused_by_field_and_ragflow_keys_apply() {
        let raw =
            json!({ "api_key": "sk_x", "memory_mb": 129, "disk_size_gb": 3, "max_lifetime": 600 });

        let canonical = schema()
            .canonical(raw.as_object().cloned().unwrap())
            .unwrap();
        let Err(Error::ConfigInvalid { errors }) = build(&canonical) else {
            panic!("accepted")
        };

        assert_eq!(canonical["max_lifetime_secs"], 600);
        assert_eq!(
            errors.keys().collect::<Vec<_>>(),
            ["api_key", "disk_size_gb", "memory_mb"]
        );
    }
}
