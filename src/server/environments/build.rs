//! One build: pip and npm install a spec into a fresh folder beside the store, the lock is
//! written last, and the folder is renamed to its content address. Nothing is ever built in
//! place: a failed build leaves no folder, and a folder with a lock is complete. Every step
//! runs as untrusted code in a build sandbox (see [`steps`](super::steps)).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::json;
use sha2::{Digest, Sha256};

use super::{network, steps};
use crate::{
    model::{environment::LockedPackage, package_spec},
    sandbox::{
        environment::{self, MPLCONFIG_DIR, PYTHON_DIR},
        providers::local::build_jail,
    },
};

/// Longest one step (pip, npm) may take.
pub const STEP_DEADLINE: Duration = Duration::from_secs(20 * 60);
/// Most of a build's log kept (the end is kept when it is longer).
pub const MAX_LOG_BYTES: usize = 256 * 1024;
/// Prefix of a build's working folder in the store; what is left of one after a crash is
/// swept at the next start.
pub const WORK_PREFIX: &str = ".building-";
/// The store's download cache for builds that run no package code (wheels only).
pub const CACHE_DIR: &str = ".cache";

/// The programs a build runs, and where they fetch from.
#[derive(Clone, Debug)]
pub struct Tools {
    /// The interpreter whose pip installs the Python packages: the one sandboxes run.
    pub python: PathBuf,
    pub npm: PathBuf,
    /// `--index-url` for pip; `None`: whatever pip is configured with on this host.
    pub index_url: Option<String>,
    /// `--registry` for npm; `None`: whatever npm is configured with on this host.
    pub npm_registry: Option<String>,
    /// Where the console listens: a build never reaches it.
    pub console: Vec<SocketAddr>,
}

/// An environment's spec as a build takes it.
#[derive(Clone, Debug)]
pub struct Spec {
    pub python: Vec<String>,
    pub npm: Vec<String>,
    pub allow_sdists: bool,
}

impl Spec {
    /// The content address of a build of this spec with these tools: the same spec on the
    /// same host builds into the same folder.
    pub fn hash(&self, tools: &Tools) -> String {
        let canonical = json!({
            "python": self.python,
            "npm": self.npm,
            "allow_sdists": self.allow_sdists,
            "python_path": tools.python,
            "index_url": tools.index_url,
            "npm_registry": tools.npm_registry,
            "layout": 1,
        });
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        digest[..12].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The spec as the parser gives it back: a spec stored before the parser refused
    /// something (an option, a variable) fails here instead of reaching pip or npm.
    fn checked(&self) -> Result<Spec, BuildError> {
        let python = package_spec::parse_requirements(&self.python.join("\n"))
            .map_err(|e| BuildError::Invalid(format!("Python requirements: {e}")))?;
        let npm = package_spec::parse_npm(&self.npm.join("\n"))
            .map_err(|e| BuildError::Invalid(format!("npm packages: {e}")))?;
        Ok(Spec {
            python,
            npm,
            allow_sdists: self.allow_sdists,
        })
    }
}

/// The log of a build as it grows, shared with whoever shows it.
#[derive(Clone, Debug, Default)]
pub struct Log(Arc<Mutex<String>>);

impl Log {
    pub fn line(&self, line: &str) {
        let mut log = self.0.lock().expect("build log lock");
        log.push_str(line);
        log.push('\n');
        if log.len() > MAX_LOG_BYTES {
            let mut cut = log.len() - MAX_LOG_BYTES * 3 / 4;
            while !log.is_char_boundary(cut) {
                cut += 1;
            }
            log.replace_range(..cut, "[… the start of the log was cut …]\n");
        }
    }

    pub fn text(&self) -> String {
        self.0.lock().expect("build log lock").clone()
    }
}

/// How a step ended, for a sentence: its exit code, or a signal.
fn ended(code: &Option<i32>) -> String {
    match code {
        Some(code) => format!("exit code {code}"),
        None => "killed by a signal".into(),
    }
}

/// Why a build failed, in a sentence an admin can act on.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0} is not on the package index (no such project)")]
    UnknownPackage(String),
    #[error(
        "{0} has no wheel for this Python and platform, only a source distribution; building \
         it would run its code (in the build sandbox). Allow source distributions for this \
         environment to build it anyway"
    )]
    SdistOnly(String),
    #[error("no version of {0} satisfies the requirements (see the log for the versions found)")]
    NoMatchingVersion(String),
    #[error("the requirements conflict: {0}")]
    Conflict(String),
    #[error("the package index or registry cannot be reached: {0}")]
    Unreachable(String),
    #[error("the environment store is full ({0}): free space there and build again")]
    DiskFull(String),
    #[error("the stored spec is not accepted any more; save it again: {0}")]
    Invalid(String),
    #[error("this console cannot build environments: {0}")]
    NoSandbox(String),
    #[error("{step} failed ({}); the log says why", ended(code))]
    Step {
        step: &'static str,
        code: Option<i32>,
    },
    #[error("{0} took longer than {1} minutes and was stopped")]
    Deadline(&'static str, u64),
    #[error("{0}")]
    Io(String),
}

