//! The `docker` provider's settings: schema, typed config, and the one validating `build()`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{DockerProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec},
    sandbox::{
        egress::{self, NetworkConfig},
        environment::BuildContext,
        providers::{config_check::ConfigCheck, fields},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;
/// gVisor counts its sandbox's host threads against the pids limit: below this it cannot start
/// or dies under a few hundred processes (measured on Debian's runsc).
pub const GVISOR_MIN_PIDS: u32 = 1000;
/// The gVisor runtime registration whose sandboxes can take an allow-list (scripts/docker.sh
/// registers it next to `runsc`).
pub const RUNSC_EGRESS: &str = "runsc-egress";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DockerConfig {
    pub docker_host: String,
    pub python_image: String,
    pub javascript_image: String,
    pub runtime: String,
    pub pool_size: u32,
    pub fresh_container_per_run: bool,
    /// Each warm Python container's interpreter is started ahead, its modules preloaded.
    pub start_ahead: bool,
    pub timeout_secs: u32,
    pub memory_mb: u32,
    pub cpu_millis: u32,
    pub pids_limit: u32,
    pub workspace_mb: u32,
    pub tmp_mb: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
    pub queue_wait_secs: u32,
    pub environment: String,
    #[serde(flatten)]
    pub network: NetworkConfig,
}

impl Default for DockerConfig {
    fn default() -> Self {
        DockerConfig {
            docker_host: "unix:///var/run/docker.sock".into(),
            python_image: "sandbox-runtime:local".into(),
            javascript_image: "sandbox-runtime:local".into(),
            runtime: "runc".into(),
            pool_size: 2,
            fresh_container_per_run: true,
            start_ahead: true,
            timeout_secs: 10,
            memory_mb: 256,
            cpu_millis: 1000,
            pids_limit: 128,
            workspace_mb: 64,
            tmp_mb: 64,
            max_output_bytes: MIB,
            max_artifacts: 10,
            max_artifact_bytes: 10 * MIB,
            queue_wait_secs: 10,
            environment: String::new(),
            network: NetworkConfig::default(),
        }
    }
}

impl DockerConfig {
    /// Whether the runtime is gVisor, judged by its name (the health check also reads the
    /// runtime's path from the daemon).
    pub fn gvisor(&self) -> bool {
        let name = self.runtime.to_ascii_lowercase();
        name.contains("runsc") || name.contains("gvisor")
    }
}

pub fn schema() -> ConfigSchema {
    let d = DockerConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest artifact returned.",
    );
    let mut schema = ConfigSchema {
        fields: vec![
            FieldSpec::new("docker_host", FieldKind::String, "Docker host")
                .describe(
                    "Where dockerd listens: unix:///path/to/docker.sock, or tcp://host:port \
                     (plain HTTP: only on a private network).",
                )
                .placeholder("unix:///var/run/docker.sock")
                .default_value(json!(d.docker_host))
                .group(FieldGroup::Deployment)
                .destination()
                .required(),
            FieldSpec::new("python_image", FieldKind::String, "Python image")
                .describe(
                    "Image that runs Python; it needs python3 and sleep. The docker provider's \
                     README shows how to build one, with or without a registry.",
                )
                .default_value(json!(d.python_image))
                .group(FieldGroup::Deployment)
                .required(),
            FieldSpec::new("javascript_image", FieldKind::String, "JavaScript image")
                .describe("Image that runs JavaScript; it needs node and sleep.")
                .default_value(json!(d.javascript_image))
                .group(FieldGroup::Deployment)
                .required(),
            FieldSpec::new("runtime", FieldKind::String, "Container runtime")
                .describe(
                    "runc, or the name under which gVisor (runsc) is registered with dockerd \
                     (see the provider's README). gVisor needs a pids limit of at least 1000.",
                )
                .default_value(json!(d.runtime))
                .group(FieldGroup::Deployment)
                .required(),
            FieldSpec::new(
                "pool_size",
                fields::integer(1, 64),
                "Pool size per language",
            )
            .describe(
                "Containers kept warm for each language; also how many runs of one language \
                     run at once.",
            )
            .default_value(json!(d.pool_size)),
            FieldSpec::new(
                "fresh_container_per_run",
                FieldKind::Boolean,
                "Fresh container per run",
            )
            .describe(
                "Yes (strict): a container runs one program and is thrown away; a new one is \
                 warmed in the background. No: containers are wiped (processes killed; \
                 workspace, /tmp, /dev/shm and message queues emptied; System V IPC removed) \
                 and reused only when the wipe can prove nothing is left. Under gVisor it \
                 cannot prove System V IPC gone, so containers are replaced there as in strict \
                 mode.",
            )
            .default_value(json!(d.fresh_container_per_run)),
            FieldSpec::new("start_ahead", FieldKind::Boolean, "Start Python ahead")
                .describe(
                    "Yes: each warm Python container already runs its interpreter, with the \
                     environment's preloaded modules (numpy, pandas, matplotlib) imported, \
                     waiting for one run; the run skips the interpreter's start and the \
                     imports. The interpreter serves that one run. Its deadline starts when the \
                     program arrives; the preloaded modules count toward the container's \
                     memory limit.",
                )
                .default_value(json!(d.start_ahead)),
            fields::timeout_secs(d.timeout_secs, "the container"),
            fields::memory_mb(
                d.memory_mb,
                "Memory of one container, swap included (memory = memory + swap).",
            ),
            FieldSpec::new(
                "cpu_millis",
                fields::integer(100, 64_000),
                "CPU (millicores)",
            )
            .describe("CPU quota of one container: 1000 is one core.")
            .default_value(json!(d.cpu_millis)),
            FieldSpec::new("pids_limit", fields::integer(16, 32_768), "Pids limit")
                .describe(
                    "Processes and threads one container may have. Under gVisor the sandbox's \
                     own threads count too: use at least 1000.",
                )
                .default_value(json!(d.pids_limit)),
            FieldSpec::new(
                "workspace_mb",
                fields::integer(1, 4096),
                "Workspace size (MB)",
            )
            .describe("Size of the in-memory /workspace the program runs in.")
            .default_value(json!(d.workspace_mb)),
            FieldSpec::new("tmp_mb", fields::integer(1, 4096), "/tmp size (MB)")
                .describe("Size of the in-memory /tmp.")
                .default_value(json!(d.tmp_mb)),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size while they stream; the run is \
                 killed and reports output_limit.",
            ),
            max_artifacts,
            max_artifact_bytes,
            fields::queue_wait_secs(d.queue_wait_secs, "a free container"),
            fields::environment(),
        ],
    };
    schema.fields.extend(fields::network());
    schema
}

