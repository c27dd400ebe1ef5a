//! The `local` provider's settings: schema, typed config, and the one validating `build()`.

use std::{os::unix::fs::PermissionsExt, path::Path, sync::Arc};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{LocalProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldKind, FieldSpec},
    sandbox::{
        egress::NetworkConfig,
        environment::BuildContext,
        providers::{config_check::ConfigCheck, fields},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalConfig {
    pub python_path: String,
    pub node_path: String,
    pub timeout_secs: u32,
    pub memory_mb: u32,
    pub max_processes: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
    pub max_concurrent_runs: u32,
    pub queue_wait_secs: u32,
    /// Python sandboxes kept started ahead (0: every run starts its own).
    pub ahead_min: u32,
    /// The most kept started ahead while runs are in progress.
    pub ahead_max: u32,
    pub environment: String,
    #[serde(flatten)]
    pub network: NetworkConfig,
    /// Where each run keeps its private host folder (its artifacts) while it runs: the
    /// console's run folder, never a setting (empty: the system's temporary folder).
    #[serde(skip)]
    pub run_dir: std::path::PathBuf,
}

impl Default for LocalConfig {
    fn default() -> Self {
        LocalConfig {
            python_path: "/usr/bin/python3.11".into(),
            node_path: "/usr/bin/node".into(),
            timeout_secs: 10,
            memory_mb: 256,
            max_processes: 64,
            max_output_bytes: MIB,
            max_artifacts: 10,
            max_artifact_bytes: 10 * MIB,
            max_concurrent_runs: 8,
            queue_wait_secs: 10,
            ahead_min: 1,
            ahead_max: 4,
            environment: String::new(),
            network: NetworkConfig::default(),
            run_dir: std::path::PathBuf::new(),
        }
    }
}

pub fn schema() -> ConfigSchema {
    let d = LocalConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest file the program may write, and largest artifact returned.",
    );
    let mut schema = ConfigSchema {
        fields: vec![
            FieldSpec::new("python_path", FieldKind::String, "Python interpreter")
                .describe("Absolute path of the Python 3 interpreter on this host.")
                .default_value(json!(d.python_path))
                .alias("python_bin")
                .required(),
            FieldSpec::new("node_path", FieldKind::String, "Node.js interpreter")
                .describe("Absolute path of the node binary on this host.")
                .default_value(json!(d.node_path))
                .alias("node_bin")
                .required(),
            // RAGFlow's local provider names these timeout (seconds) and max_memory_mb.
            fields::timeout_secs(d.timeout_secs, "the whole process tree").alias("timeout"),
            fields::memory_mb(
                d.memory_mb,
                "Memory limit of one run (a cgroup limit when the console runs as root).",
            )
            .alias("max_memory_mb"),
            FieldSpec::new("max_processes", fields::integer(1, 1024), "Max processes")
                .describe("How many processes and threads one run may have at once.")
                .default_value(json!(d.max_processes)),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size; the run then reports output_limit.",
            ),
            max_artifacts,
            max_artifact_bytes,
            FieldSpec::new(
                "max_concurrent_runs",
                fields::integer(1, 256),
                "Concurrent runs",
            )
            .describe("How many programs run at once; more wait in a queue.")
            .default_value(json!(d.max_concurrent_runs)),
            fields::queue_wait_secs(d.queue_wait_secs, "a free slot"),
            FieldSpec::new("ahead_min", fields::integer(0, 16), "Started ahead")
                .describe("Python sandboxes kept started, with the environment's preloaded modules imported, each waiting for one run: a run then skips the sandbox's start and the imports. Each serves one run and is discarded. 0: every run starts its own.")
                .default_value(json!(d.ahead_min)),
            FieldSpec::new("ahead_max", fields::integer(0, 64), "Most started ahead")
                .describe("While runs are in progress one more is kept per run, up to this many.")
                .default_value(json!(d.ahead_max)),
            fields::environment(),
        ],
    };
    schema.fields.extend(fields::network());
    schema
}

/// [`build_with`] without environments (tools and tests).
pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    build_with(raw, &BuildContext::default())
}

/// Validates stored or submitted values and builds the provider. Reports every bad field at
/// once: the schema's type checks, the interpreter paths and the environment's name.
pub fn build_with(
    raw: &Map<String, Value>,
    context: &BuildContext,
) -> Result<Arc<dyn SandboxProvider>, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    let environment = fields::resolve_environment(&mut check, context);
    fields::check_network(&mut check);
    let defaults = LocalConfig::default();
    for (key, default) in [
        ("python_path", defaults.python_path),
        ("node_path", defaults.node_path),
    ] {
        check.check(key, |c| {
            let path = c.submitted(key);
            check_executable(if path.is_empty() { &default } else { path })
        });
    }
    let mut config: LocalConfig = check.finish()?;
    config.run_dir = context.run_dir.clone();
    let egress = fields::network_egress(&config.network, context)?;
    Ok(Arc::new(LocalProvider::with_network(
        config,
        environment,
        egress,
    )))
}

fn check_executable(path: &str) -> Result<(), String> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return Err("Enter an absolute path, e.g. /usr/bin/python3.11.".into());
    }
    let meta =
        std::fs::metadata(path).map_err(|e| format!("Cannot use {}: {e}.", path.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!("{} is not an executable file.", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let config: LocalConfig = testkit::schema_matches_config(&schema(), &Map::new()).unwrap();

        assert_eq!(config, LocalConfig::default());
    }

    #[test]
    fn build_reports_bad_paths_and_ranges_per_field() {
        let out_of_range =
            build(&json!({ "timeout_secs": 601 }).as_object().unwrap().clone()).unwrap_err();
        let relative = build(
            &json!({ "python_path": "python3" })
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap_err();
        let missing = build(
            &json!({ "node_path": "/nonexistent/node" })
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap_err();

        assert!(
            matches!(out_of_range, Error::ConfigInvalid { errors } if errors["timeout_secs"] == "Enter a number from 1 to 600.")
        );
        assert!(
            matches!(relative, Error::ConfigInvalid { errors } if errors["python_path"].starts_with("Enter an absolute path"))
        );
        assert!(
            matches!(missing, Error::ConfigInvalid { errors } if errors["node_path"].starts_with("Cannot use /nonexistent/node"))
        );
    }
}
