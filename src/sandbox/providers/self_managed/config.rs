//! The `self_managed` provider's settings: schema, typed config, and the one validating
//! `build()`. The schema is the seed's (RAGFlow's `endpoint`, `timeout`, `max_retries`,
//! `pool_size`), plus the executor's API token, an output cap and a queue wait. `pool_size`
//! (RAGFlow also names it `executor_manager_pool_size`) is the executor's container pool:
//! RAGFlow only shows it; here it also caps how many runs the console sends at once, so the
//! executor is not asked for more containers than it has.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{SelfManagedProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec},
    sandbox::{
        providers::{config_check::ConfigCheck, fields, http},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;
pub const EXAMPLE_ENDPOINT: &str = "http://sandbox-executor-manager:9385";

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SelfManagedConfig {
    pub endpoint: String,
    pub api_token: String,
    pub timeout: u32,
    pub max_retries: u32,
    pub max_output_bytes: u64,
    /// Runs sent at once; 0: no limit.
    pub pool_size: u32,
    pub queue_wait_secs: u32,
}

impl Default for SelfManagedConfig {
    fn default() -> Self {
        SelfManagedConfig {
            endpoint: "http://localhost:9385".into(),
            api_token: String::new(),
            timeout: 30,
            max_retries: 3,
            max_output_bytes: MIB,
            pool_size: 0,
            queue_wait_secs: 10,
        }
    }
}

/// Written by hand: the API token never reaches a log line.
impl std::fmt::Debug for SelfManagedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfManagedConfig")
            .field("endpoint", &self.endpoint)
            .field("api_token_set", &!self.api_token.is_empty())
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("pool_size", &self.pool_size)
            .field("queue_wait_secs", &self.queue_wait_secs)
            .finish()
    }
}

pub fn schema() -> ConfigSchema {
    let d = SelfManagedConfig::default();
    ConfigSchema {
        fields: vec![
            FieldSpec::new("endpoint", FieldKind::String, "Executor Manager Endpoint")
                .describe(
                    "HTTP endpoint of RAGFlow's executor manager (or of another sandbox-console's \
                     /run): POST /run runs code, GET /healthz is its health.",
                )
                .placeholder(EXAMPLE_ENDPOINT)
                .default_value(json!(d.endpoint))
                .group(FieldGroup::Deployment)
                .destination()
                .required(),
            FieldSpec::new("api_token", FieldKind::Secret, "API token")
                .describe(
                    "The executor's SANDBOX_EXECUTOR_MANAGER_API_TOKEN (or a sandbox-console API \
                     key with the execute scope), sent as Authorization: Bearer and \
                     X-Sandbox-Token. Leave empty for an executor without one.",
                )
                .group(FieldGroup::Deployment),
            FieldSpec::new(
                "timeout",
                fields::integer(5, 300),
                "Request Timeout (seconds)",
            )
            .describe(
                "How long one request to the executor may take; the program's own time \
                     limit is the executor's SANDBOX_TIMEOUT, or the run's timeout when it asks \
                     for one.",
            )
            .default_value(json!(d.timeout)),
            FieldSpec::new("max_retries", fields::integer(0, 10), "Max Retries")
                .describe(
                    "Retries, with backoff, when the executor cannot be reached or answers \
                     that it is rate limited (-429). Other failures are never retried.",
                )
                .default_value(json!(d.max_retries)),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size; the run then reports output_limit.",
            ),
            FieldSpec::new("pool_size", fields::integer(0, 1000), "Container Pool Size")
                .describe(
                    "The executor's container pool (its SANDBOX_EXECUTOR_MANAGER_POOL_SIZE): \
                     the console sends at most this many runs at once, and more wait for a \
                     free one. 0: no limit (the executor answers pool_busy when it is full).",
                )
                .default_value(json!(d.pool_size))
                .alias("executor_manager_pool_size"),
            fields::queue_wait_secs(d.queue_wait_secs, "one of the pool's runs to finish"),
        ],
    }
}

/// Validates stored or submitted values and builds the provider: the schema's type checks and
/// the endpoint URL, every bad field at once.
pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider(raw)?))
}

pub fn build_provider(raw: &Map<String, Value>) -> Result<SelfManagedProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    check.check("endpoint", |c| {
        http::endpoint(c.submitted("endpoint"), EXAMPLE_ENDPOINT).map(|_| ())
    });
    SelfManagedProvider::new(check.finish()?)
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
        let config: SelfManagedConfig =
            testkit::schema_matches_config(&schema(), &Map::new()).unwrap();

        assert_eq!(config, SelfManagedConfig::default());
        assert_eq!(
            schema()
                .field_named("executor_manager_pool_size")
                .map(|f| f.key.as_str()),
            Some("pool_size"),
            "RAGFlow's two names for the executor's pool"
        );
    }

    #[test]
    fn build_reports_a_bad_endpoint_and_ranges_together() {
        let error = build(&map(
            json!({ "endpoint": "executor:9385", "timeout": 4, "max_retries": 11 }),
        ))
        .unwrap_err();

        let Error::ConfigInvalid { errors } = error else {
            panic!("{error}")
        };
        assert!(
            errors["endpoint"].contains("http:// or https://"),
            "{errors:?}"
        );
        assert_eq!(errors["timeout"], "Enter a number from 5 to 300.");
        assert_eq!(errors["max_retries"], "Enter a number from 0 to 10.");
    }

    #[test]
    fn the_debug_text_never_shows_the_token() {
        let config = SelfManagedConfig {
            api_token: "s3cr3t-token".into(),
            ..SelfManagedConfig::default()
        };

        let text = format!("{config:?}");

        assert!(!text.contains("s3cr3t"), "{text}");
        assert!(text.contains("api_token_set: true"));
    }
}
