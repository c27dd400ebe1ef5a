//! Package environments as providers see them: a read-only folder of installed Python and npm
//! packages, mounted at [`MOUNT_POINT`] in every sandbox of a provider whose settings name it.
//! The console builds and stores environments; providers only ask a [`Catalog`] which folder
//! a name stands for, when they are built.

use std::{
    fmt::Debug,
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::model::environment::NONE;

/// Where an environment appears inside a sandbox.
pub const MOUNT_POINT: &str = "/opt/sandbox-env";
/// The Python packages, relative to an environment's folder (a `pip install --target`).
pub const PYTHON_DIR: &str = "python";
/// The npm packages' `node_modules`, relative to an environment's folder.
pub const NODE_MODULES: &str = "node/node_modules";
/// matplotlib's prepared config and font cache, relative to an environment's folder; the
/// runner copies it into the sandbox's /tmp (matplotlib wants to write there).
pub const MPLCONFIG_DIR: &str = "mplconfig";

/// One ready build of a named environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub name: String,
    /// The build's content address (its folder's name).
    pub build: String,
    /// The build's folder on the host.
    pub dir: PathBuf,
    /// The modules a sandbox started ahead imports before its run (the environment's
    /// setting; those it has not installed are skipped).
    pub preload: Vec<String>,
    /// Held for as long as the mount is: a provider (and so every run in flight on it) keeps
    /// its build from being collected, whatever the grace.
    pub lease: Lease,
}

/// A hold on a build's folder: the catalog that handed it out knows while any copy lives
/// (the token is only ever counted, never read).
#[derive(Clone, Debug, Default)]
pub struct Lease(#[allow(dead_code)] Option<Arc<()>>);

impl Lease {
    pub fn new(token: Arc<()>) -> Self {
        Lease(Some(token))
    }
}

/// Leases never make two mounts differ: the same build is the same mount.
impl PartialEq for Lease {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Lease {}

/// What a name in a provider's Environment field stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// `none`, or the default when no default environment is set: the bare interpreter.
    Bare,
    /// The environment exists but has no ready build yet (its first build runs): runs use the
    /// bare interpreter until it is ready, and the provider is rebuilt then.
    Pending {
        name: String,
    },
    Ready(Mount),
}

impl Resolved {
    pub fn mount(&self) -> Option<&Mount> {
        match self {
            Resolved::Ready(mount) => Some(mount),
            _ => None,
        }
    }
}

/// Names to folders. `resolve("")` is the console's default environment.
pub trait Catalog: Debug + Send + Sync {
    /// `Err` names what is wrong with `name` for the settings form (an unknown name).
    fn resolve(&self, name: &str) -> Result<Resolved, String>;
}

/// A catalog without environments: every name but `none` and the default is unknown. For
/// tools and tests that run no environment.
#[derive(Debug, Default)]
pub struct NoEnvironments;

impl Catalog for NoEnvironments {
    fn resolve(&self, name: &str) -> Result<Resolved, String> {
        match name.trim() {
            "" | NONE => Ok(Resolved::Bare),
            other => Err(format!("There is no environment named '{other}'.")),
        }
    }
}

/// What a provider's `build` may consult beyond its settings.
#[derive(Clone, Debug)]
pub struct BuildContext {
    pub environments: Arc<dyn Catalog>,
    /// Where the console listens: sandboxes on an allow-list never reach these.
    pub console: Vec<std::net::SocketAddr>,
    /// Where sandboxes keep their host folders while they run (empty: the system's
    /// temporary folder).
    pub run_dir: std::path::PathBuf,
}

impl Default for BuildContext {
    fn default() -> Self {
        BuildContext {
            environments: Arc::new(NoEnvironments),
            console: Vec::new(),
            run_dir: std::path::PathBuf::new(),
        }
    }
}

/// The variables a sandbox gets so that an environment's packages work out of the box, with
/// or without one mounted: matplotlib draws without a display into a writable config folder,
/// and Node finds the environment's modules by name.
pub fn sandbox_env(mount: Option<&Mount>) -> Vec<(&'static str, String)> {
    let mut vars = vec![
        ("MPLBACKEND", "Agg".to_owned()),
        ("MPLCONFIGDIR", "/tmp/matplotlib".to_owned()),
        ("PYTHONUNBUFFERED", "1".to_owned()),
    ];
    if mount.is_some() {
        vars.push(("NODE_PATH", format!("{MOUNT_POINT}/{NODE_MODULES}")));
        // numpy's OpenBLAS would start one thread per core, each reserving memory, and a
        // small memory limit kills the import (measured at 256 MiB).
        vars.push(("OPENBLAS_NUM_THREADS", "1".to_owned()));
    }
    vars
}

/// Whether `dir` looks like a finished build (its lock is written last).
pub fn is_complete(dir: &Path) -> bool {
    dir.join("lock.json").is_file()
}
