//! Everything the provider asks of dockerd, through bollard: the connection (negotiated
//! lazily, so a daemon that is down is a health problem, not a config error), hardened
//! containers, one run as one exec with its files sent on stdin, deadlines and output caps
//! enforced from here by killing through the API, and the reuse-mode wipe.

use std::{
    collections::HashMap,
    time::{Duration, SystemTime},
};

use base64::{engine::general_purpose::STANDARD as BASE64, Engine as _};
use bollard::{
    exec::{CreateExecOptions, StartExecOptions, StartExecResults},
    models::{ContainerCreateBody, HostConfig},
    query_parameters::{
        KillContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    },
    Docker, API_DEFAULT_VERSION,
};
use futures_util::StreamExt;
use serde_json::json;

use super::{config::DockerConfig, DockerError};
use crate::{
    model::execution::Language,
    sandbox::{
        egress::{self, files::NetworkFiles},
        environment::{self, Mount},
        runner::Job,
    },
};

const BOOT_PY: &str = include_str!("scripts/boot.py");
const BOOT_JS: &str = include_str!("scripts/boot.js");
const CLEAN_SH: &str = include_str!("scripts/clean.sh");

/// Label on every container this provider creates.
pub const LABEL_MANAGED: &str = "sandbox-console.managed";
/// Which process made it (`host/pid:start-time`), so a later start can tell a crashed owner's
/// leftovers from a live console's containers on the same daemon.
pub const LABEL_OWNER: &str = "sandbox-console.owner";
/// Which provider instance (pool) made it.
pub const LABEL_POOL: &str = "sandbox-console.pool";
/// The uid (and gid) programs run as (every exec).
pub const USER: &str = "65534:65534";
/// The uid of the container's own processes (init and the idle command): not the programs'
/// uid, so a program can neither signal nor ptrace them, and in reuse mode cannot plant
/// itself in the one process that outlives its run.
pub const KEEPER_USER: &str = "65533:65533";
const REQUEST_TIMEOUT_SECS: u64 = 120;

/// A lazily connected client. bollard opens one connection per request on the unix socket,
/// so a restarted dockerd is simply answered by the next request.
#[derive(Debug)]
pub struct Engine {
    host: String,
    client: tokio::sync::Mutex<Option<Docker>>,
}

