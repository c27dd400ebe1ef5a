//! One sandboxed run with hakoniwa: a fresh set of namespaces, a read-only view of the host's
//! system folders, a private workspace, landlock, seccomp, rlimits, cgroups and a deadline.

use std::{
    os::unix::fs::MetadataExt,
    path::Path,
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use hakoniwa::{
    cgroups::{Memory, Pids, Resources},
    landlock::{CompatMode, FsAccess, Resource, Ruleset},
    seccomp::{Action, Filter},
    Container, Namespace, Rlimit,
};
use serde_json::{json, Map, Value};

use super::{oom::OomCount, LocalConfig};
use crate::{
    model::execution::{Artifact, ExecStatus, Language},
    sandbox::{
        egress::{self, files::NetworkFiles},
        environment::{self, Mount},
        runner::{self, ArtifactLimits, Job},
    },
};

/// A run on an allow-list: the files it reads (resolv.conf, CA bundle), and what serves its
/// TUN once the namespace exists.
pub struct Network<'a> {
    pub files: &'a NetworkFiles,
    pub serve: Box<dyn FnOnce(tun_rs::SyncDevice) -> std::io::Result<egress::Running> + Send + 'a>,
}

/// What of the host's /etc a run may read. The rest (shadow, gshadow, ssh host keys, daemon
/// configs) stays unreadable even though the run's user namespace maps the console's user.
const ETC_READABLE: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
    "/etc/alternatives",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/fonts",
    "/etc/locale.alias",
    // The shells' start-up files: E2B's clients run every command as `bash -l -c`.
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
];
const MIB: u64 = 1024 * 1024;
const EPERM: i32 = 1;
/// Syscalls a program never needs and an escape would: refused with EPERM.
const DENIED_SYSCALLS: &[&str] = &[
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "init_module",
    "finit_module",
    "delete_module",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "open_by_handle_at",
    "name_to_handle_at",
    "acct",
    "quotactl",
    "syslog",
    "iopl",
    "ioperm",
];

/// What a finished run left behind, before the protocol reads it.
pub struct RawRun {
    /// `None` when the process was killed by a signal.
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// A limit the run hit, when one did.
    pub limit: Option<ExecStatus>,
    pub artifacts: Vec<Artifact>,
    pub skipped_artifacts: Vec<String>,
    /// What the run did on the network, when it ran on an allow-list.
    pub egress: Option<crate::model::egress::EgressReport>,
}

pub(super) fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// What every sandbox of this host shares, the run's and the build's: the host's root
/// read-only (only /bin, /etc, /lib*, /sbin and /usr are visible), its own network namespace
/// (loopback alone) unless it runs on an allow-list (then it shares the forking thread's, whose
/// one way out is the console's TUN, and reads the network files), its own IPC and UTS
/// namespaces, a fresh /dev and /tmp.
pub(super) fn base_container(
    hostname: &str,
    network: Option<&NetworkFiles>,
) -> Result<Container, String> {
    let mut container = Container::new();
    container
        .rootfs("/")
        .map_err(|e| format!("cannot prepare the sandbox root: {e}"))?;
    if network.is_none() {
        container.unshare(Namespace::Network);
    }
    container
        .unshare(Namespace::Ipc)
        .unshare(Namespace::Uts)
        .hostname(hostname)
        .devfsmount("/dev")
        .tmpfsmount("/tmp");
    if let Some(files) = network {
        container.bindmount_ro(&files.dir().to_string_lossy(), egress::files::MOUNT_POINT);
        container.bindmount_ro(&files.resolv_conf().to_string_lossy(), "/etc/resolv.conf");
        container.bindmount_ro(&files.hosts().to_string_lossy(), "/etc/hosts");
    }
    Ok(container)
}

