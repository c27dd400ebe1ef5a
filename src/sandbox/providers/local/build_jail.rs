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
    Container, Namespace, Rlimit, Stdio,
};

use super::jail::{self, Watch};
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
/// The longest line of a step's output passed on (longer ones come in pieces).
const MAX_LINE: usize = 16 * 1024;

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
    let mut container = jail::base_container("build", network)?;
    // The console is root (see `unavailable`): no user namespace, so that `setpriv` can drop
    // to a real unprivileged user of the host rather than a root mapped onto the console's.
    container.share(Namespace::User);
    container.bindmount_rw(&step.folder.to_string_lossy(), MOUNT_POINT);
    if let Some(cache) = &step.cache {
        container.bindmount_rw(&cache.to_string_lossy(), CACHE_POINT);
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

    let writable: &[&str] = match step.cache {
        Some(_) => &[MOUNT_POINT, CACHE_POINT],
        None => &[MOUNT_POINT],
    };
    let config: Vec<&str> = TOOL_CONFIG
        .iter()
        .copied()
        .filter(|path| Path::new(path).exists())
        .collect();
    container.landlock_ruleset(jail::base_ruleset(&config, writable, network));
    container.seccomp_filter(jail::denied_syscalls());
    Ok(container)
}

/// Hands a folder the steps write to [`BUILD_USER`]: the build's fresh folder (everything the
/// console wrote in it) before the first step, or only the top of a cache folder (whatever is
/// in it was written by the build user already).
pub fn give(folder: &Path, recursive: bool) -> std::io::Result<()> {
    walk(folder, recursive, &|path| {
        std::os::unix::fs::lchown(path, Some(BUILD_UID), Some(BUILD_UID))
    })
}

/// Takes a build's folder back once its steps are over (no process of the build user is left:
/// each step's PID namespace ends with it): everything owned by the console again, with no
/// write bit for group or others and no set-id bit. Symbolic links are never followed.
pub fn take_back(folder: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    walk(folder, true, &|path| {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
        let meta = std::fs::symlink_metadata(path)?;
        if !meta.file_type().is_symlink() {
            let mode = meta.permissions().mode() & 0o755;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        }
        Ok(())
    })
}

/// `nobody`'s uid and gid on Debian.
const BUILD_UID: u32 = 65534;

fn walk(
    path: &Path,
    recursive: bool,
    each: &dyn Fn(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    each(path)?;
    let meta = std::fs::symlink_metadata(path)?;
    if recursive && meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            walk(&entry?.path(), true, each)?;
        }
    }
    Ok(())
}

/// Reads a file a step left, as data: a regular file (never through a symbolic link, never a
/// device or a pipe) of at most `cap` bytes.
pub fn read_left(path: &Path, cap: u64) -> std::io::Result<String> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if meta.len() > cap {
        return Err(std::io::Error::other(format!(
            "{} is over {cap} bytes",
            path.display()
        )));
    }
    std::fs::read_to_string(path)
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
                // Lines of any bytes, each cut at MAX_LINE (a step that prints without a
                // newline never grows the console's memory); a step's output is shown, never
                // trusted.
                let mut buffer = Vec::new();
                loop {
                    buffer.clear();
                    let read = (&mut reader)
                        .take(MAX_LINE as u64)
                        .read_until(b'\n', &mut buffer);
                    match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&buffer);
                            line(text.trim_end_matches(['\n', '\r']));
                        }
                    }
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