/// Validates stored or submitted values and builds the provider (it connects lazily: a daemon
/// that is down is a health problem, not a form error). Reports every bad field at once.
pub fn build_with(
    raw: &Map<String, Value>,
    context: &BuildContext,
) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider_with(raw, context)?))
}

/// [`build_with`] without environments (tools and tests).
pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    build_with(raw, &BuildContext::default())
}

/// [`build`], keeping the concrete type (tests and diagnostics read its pool).
pub fn build_provider(raw: &Map<String, Value>) -> Result<DockerProvider, Error> {
    build_provider_with(raw, &BuildContext::default())
}

/// [`build_with`], keeping the concrete type.
pub fn build_provider_with(
    raw: &Map<String, Value>,
    context: &BuildContext,
) -> Result<DockerProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    let environment = fields::resolve_environment(&mut check, context);
    fields::check_network(&mut check);
    if check.text("network") == egress::ALLOW_LIST {
        // The console puts the sandbox's network device into the container's namespace, and
        // binds the allow-list's files from this host's disk.
        check.check("network", |c| {
            if !c.text("docker_host").starts_with("unix://") {
                return Err(
                    "An allow-list needs a local daemon (unix://): the console joins \
                            each container's network namespace."
                        .into(),
                );
            }
            if c.text("runtime") == "runsc" || c.text("runtime") == "gvisor" {
                return Err(format!(
                    "Under gVisor an allow-list needs the {RUNSC_EGRESS} runtime (runsc registered \
                     with --network=host in dockerd's daemon.json, as the README shows): choose \
                     it as the runtime."
                ));
            }
            Ok(())
        });
    }
    if environment.mount().is_some() {
        // A bind mount names a folder on the daemon's host: only this host's daemon sees ours.
        check.check("environment", |c| {
            if c.text("docker_host").starts_with("unix://") {
                Ok(())
            } else {
                Err(
                    "Environments are mounted from this host's disk: they need a local \
                     daemon (unix://). Choose 'none' for a remote daemon."
                        .into(),
                )
            }
        });
    }
    // Text checks also run when another field failed the schema: the submitted value, or
    // the default when it was left out.
    check.check("docker_host", |c| check_host(&c.text("docker_host")));
    for key in ["python_image", "javascript_image"] {
        check.check(key, |c| check_image(&c.text(key)));
    }
    check.check("runtime", |c| {
        let runtime = c.text("runtime");
        if runtime.is_empty()
            || !runtime
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            Err("Enter a runtime name such as runc or runsc (letters, digits, - _ .).".into())
        } else {
            Ok(())
        }
    });
    let config: DockerConfig = check.finish()?;
    if config.gvisor() && config.pids_limit < GVISOR_MIN_PIDS {
        return Err(Error::field(
            "pids_limit",
            format!(
                "gVisor ({}) needs a pids limit of at least {GVISOR_MIN_PIDS}: its sandbox's own \
                 threads count against it.",
                config.runtime
            ),
        ));
    }
    let egress = fields::network_egress(&config.network, context)?;
    Ok(DockerProvider::with_network(config, environment, egress))
}