/// The landlock rules every sandbox starts from: no TCP bind, no TCP connect at all without
/// network (on an allow-list every connect() must reach the console, which decides and logs
/// it; a landlock refusal would go unseen), read and execute on the system folders, the
/// readable part of /etc and `readable` (paths that exist in the sandbox), the network files
/// when on an allow-list, and full access to `writable` (with /tmp and /dev).
pub(super) fn base_ruleset(
    readable: &[&str],
    writable: &[&str],
    network: Option<&NetworkFiles>,
) -> Ruleset {
    let mut ruleset = Ruleset::default();
    ruleset.restrict(Resource::FS, CompatMode::Relax);
    ruleset.restrict(Resource::NET_TCP_BIND, CompatMode::Relax);
    if network.is_none() {
        ruleset.restrict(Resource::NET_TCP_CONNECT, CompatMode::Relax);
    }
    let read_exec = FsAccess::R | FsAccess::X;
    let system = ["/bin", "/lib", "/lib64", "/sbin", "/usr", "/proc"];
    for path in system.iter().chain(ETC_READABLE) {
        if Path::new(path).exists() {
            ruleset.allow_path(path, read_exec);
        }
    }
    for path in readable {
        ruleset.allow_path(path, read_exec);
    }
    if network.is_some() {
        ruleset.allow_path(egress::files::MOUNT_POINT, FsAccess::R);
        ruleset.allow_path("/etc/resolv.conf", FsAccess::R);
    }
    let read_write = FsAccess::R | FsAccess::W | FsAccess::X;
    for path in ["/tmp", "/dev"].iter().chain(writable) {
        ruleset.allow_path(path, read_write);
    }
    ruleset
}

/// The seccomp filter every sandbox runs under: [`DENIED_SYSCALLS`] refused with EPERM.
pub(super) fn denied_syscalls() -> Filter {
    let mut filter = Filter::new(Action::Allow);
    for syscall in DENIED_SYSCALLS {
        filter.add_rule(Action::Errno(EPERM), syscall);
    }
    filter
}

/// A container whose `workspace` (`/workspace` for runs) is a fresh tmpfs (its files count against the run's memory
/// limit and never touch the host's disk), with `artifacts_dir` bound at `/workspace/artifacts`
/// when the run's files are to come back.
/// Sessions have theirs at `/home/user`, where E2B's clients look for files.
pub(super) fn container(
    config: &LocalConfig,
    mount: Option<&Mount>,
    artifacts_dir: Option<&Path>,
    language: Language,
    timeout: Duration,
    network: Option<&NetworkFiles>,
    workspace: &str,
) -> Result<Container, String> {
    let mut container = base_container("sandbox", network)?;
    container.tmpfsmount(workspace);
    if let Some(dir) = artifacts_dir {
        container.bindmount_rw(
            &dir.to_string_lossy(),
            &format!("{workspace}/{}", runner::ARTIFACT_DIR),
        );
    }
    if let Some(mount) = mount {
        container.bindmount_ro(&mount.dir.to_string_lossy(), environment::MOUNT_POINT);
    }

    let cpu_secs = timeout.as_secs() + 1;
    container
        .setrlimit(Rlimit::Cpu, cpu_secs, cpu_secs + 1)
        .setrlimit(
            Rlimit::Fsize,
            config.max_artifact_bytes,
            config.max_artifact_bytes,
        )
        .setrlimit(Rlimit::Nofile, 256, 256)
        .setrlimit(Rlimit::Core, 0, 0);

    let memory = i64::from(config.memory_mb) * MIB as i64;
    if running_as_root() {
        let mut resources = Resources::default();
        resources.memory(Memory::default().limit(memory).swap(memory).clone());
        resources.pids(
            Pids::default()
                .limit(i64::from(config.max_processes))
                .clone(),
        );
        container.cgroups_resources(resources);
    } else if language == Language::Python {
        // Without cgroups, an address-space limit is the memory guard for Python. Node reserves
        // far more address space than it uses and cannot run under one (measured).
        container.setrlimit(Rlimit::As, memory as u64, memory as u64);
    }

    let readable: &[&str] = match mount {
        Some(_) => &[environment::MOUNT_POINT],
        None => &[],
    };
    container.landlock_ruleset(base_ruleset(readable, &[workspace], network));
    container.seccomp_filter(denied_syscalls());
    Ok(container)
}

