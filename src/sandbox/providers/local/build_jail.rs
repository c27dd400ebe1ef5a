//! One step of an environment build (pip, npm, matplotlib's font cache) as the untrusted code
//! it is: a package's metadata, and with source distributions allowed its `setup.py`, come
//! from the index. The step runs in a jail of its own: fresh namespaces, the host's system
//! folders read-only, the build's folder as the only writable place besides tmpfs, landlock,
//! seccomp and cgroup limits, as the unprivileged user `nobody`, with exactly the variables
//! it is given, and with network only to the package index through the console's allow-list
//! machinery (a fresh network namespace whose one way out is the console's TUN).

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    sync::Arc,
    thread,
    time::Duration,
};

use hakoniwa::{
    cgroups::{Memory, Pids, Resources},
    landlock::{CompatMode, FsAccess, Resource, Ruleset},
    seccomp::{Action, Filter},
    Container, Namespace, Rlimit, Stdio,
};

use super::jail::{self, Watch, DENIED_SYSCALLS, ETC_READABLE};
use crate::{
    model::egress::EgressReport,
    sandbox::{
        egress::{self, files::NetworkFiles, Policy},
        environment::MOUNT_POINT,
    },
};

/// Where a step's cache folder appears, when it has one.
pub const CACHE_POINT: &str = "/opt/sandbox-cache";
/// The user a step runs as: nobody owns nothing of the host's.
const BUILD_USER: &str = "nobody";
const BUILD_GROUP: &str = "nogroup";
/// Drops to [`BUILD_USER`] with no capabilities left, then runs the step's program.
const SETPRIV: &str = "/usr/bin/setpriv";
/// Host configuration pip and npm read besides the system folders: where the admin points
/// them at a CA bundle or a mirror (`/usr/etc/npmrc` is under `/usr`).
const TOOL_CONFIG: &[&str] = &["/etc/pip.conf", "/etc/xdg/pip", "/etc/npmrc"];
const MIB: i64 = 1024 * 1024;
/// Memory (with its tmpfs), processes and descriptors one step may use.
const MEMORY: i64 = 2048 * MIB;
const MAX_PROCESSES: i64 = 256;
const MAX_OPEN_FILES: u64 = 4096;
/// The largest file a step may write (a wheel, a shared library).
const MAX_FILE_BYTES: u64 = 2048 * 1024 * 1024;
const EPERM: i32 = 1;

/// One step: a trusted program (the interpreter's pip, npm) with arguments the console wrote.
#[derive(Clone, Debug)]
pub struct BuildStep {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The only variables the step sees.
    pub env: Vec<(String, String)>,
    /// The build's folder on the host, bound read-write at [`MOUNT_POINT`] (where runs will
    /// see it, so paths written into it are already right). Owned by [`BUILD_USER`] while the
    /// step runs.
    pub folder: PathBuf,
    /// A cache folder bound read-write at [`CACHE_POINT`], when the step may keep one.
    pub cache: Option<PathBuf>,
    pub deadline: Duration,
    /// Where the step may connect; `None`: nowhere.
    pub network: Option<Arc<Policy>>,
}

/// How a step ended.
#[derive(Debug)]
pub struct StepExit {
    /// `None` when it was killed by a signal (its deadline among them).
    pub code: Option<i32>,
    pub timed_out: bool,
    pub egress: Option<EgressReport>,
}

/// Why a build cannot run here at all (asked before a build starts, so it fails in words).
pub fn unavailable() -> Option<String> {
    if !jail::running_as_root() {
        return Some(
            "environment builds run as untrusted code in a sandbox of their own, with network \
             only to the package index: that needs the console to run as root (it creates the \
             sandbox's network namespace and drops the build to the user nobody)"
                .into(),
        );
    }
    if !Path::new(SETPRIV).exists() {
        return Some(format!(
            "{SETPRIV} (util-linux) is missing: builds drop to the user nobody with it"
        ));
    }
    None
}