/// A failed file operation of the build, in words; a full disk says so.
pub(super) fn io(what: &str) -> impl Fn(std::io::Error) -> BuildError + '_ {
    move |e| match e.raw_os_error() {
        Some(28) => BuildError::DiskFull(format!("{what}: {e}")),
        _ => BuildError::Io(format!("{what}: {e}")),
    }
}

/// What a finished build reports.
pub struct Built {
    pub lock: Vec<LockedPackage>,
    pub size_bytes: i64,
    pub reused: bool,
}

/// Builds `spec` into `store/<hash>` unless a complete folder is there already.
pub async fn build(
    store: &Path,
    hash: &str,
    spec: &Spec,
    tools: &Tools,
    log: &Log,
    stage: &(dyn Fn(&str) + Send + Sync),
) -> Result<Built, BuildError> {
    let target = store.join(hash);
    if environment::is_complete(&target) {
        log.line(&format!(
            "A complete build of this spec is in the store already ({}): using it.",
            target.display()
        ));
        return finished(&target, true);
    }
    let spec = spec.checked()?;
    if let Some(why) = build_jail::unavailable() {
        return Err(BuildError::NoSandbox(why));
    }
    stage("resolving the package index");
    let reach = network::reach(tools, &tools.console).await?;
    std::fs::create_dir_all(store).map_err(io("cannot create the environment store"))?;
    let work = tempfile::Builder::new()
        .prefix(&super::collector::work_prefix(hash))
        .tempdir_in(store)
        .map_err(io("cannot create the build folder"))?;
    let dir = work.path();
    // Wheels only: nothing of a package runs, so builds may share what they downloaded.
    // With source distributions a package's setup.py runs, and must not reach other builds.
    let cache = if spec.allow_sdists {
        None
    } else {
        let cache = store.join(CACHE_DIR);
        std::fs::create_dir_all(&cache).map_err(io("cannot create the download cache"))?;
        build_jail::hand_over(&cache, true).map_err(io("cannot prepare the download cache"))?;
        Some(cache)
    };
    let steps = steps::Steps {
        folder: dir.to_owned(),
        cache,
        tools,
        reach: &reach,
        spec: &spec,
        log,
    };
    steps.prepare()?;
    let mut lock = Vec::new();
    if !spec.python.is_empty() {
        stage("installing Python packages");
        lock.extend(steps.pip().await?);
        if dir.join(PYTHON_DIR).join("matplotlib").is_dir() {
            stage("preparing matplotlib");
            steps.matplotlib().await?;
        }
    }
    if !spec.npm.is_empty() {
        stage("installing npm packages");
        lock.extend(steps.npm().await?);
    }
    build_jail::hand_over(dir, false).map_err(io("cannot take the build back"))?;
    let _ = std::fs::remove_file(dir.join(MPLCONFIG_DIR).join(".lock"));
    let lock_text = serde_json::to_string_pretty(&lock).unwrap_or_else(|_| "[]".into());
    std::fs::write(dir.join("lock.json"), lock_text).map_err(io("cannot write the lock"))?;
    let dir = work.keep();
    match std::fs::rename(&dir, &target) {
        Ok(()) => {}
        // Another console on the same store finished the same spec first: theirs is as good.
        Err(_) if environment::is_complete(&target) => {
            let _ = std::fs::remove_dir_all(&dir);
            log.line("Another build of the same spec finished first: using it.");
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(BuildError::Io(format!(
                "cannot move the build into place: {e}"
            )));
        }
    }
    log.line(&format!("Built into {}.", target.display()));
    finished(&target, false)
}

fn finished(dir: &Path, reused: bool) -> Result<Built, BuildError> {
    let text =
        std::fs::read_to_string(dir.join("lock.json")).map_err(io("cannot read the lock"))?;
    let lock = serde_json::from_str(&text)
        .map_err(|e| BuildError::Io(format!("the lock is damaged: {e}")))?;
    Ok(Built {
        lock,
        size_bytes: folder_size(dir) as i64,
        reused,
    })
}

fn folder_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => folder_size(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// The top-level Python modules and npm packages a build provides, to import in a sandbox.
pub fn modules(dir: &Path, lock: &[LockedPackage]) -> (Vec<String>, Vec<String>) {
    let mut python: Vec<String> = std::fs::read_dir(dir.join(PYTHON_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let module = if path.is_dir() {
                path.join("__init__.py").is_file().then_some(name)
            } else {
                name.strip_suffix(".py").map(str::to_owned)
            }?;
            let plain = !module.starts_with('_')
                && module
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            plain.then_some(module)
        })
        .collect();
    python.sort();
    let npm = lock
        .iter()
        .filter(|p| p.ecosystem == "npm" && p.requested)
        .map(|p| p.name.clone())
        .collect();
    (python, npm)
}