/// How long past its deadline a sandbox may take before the watchdog kills its supervisor:
/// hakoniwa's own deadline lives in the supervisor, which a SIGSTOP (or a bug) can freeze.
pub const KILL_MARGIN: Duration = Duration::from_secs(3);

/// What ends a sandbox early: its run was abandoned (the task that waited for it is gone),
/// or it finished (the watchdog then has nothing to do).
#[derive(Debug)]
pub enum Stop {
    Abandoned,
    Finished,
}

/// The other end of a run's watchdog: dropping it (the async side of the run went away,
/// say at shutdown) kills the sandbox at once.
#[derive(Debug)]
pub struct KillOnDrop(mpsc::Sender<Stop>);

impl KillOnDrop {
    /// Kills the sandbox now (as dropping this does).
    pub fn kill(&self) {
        let _ = self.0.send(Stop::Abandoned);
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // After a finished run the watchdog is gone and nobody hears this; that is fine.
        let _ = self.0.send(Stop::Abandoned);
    }
}

/// A run's stop channel: the sender for the async side, the receiver for [`run`].
pub fn stop_channel() -> (KillOnDrop, Watch) {
    let (tx, rx) = mpsc::channel();
    (KillOnDrop(tx.clone()), Watch { tx, rx })
}

/// The run side of a stop channel.
#[derive(Debug)]
pub struct Watch {
    tx: mpsc::Sender<Stop>,
    rx: mpsc::Receiver<Stop>,
}

/// Kills the sandbox's supervisor (and so, through its parent-death signal, the namespace's
/// PID 1 and everything in it) when the outer deadline passes or the run is abandoned. A
/// pidfd names the process, so a reaped and reused pid is never signalled.
pub(super) fn watchdog(
    child_pid: u32,
    deadline: Duration,
    watch: Watch,
) -> Result<mpsc::Sender<Stop>, String> {
    let pid = rustix::process::Pid::from_raw(child_pid as i32)
        .ok_or_else(|| "the sandbox has no pid".to_owned())?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        .map_err(|e| format!("cannot watch the sandbox: {e}"))?;
    let Watch { tx, rx } = watch;
    thread::Builder::new()
        .name("sandbox-watchdog".into())
        .spawn(move || {
            let kill = match rx.recv_timeout(deadline) {
                Ok(Stop::Finished) | Err(mpsc::RecvTimeoutError::Disconnected) => false,
                Ok(Stop::Abandoned) => true,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    tracing::warn!(
                        ?deadline,
                        "a local sandbox outlived its deadline (frozen supervisor?); killing it"
                    );
                    true
                }
            };
            if kill {
                let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            }
        })
        .map_err(|e| format!("cannot start the sandbox watchdog: {e}"))?;
    Ok(tx)
}

/// Runs `job` in a fresh sandbox and waits for it, at most `timeout` (hakoniwa's deadline),
/// and in any case no more than `timeout` + [`KILL_MARGIN`], or until `watch` says the run
/// was abandoned.
pub fn run(
    config: &LocalConfig,
    mount: Option<&Mount>,
    job: &Job,
    timeout: Duration,
    limits: ArtifactLimits,
    watch: Watch,
    network: Option<Network<'_>>,
) -> Result<RawRun, String> {
    let Some(network) = network else {
        return run_in(config, mount, job, timeout, limits, watch, None);
    };
    let Network { files, serve } = network;
    egress::namespace::in_new(|device| {
        // Served while this thread waits for the sandbox; closed when it returns, whatever
        // happened (the async side reads the report after).
        let _running =
            serve(device).map_err(|e| format!("cannot serve the sandbox's network: {e}"))?;
        run_in(config, mount, job, timeout, limits, watch, Some(files))
    })
    .map_err(|e| format!("cannot give the sandbox its network: {e}"))?
}

/// How a run's private host folder is named, in the run folder: one per sandbox running a
/// program.
pub const RUN_FOLDER_PREFIX: &str = "sandbox-console-run-";
/// How a sandbox started ahead names its folder while it waits (renamed with the run prefix
/// when its run arrives).
pub const AHEAD_FOLDER_PREFIX: &str = "sandbox-console-ahead-";