fn container(step: &BuildStep, network: Option<&NetworkFiles>) -> Result<Container, String> {
    let mut container = Container::new();
    // The console is root (see `unavailable`): no user namespace, so that `setpriv` can drop
    // to a real unprivileged user of the host rather than a root mapped onto the console's.
    container.share(Namespace::User);
    container
        .rootfs("/")
        .map_err(|e| format!("cannot prepare the build sandbox's root: {e}"))?;
    if network.is_none() {
        container.unshare(Namespace::Network);
    }
    container
        .unshare(Namespace::Ipc)
        .unshare(Namespace::Uts)
        .hostname("build")
        .devfsmount("/dev")
        .tmpfsmount("/tmp")
        .bindmount_rw(&step.folder.to_string_lossy(), MOUNT_POINT);
    if let Some(cache) = &step.cache {
        container.bindmount_rw(&cache.to_string_lossy(), CACHE_POINT);
    }
    if let Some(files) = network {
        container.bindmount_ro(&files.dir().to_string_lossy(), egress::files::MOUNT_POINT);
        container.bindmount_ro(&files.resolv_conf().to_string_lossy(), "/etc/resolv.conf");
    }
    let cpu = step.deadline.as_secs() + 1;
    container
        .setrlimit(Rlimit::Cpu, cpu, cpu + 1)
        .setrlimit(Rlimit::Fsize, MAX_FILE_BYTES, MAX_FILE_BYTES)
        .setrlimit(Rlimit::Nofile, MAX_OPEN_FILES, MAX_OPEN_FILES)
        .setrlimit(Rlimit::Core, 0, 0);
    let mut resources = Resources::default();
    resources.memory(Memory::default().limit(MEMORY).swap(MEMORY).clone());
    resources.pids(Pids::default().limit(MAX_PROCESSES).clone());
    container.cgroups_resources(resources);

    let mut ruleset = Ruleset::default();
    ruleset.restrict(Resource::FS, CompatMode::Relax);
    ruleset.restrict(Resource::NET_TCP_BIND, CompatMode::Relax);
    if network.is_none() {
        ruleset.restrict(Resource::NET_TCP_CONNECT, CompatMode::Relax);
    }
    let read_exec = FsAccess::R | FsAccess::X;
    let system = ["/bin", "/lib", "/lib64", "/sbin", "/usr", "/proc"];
    for path in system.iter().chain(ETC_READABLE).chain(TOOL_CONFIG) {
        if Path::new(path).exists() {
            ruleset.allow_path(path, read_exec);
        }
    }
    if network.is_some() {
        ruleset.allow_path(egress::files::MOUNT_POINT, FsAccess::R);
        ruleset.allow_path("/etc/resolv.conf", FsAccess::R);
    }
    let read_write = FsAccess::R | FsAccess::W | FsAccess::X;
    for path in ["/tmp", "/dev", MOUNT_POINT] {
        ruleset.allow_path(path, read_write);
    }
    if step.cache.is_some() {
        ruleset.allow_path(CACHE_POINT, read_write);
    }
    container.landlock_ruleset(ruleset);

    let mut filter = Filter::new(Action::Allow);
    for syscall in DENIED_SYSCALLS {
        filter.add_rule(Action::Errno(EPERM), syscall);
    }
    container.seccomp_filter(filter);
    Ok(container)
}

/// Hands the folders the step writes to [`BUILD_USER`] (before) or back to the console
/// (after), everything in them included.
pub fn hand_over(folder: &Path, to_build_user: bool) -> std::io::Result<()> {
    let (uid, gid) = if to_build_user {
        (65534, 65534)
    } else {
        (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
        )
    };
    fn walk(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
        if path.is_dir() && !path.is_symlink() {
            for entry in std::fs::read_dir(path)? {
                walk(&entry?.path(), uid, gid)?;
            }
        }
        Ok(())
    }
    walk(folder, uid, gid)
}

/// Runs `step` and waits for it (at most its deadline, then it is killed), passing each line
/// it prints to `line`; `watch` kills it at once when the build is abandoned.
pub fn run(
    step: &BuildStep,
    line: Arc<dyn Fn(&str) + Send + Sync>,
    watch: Watch,
    runtime: tokio::runtime::Handle,
) -> Result<StepExit, String> {
    let Some(policy) = step.network.clone() else {
        return run_in(step, line, watch, None).map(|(code, timed_out)| StepExit {
            code,
            timed_out,
            egress: None,
        });
    };
    let files = NetworkFiles::create("")
        .map_err(|e| format!("cannot write the build sandbox's network files: {e}"))?;
    let session = egress::Session::new(policy);
    let serving = session.clone();
    let ran = egress::namespace::in_new(|device| {
        let _running = {
            let _runtime = runtime.enter();
            egress::serve(device, serving)
                .map_err(|e| format!("cannot serve the build sandbox's network: {e}"))?
        };
        run_in(step, line, watch, Some(&files))
    })
    .map_err(|e| format!("cannot give the build sandbox its network: {e}"))??;
    Ok(StepExit {
        code: ran.0,
        timed_out: ran.1,
        egress: Some(session.finish()),
    })
}

fn run_in(
    step: &BuildStep,
    line: Arc<dyn Fn(&str) + Send + Sync>,
    watch: Watch,
    network: Option<&NetworkFiles>,
) -> Result<(Option<i32>, bool), String> {
    let container = container(step, network)?;
    let mut command = container.command(SETPRIV);
    command
        .args([
            "--reuid",
            BUILD_USER,
            "--regid",
            BUILD_GROUP,
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ])
        .arg(&step.program.to_string_lossy())
        .args(&step.args)
        .current_dir(MOUNT_POINT);
    for (name, value) in &step.env {
        command.env(name, value);
    }
    command
        .wait_timeout(step.deadline.as_secs().max(1))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = std::time::Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start the build sandbox: {e}"))?;
    let finished = match jail::watchdog(child.id(), step.deadline + jail::KILL_MARGIN, watch) {
        Ok(finished) => finished,
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
    };
    drop(child.stdin.take());
    let pump = |pipe: Option<Box<dyn Read + Send>>| {
        let line = line.clone();
        pipe.map(|pipe| {
            thread::spawn(move || {
                let mut reader = BufReader::new(pipe);
                let mut buffer = Vec::new();
                // Lines of any bytes; a step's output is shown, never trusted.
                while reader.read_until(b'\n', &mut buffer).is_ok_and(|n| n > 0) {
                    let text = String::from_utf8_lossy(&buffer);
                    line(text.trim_end_matches(['\n', '\r']));
                    buffer.clear();
                }
            })
        })
    };
    let stdout = pump(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = pump(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = child.wait();
    let _ = finished.send(jail::Stop::Finished);
    for reader in [stdout, stderr].into_iter().flatten() {
        let _ = reader.join();
    }
    let status = status.map_err(|e| format!("lost the build sandbox: {e}"))?;
    if status.exit_code.is_none() && status.code == 125 {
        return Err(format!(
            "the build sandbox could not start: {}",
            status.reason
        ));
    }
    let timed_out = status.exit_code.is_none() && started.elapsed() >= step.deadline;
    Ok((status.exit_code, timed_out))
}
