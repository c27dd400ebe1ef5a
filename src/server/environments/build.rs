//! One build: pip and npm install a spec into a fresh folder beside the store, the lock is
//! written last, and the folder is renamed to its content address. Nothing is ever built in
//! place: a failed build leaves no folder, and a folder with a lock is complete. Every step
//! runs as untrusted code in a build sandbox (see [`steps`](super::steps)).

use std::path::Path;

use super::{
    build_parts::{io, BuildError, Log, Spec, Tools, CACHE_DIR, MAX_LEFT},
    network, steps,
};
use crate::{
    model::environment::LockedPackage,
    sandbox::{
        environment::{self, MPLCONFIG_DIR, PYTHON_DIR},
        providers::local::build_jail,
    },
};

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
        build_jail::give(&cache, false).map_err(io("cannot prepare the download cache"))?;
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
    build_jail::take_back(dir).map_err(io("cannot take the build back"))?;
    // What the steps left is data: nothing in the folder is followed as a link from here on.
    let config = dir.join(MPLCONFIG_DIR);
    if std::fs::symlink_metadata(&config).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_file(config.join(".lock"));
    }
    let lock_text = serde_json::to_string_pretty(&lock).unwrap_or_else(|_| "[]".into());
    write_new(&dir.join("lock.json"), &lock_text).map_err(io("cannot write the lock"))?;
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

/// Writes `text` to a new file at `path`, removing whatever a step left there first (a
/// symbolic link is removed, never followed).
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)?
        .write_all(text.as_bytes())
}

fn finished(dir: &Path, reused: bool) -> Result<Built, BuildError> {
    let text = build_jail::read_left(&dir.join("lock.json"), MAX_LEFT)
        .map_err(io("cannot read the lock"))?;
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
