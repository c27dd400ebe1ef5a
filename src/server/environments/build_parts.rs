//! What every step of a build shares: the spec it builds, the tools it runs, its log, its
//! limits and the ways it fails.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::model::package_spec;

/// Longest one step (pip, npm) may take.
pub const STEP_DEADLINE: Duration = Duration::from_secs(20 * 60);
/// Most of a build's log kept (the end is kept when it is longer).
pub const MAX_LOG_BYTES: usize = 256 * 1024;
/// Prefix of a build's working folder in the store; what is left of one after a crash is
/// swept at the next start.
pub const WORK_PREFIX: &str = ".building-";
/// The store's download cache for builds that run no package code (wheels only).
pub const CACHE_DIR: &str = ".cache";
/// The most of a file a step left (pip's report, npm's lock) the console reads.
pub const MAX_LEFT: u64 = 32 * 1024 * 1024;

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
    pub(super) fn checked(&self) -> Result<Spec, BuildError> {
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