impl Engine {
    pub fn new(host: &str) -> Self {
        Engine {
            host: host.to_owned(),
            client: tokio::sync::Mutex::new(None),
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// The client, connected and with the API version negotiated (Debian's dockerd speaks
    /// 1.41; bollard's default is newer).
    pub async fn client(&self) -> Result<Docker, DockerError> {
        let mut slot = self.client.lock().await;
        if let Some(docker) = slot.as_ref() {
            return Ok(docker.clone());
        }
        let connect = |source| DockerError::Connect {
            host: self.host.clone(),
            source,
        };
        let docker = if self.host.starts_with("unix://") {
            Docker::connect_with_unix(&self.host, REQUEST_TIMEOUT_SECS, API_DEFAULT_VERSION)
        } else {
            let address = self.host.replacen("tcp://", "http://", 1);
            Docker::connect_with_http(&address, REQUEST_TIMEOUT_SECS, API_DEFAULT_VERSION)
        }
        .map_err(connect)?;
        let docker = docker.negotiate_version().await.map_err(connect)?;
        *slot = Some(docker.clone());
        Ok(docker)
    }
}

/// The hardened container every run gets: no network, tini as init, read-only root, size-capped
/// tmpfs workspace and /tmp, nobody's uid, no capabilities, no-new-privileges, memory = memory +
/// swap, pids and CPU limits, our labels. It idles in `sleep` until a run is exec'd into it.
pub fn container_body(
    config: &DockerConfig,
    language: Language,
    owner: &str,
    pool: &str,
    mount: Option<&Mount>,
    network: Option<&NetworkFiles>,
) -> ContainerCreateBody {
    // Execs inherit the container's variables: the environment's are set once, here.
    let mut env = base_env();
    env.extend(
        environment::sandbox_env(mount)
            .into_iter()
            .chain(network.map(NetworkFiles::env).unwrap_or_default())
            .map(|(name, value)| format!("{name}={value}")),
    );
    let mut binds = Vec::new();
    if let Some(mount) = mount {
        binds.push(format!(
            "{}:{}:ro",
            mount.dir.display(),
            environment::MOUNT_POINT
        ));
    }
    if let Some(files) = network {
        // The daemon writes no resolv.conf of its own where one is bound.
        binds.push(format!(
            "{}:{}:ro",
            files.dir().display(),
            egress::files::MOUNT_POINT
        ));
        binds.push(format!(
            "{}:/etc/resolv.conf:ro",
            files.resolv_conf().display()
        ));
    }
    let binds = (!binds.is_empty()).then_some(binds);
    let memory = i64::from(config.memory_mb) * 1024 * 1024;
    let tmpfs = |mb: u32| format!("rw,nosuid,nodev,size={}m,mode=1777", mb);
    ContainerCreateBody {
        image: Some(image_of(config, language).to_owned()),
        cmd: Some(vec!["sleep".into(), "infinity".into()]),
        user: Some(KEEPER_USER.into()),
        working_dir: Some("/workspace".into()),
        hostname: Some("sandbox".into()),
        env: Some(env),
        network_disabled: Some(true),
        labels: Some(HashMap::from([
            (LABEL_MANAGED.to_owned(), "1".to_owned()),
            (LABEL_OWNER.to_owned(), owner.to_owned()),
            (LABEL_POOL.to_owned(), pool.to_owned()),
            (
                "sandbox-console.language".to_owned(),
                language.id().to_owned(),
            ),
        ])),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            init: Some(true),
            readonly_rootfs: Some(true),
            tmpfs: Some(HashMap::from([
                ("/workspace".to_owned(), tmpfs(config.workspace_mb)),
                // A session's home, where E2B's clients keep their files (empty for runs).
                ("/home/user".to_owned(), tmpfs(config.workspace_mb)),
                ("/tmp".to_owned(), tmpfs(config.tmp_mb)),
            ])),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            memory: Some(memory),
            memory_swap: Some(memory),
            pids_limit: Some(i64::from(config.pids_limit)),
            nano_cpus: Some(i64::from(config.cpu_millis) * 1_000_000),
            runtime: Some(config.runtime.clone()),
            auto_remove: Some(false),
            binds,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn base_env() -> Vec<String> {
    vec![
        "PATH=/usr/local/bin:/usr/bin:/bin".into(),
        "HOME=/tmp".into(),
        "LANG=C.UTF-8".into(),
    ]
}

pub fn image_of(config: &DockerConfig, language: Language) -> &str {
    match language {
        Language::Python => &config.python_image,
        Language::Javascript => &config.javascript_image,
    }
}

/// Creates and starts one container; removes it again if it does not start.
pub async fn start_container(
    docker: &Docker,
    config: &DockerConfig,
    language: Language,
    owner: &str,
    pool: &str,
    mount: Option<&Mount>,
    network: Option<&NetworkFiles>,
) -> Result<String, DockerError> {
    let image = image_of(config, language).to_owned();
    let created = docker
        .create_container(
            None,
            container_body(config, language, owner, pool, mount, network),
        )
        .await
        .map_err(|source| match &source {
            bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            } => DockerError::ImageMissing {
                image: image.clone(),
            },
            _ => DockerError::CreateContainer {
                image: image.clone(),
                source,
            },
        })?;
    if let Err(source) = docker.start_container(&created.id, None).await {
        let _ = remove(docker, &created.id).await;
        return Err(DockerError::StartContainer {
            image,
            runtime: config.runtime.clone(),
            source,
        });
    }
    Ok(created.id)
}

/// Force-removes a container (killing it first if needed); failures are logged only: the
/// start-up sweep catches anything left.
/// Returns whether the container is gone (removed now, or already).
pub async fn remove(docker: &Docker, id: &str) -> bool {
    let options = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => true,
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => true,
        Err(error) => {
            tracing::warn!(container = id, %error, "could not remove a sandbox container");
            false
        }
    }
}

pub(super) async fn kill(docker: &Docker, id: &str) {
    let options = KillContainerOptionsBuilder::default()
        .signal("KILL")
        .build();
    if let Err(error) = docker.kill_container(id, Some(options)).await {
        tracing::debug!(container = id, %error, "kill (the container may be gone already)");
    }
}

/// Our containers on the daemon: (id, owner label, pool label).
pub async fn list_ours(docker: &Docker) -> Result<Vec<(String, String, String)>, DockerError> {
    let filters = HashMap::from([("label", vec![format!("{LABEL_MANAGED}=1")])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let listed = docker
        .list_containers(Some(options))
        .await
        .map_err(DockerError::Daemon)?;
    Ok(listed
        .into_iter()
        .filter_map(|c| {
            let labels = c.labels.unwrap_or_default();
            Some((
                c.id?,
                labels.get(LABEL_OWNER).cloned().unwrap_or_default(),
                labels.get(LABEL_POOL).cloned().unwrap_or_default(),
            ))
        })
        .collect())
}

/// Why the provider stopped a run early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    Deadline,
    Output,
}

/// One finished exec, as the provider saw it.
#[derive(Debug)]
pub struct RawRun {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub stopped: Option<Stopped>,
    /// The container stopped under the run (not by us): an OOM kill of a gVisor sandbox, or
    /// the program killed the container's idle process.
    pub container_died: bool,
    pub elapsed: Duration,
    pub started_at: SystemTime,
}

/// Output of one stream, cut at the cap.
#[derive(Default)]
pub(super) struct Capped {
    pub kept: Vec<u8>,
    pub over: bool,
}

impl Capped {
    pub fn push(&mut self, bytes: &[u8], cap: usize) {
        self.over |= crate::sandbox::runner::keep_capped(&mut self.kept, bytes, cap);
    }
}

/// Runs `job` in container `id` as one exec: the bootstrap reads the files from stdin and runs
/// the main() runner. Past `timeout`, or once stdout or stderr goes over the cap, the
/// container is killed through the API (killing our side of the stream would not stop it).
pub async fn run_job(
    docker: &Docker,
    id: &str,
    job: &Job,
    flag: &str,
    timeout: Duration,
    max_output: usize,
    beat: &super::Heartbeat,
) -> Result<RawRun, DockerError> {
    let cmd: Vec<String> = match job.language {
        Language::Python => vec![
            "python3".into(),
            "-I".into(),
            "-B".into(),
            "-u".into(),
            "-c".into(),
            BOOT_PY.into(),
        ],
        Language::Javascript => vec!["node".into(), "-e".into(), BOOT_JS.into()],
    };
    let files: serde_json::Map<String, serde_json::Value> = job
        .files
        .iter()
        .map(|f| (f.name.to_owned(), json!(BASE64.encode(&f.contents))))
        .collect();
    let payload = json!({ "files": files, "flag": flag }).to_string();
    let (exec_id, output, input) = start_exec(docker, id, cmd, true).await?;
    beat.beat();
    super::drive::drive(
        docker,
        id,
        super::drive::Exec {
            id: exec_id,
            output,
            input,
        },
        payload,
        super::drive::Bounds {
            timeout,
            max_output,
        },
        beat,
    )
    .await
}

pub(super) type Output = std::pin::Pin<
    Box<
        dyn futures_util::Stream<
                Item = Result<bollard::container::LogOutput, bollard::errors::Error>,
            > + Send,
    >,
>;
pub(super) type Input = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

pub(super) async fn start_exec(
    docker: &Docker,
    id: &str,
    cmd: Vec<String>,
    stdin: bool,
) -> Result<(String, Output, Input), DockerError> {
    start_exec_in(docker, id, cmd, stdin, "/workspace", "/tmp").await
}

/// [`start_exec`] in folder `dir`, with `HOME` at `home` (a session's driver: both
/// `/home/user`).
pub(super) async fn start_exec_in(
    docker: &Docker,
    id: &str,
    cmd: Vec<String>,
    stdin: bool,
    dir: &str,
    home: &str,
) -> Result<(String, Output, Input), DockerError> {
    let mut env = base_env();
    env.retain(|var| !var.starts_with("HOME="));
    env.push(format!("HOME={home}"));
    let exec_error = |source| DockerError::Exec {
        id: id.to_owned(),
        source,
    };
    let exec = docker
        .create_exec(
            id,
            CreateExecOptions {
                attach_stdin: Some(stdin),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(cmd),
                user: Some(USER.to_owned()),
                working_dir: Some(dir.to_owned()),
                env: Some(env),
                ..Default::default()
            },
        )
        .await
        .map_err(exec_error)?;
    let options = StartExecOptions {
        detach: false,
        tty: false,
        output_capacity: Some(64 * 1024),
    };
    match docker
        .start_exec(&exec.id, Some(options))
        .await
        .map_err(exec_error)?
    {
        StartExecResults::Attached { output, input } => Ok((exec.id, output, input)),
        StartExecResults::Detached => Err(DockerError::Protocol(
            "dockerd started the exec detached".into(),
        )),
    }
}

/// The exec's exit code once dockerd has it (the stream can end a moment before).
pub(super) async fn exit_code(docker: &Docker, exec_id: &str) -> Result<Option<i32>, DockerError> {
    for _ in 0..50 {
        let inspected = docker
            .inspect_exec(exec_id)
            .await
            .map_err(DockerError::Daemon)?;
        if inspected.running != Some(true) {
            return Ok(inspected.exit_code.map(|c| c as i32));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(None)
}

/// Whether an exec is still running (an interpreter started ahead that has not exited).
pub(super) async fn exec_running(docker: &Docker, exec_id: &str) -> bool {
    docker
        .inspect_exec(exec_id)
        .await
        .is_ok_and(|inspected| inspected.running == Some(true))
}

/// Runs a short fixed command (no stdin) and returns its stdout, cut at `cap`.
pub(super) async fn run_fixed(
    docker: &Docker,
    id: &str,
    cmd: Vec<String>,
    timeout: Duration,
    cap: usize,
) -> Result<(String, Option<i32>), DockerError> {
    let (exec_id, mut output, _input) = start_exec(docker, id, cmd, false).await?;
    let mut stdout = Capped::default();
    let read = async {
        while let Some(frame) = output.next().await {
            if let Ok(bollard::container::LogOutput::StdOut { message }) = frame {
                stdout.push(&message, cap);
            }
        }
    };
    if tokio::time::timeout(timeout, read).await.is_err() {
        kill(docker, id).await;
        return Err(DockerError::Protocol(format!(
            "a housekeeping command did not finish within {timeout:?}"
        )));
    }
    let code = exit_code(docker, &exec_id).await?;
    Ok((String::from_utf8_lossy(&stdout.kept).into_owned(), code))
}

/// Reuse mode: wipes a container for the next run. `Ok(true)` only when nothing is left.
pub async fn wipe(docker: &Docker, id: &str) -> Result<bool, DockerError> {
    let cmd = vec!["sh".into(), "-c".into(), CLEAN_SH.into()];
    let (text, code) = run_fixed(docker, id, cmd, Duration::from_secs(10), 64 * 1024).await?;
    let clean = code == Some(0) && text.trim() == "clean";
    if !clean && text.trim() == "left: sysv-unverifiable" {
        // gVisor, every time: not news worth a log line per run.
        tracing::debug!(
            container = id,
            "the wipe cannot verify System V IPC here; the container is replaced"
        );
    } else if !clean {
        tracing::info!(container = id, report = %text.trim(), "a container could not be wiped; it is replaced");
    }
    Ok(clean)
}