/// A run's private host folder in the run folder, and its artifacts folder in it (the only
/// part of a run that lives on the host; deleted with the folder after the run).
pub(super) fn host_folder(
    config: &LocalConfig,
    prefix: &str,
) -> Result<(tempfile::TempDir, std::path::PathBuf), String> {
    let run_dir = if config.run_dir.as_os_str().is_empty() {
        std::env::temp_dir()
    } else {
        config.run_dir.clone()
    };
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| format!("cannot create the run folder {}: {e}", run_dir.display()))?;
    let host = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&run_dir)
        .map_err(|e| format!("cannot create the artifacts folder: {e}"))?;
    let artifacts_dir = host.path().join(runner::ARTIFACT_DIR);
    std::fs::create_dir(&artifacts_dir)
        .map_err(|e| format!("cannot create the artifacts folder: {e}"))?;
    Ok((host, artifacts_dir))
}

/// [`run`] in the calling thread's network namespace, or in a new one of its own.
fn run_in(
    config: &LocalConfig,
    mount: Option<&Mount>,
    job: &Job,
    timeout: Duration,
    limits: ArtifactLimits,
    watch: Watch,
    network: Option<&NetworkFiles>,
) -> Result<RawRun, String> {
    let (host, artifacts_dir) = host_folder(config, RUN_FOLDER_PREFIX)?;
    let mut container = container(
        config,
        mount,
        Some(&artifacts_dir),
        job.language,
        timeout,
        network,
        "/workspace",
    )?;
    for file in &job.files {
        let text = std::str::from_utf8(&file.contents)
            .map_err(|_| format!("{} is not UTF-8 text", file.name))?;
        container.file(&format!("/workspace/{}", file.name), text);
    }
    let mut command = super::command::interpreter_command(
        &container,
        config,
        job.language,
        "/workspace",
        mount,
        network,
        timeout,
    );
    command.args(&job.interpreter_args);

    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start the sandbox: {e}"))?;
    let oom = OomCount::of(child.id());
    let finished = match watchdog(child.id(), timeout + KILL_MARGIN, watch) {
        Ok(finished) => finished,
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
    };
    drop(child.stdin.take());
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    super::finish::finish(
        child,
        super::finish::Pipes { stdout, stderr },
        super::finish::Watched { oom, finished },
        super::finish::Clock {
            started,
            timeout,
            own: true,
        },
        config.max_output_bytes as usize,
        host.path(),
        limits,
    )
}

/// The health check: starts a sandbox and checks from inside that it is one.
pub fn probe(config: &LocalConfig, mount: Option<&Mount>) -> Result<Map<String, Value>, String> {
    let probe = "import os, socket\n\
                 print(os.getpid(), len(socket.if_nameindex()), os.access('/usr', os.W_OK), os.path.exists('/work'))";
    let container = container(
        config,
        mount,
        None,
        Language::Python,
        Duration::from_secs(5),
        None,
        "/workspace",
    )?;
    let started = Instant::now();
    let output = container
        .command(&config.python_path)
        .args(["-I", "-c", probe])
        .current_dir("/workspace")
        .wait_timeout(5)
        .output()
        .map_err(|e| format!("the kernel refused to create the sandbox: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said = match stderr.trim() {
            "" => String::new(),
            text => format!(": {text}"),
        };
        return Err(format!(
            "the probe with {} failed ({}){said}",
            config.python_path, output.status.reason
        ));
    }
    match text.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["1", "1", "False", "False"] => Ok(Map::from_iter([
            ("probe_ms".to_owned(), json!(started.elapsed().as_millis() as u64)),
            ("cgroups".to_owned(), json!(running_as_root())),
            ("python".to_owned(), json!(config.python_path)),
            ("node".to_owned(), json!(config.node_path)),
            (
                "environment".to_owned(),
                json!(mount.map_or("none", |m| m.name.as_str())),
            ),
        ])),
        other => Err(format!("the probe saw a leaky sandbox (pid, interfaces, /usr writable, host files visible): {other:?}")),
    }
}