fn check_host(host: &str) -> Result<(), String> {
    if let Some(path) = host.strip_prefix("unix://") {
        if path.starts_with('/') && path.len() > 1 {
            return Ok(());
        }
        return Err("Enter the socket's absolute path: unix:///var/run/docker.sock.".into());
    }
    let rest = host
        .strip_prefix("tcp://")
        .or_else(|| host.strip_prefix("http://"));
    match rest.and_then(|r| r.trim_end_matches('/').rsplit_once(':')) {
        Some((name, port)) if !name.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(())
        }
        _ => Err("Enter unix:///path/to/docker.sock or tcp://host:port.".into()),
    }
}

/// Docker's reference grammar, loosely: lowercase name components, optional registry with a
/// port, optional tag or digest. Enough to catch typos and spaces before the daemon does.
fn check_image(image: &str) -> Result<(), String> {
    let valid = !image.is_empty()
        && image.len() <= 255
        && !image.starts_with(['/', ':', '@', '.', '-'])
        && !image.ends_with([':', '/', '@'])
        && image
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@".contains(c))
        && !image.contains("//");
    if valid {
        Ok(())
    } else {
        Err("Enter an image reference such as sandbox-runtime:local or python:3.12-slim.".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    fn values(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let config: DockerConfig = testkit::schema_matches_config(&schema(), &Map::new()).unwrap();

        assert_eq!(config, DockerConfig::default());
    }

    #[test]
    fn build_reports_every_bad_field_at_once() {
        let error = build(&values(json!({
            "docker_host": "ftp://docker",
            "python_image": "Not An Image",
            "runtime": "run c",
            "pool_size": 65,
        })))
        .unwrap_err();

        let Error::ConfigInvalid { errors } = error else {
            panic!("expected field errors")
        };
        assert!(errors["docker_host"].starts_with("Enter unix://"));
        assert!(errors["python_image"].starts_with("Enter an image reference"));
        assert!(errors["runtime"].starts_with("Enter a runtime name"));
        assert_eq!(errors["pool_size"], "Enter a number from 1 to 64.");
        assert!(!errors.contains_key("javascript_image"));
    }

    #[test]
    fn gvisor_needs_a_pids_limit_of_at_least_1000() {
        let low = build(&values(json!({ "runtime": "runsc", "pids_limit": 128 }))).unwrap_err();
        let enough = build(&values(json!({ "runtime": "runsc", "pids_limit": 1000 })));

        assert!(
            matches!(low, Error::ConfigInvalid { errors } if errors["pids_limit"].contains("at least 1000"))
        );
        assert!(enough.is_ok());
    }

    #[test]
    fn hosts_are_unix_sockets_or_tcp_addresses() {
        assert!(check_host("unix:///var/run/docker.sock").is_ok());
        assert!(check_host("tcp://10.0.0.5:2375").is_ok());
        assert!(check_host("http://docker.internal:2375/").is_ok());
        assert!(check_host("unix://relative.sock").is_err());
        assert!(check_host("tcp://host").is_err());
        assert!(check_host("tcp://:2375").is_err());
        assert!(check_host("/var/run/docker.sock").is_err());
    }
}
