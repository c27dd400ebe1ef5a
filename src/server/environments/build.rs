//! One build: pip and npm install a spec into a fresh folder beside the store, the lock is
//! written last, and the folder is renamed to its content address. Nothing is ever built in
//! place: a failed build leaves no folder, and a folder with a lock is complete.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, BufReader},
    process::Command,
};

use crate::{
    model::environment::{self as model, LockedPackage},
    sandbox::environment::{self, MOUNT_POINT, MPLCONFIG_DIR, NODE_MODULES, PYTHON_DIR},
};

/// Longest one step (pip, npm) may take.
pub const STEP_DEADLINE: Duration = Duration::from_secs(20 * 60);
/// Most of a build's log kept (the end is kept when it is longer).
pub const MAX_LOG_BYTES: usize = 256 * 1024;

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

/// Why a build failed, in a sentence an admin can act on.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0} is not on the package index (no such project)")]
    UnknownPackage(String),
    #[error(
        "{0} has no wheel for this Python and platform, only a source distribution; building \
         it would run its code on this host. Allow source distributions for this environment \
         to build it anyway"
    )]
    SdistOnly(String),
    #[error("no version of {0} satisfies the requirements (see the log for the versions found)")]
    NoMatchingVersion(String),
    #[error("the requirements conflict: {0}")]
    Conflict(String),
    #[error("the package index or registry cannot be reached: {0}")]
    Unreachable(String),
    #[error("{step} failed (exit code {code:?}); the log says why")]
    Step {
        step: &'static str,
        code: Option<i32>,
    },
    #[error("{0} took longer than {1} minutes and was stopped")]
    Deadline(&'static str, u64),
    #[error("{0}")]
    Io(String),
}

fn io(what: &str) -> impl Fn(std::io::Error) -> BuildError + '_ {
    move |e| BuildError::Io(format!("{what}: {e}"))
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
    std::fs::create_dir_all(store).map_err(io("cannot create the environment store"))?;
    let work = tempfile::Builder::new()
        .prefix(&format!(".building-{hash}-"))
        .tempdir_in(store)
        .map_err(io("cannot create the build folder"))?;
    let dir = work.path();

    let mut lock = Vec::new();
    if !spec.python.is_empty() {
        stage("installing Python packages");
        lock.extend(pip(dir, spec, tools, log).await?);
        if dir.join(PYTHON_DIR).join("matplotlib").is_dir() {
            stage("preparing matplotlib");
            prepare_matplotlib(dir, tools, log).await?;
        }
    }
    if !spec.npm.is_empty() {
        stage("installing npm packages");
        lock.extend(npm(dir, spec, tools, log).await?);
    }
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

async fn pip(
    dir: &Path,
    spec: &Spec,
    tools: &Tools,
    log: &Log,
) -> Result<Vec<LockedPackage>, BuildError> {
    let requirements = dir.join("requirements.txt");
    std::fs::write(&requirements, spec.python.join("\n") + "\n")
        .map_err(io("cannot write the requirements"))?;
    let report = dir.join("pip-report.json");
    let mut command = Command::new(&tools.python);
    command
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
        ])
        .args(["--progress-bar", "off", "--no-warn-script-location"])
        .arg("--target")
        .arg(dir.join(PYTHON_DIR))
        .arg("--report")
        .arg(&report)
        .arg("-r")
        .arg(&requirements);
    if !spec.allow_sdists {
        command.arg("--only-binary=:all:");
    }
    if let Some(index) = &tools.index_url {
        command.args(["--index-url", index]);
    }
    log.line(&format!("$ pip install {}", spec.python.join(" ")));
    let (code, output) = run(command, log, "pip").await?;
    if code != Some(0) {
        return Err(diagnose_pip(&output, spec, tools, log)
            .await
            .unwrap_or(BuildError::Step { step: "pip", code }));
    }
    let text = std::fs::read_to_string(&report).map_err(io("cannot read pip's report"))?;
    let _ = std::fs::remove_file(&report);
    let report: Value =
        serde_json::from_str(&text).map_err(|e| BuildError::Io(format!("pip's report: {e}")))?;
    let mut lock: Vec<LockedPackage> = report["install"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| LockedPackage {
            ecosystem: "pypi".into(),
            name: item["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            version: item["metadata"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            requested: item["requested"].as_bool().unwrap_or(false),
        })
        .collect();
    lock.sort_by_key(|p| model::normalize(&p.name));
    Ok(lock)
}

/// pip says "from versions: none" alike for an unknown project, a project with only source
/// distributions and an index it could not reach; a second, verbose look at the one
/// requirement it names tells them apart.
async fn diagnose_pip(output: &str, spec: &Spec, tools: &Tools, log: &Log) -> Option<BuildError> {
    if let Some(conflict) = output.lines().find(|l| l.contains("conflict")) {
        if output.contains("ResolutionImpossible") {
            return Some(BuildError::Conflict(conflict.trim().to_owned()));
        }
    }
    let missing = output
        .lines()
        .find_map(|l| l.split_once("No matching distribution found for "))
        .map(|(_, rest)| rest.trim().to_owned())?;
    let mut command = Command::new(&tools.python);
    command
        .args([
            "-m",
            "pip",
            "download",
            "-vv",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .args(["--no-input", "--dest"])
        .arg(std::env::temp_dir().join("sandbox-console-pip-probe"))
        .arg(&missing);
    if !spec.allow_sdists {
        command.arg("--only-binary=:all:");
    }
    if let Some(index) = &tools.index_url {
        command.args(["--index-url", index]);
    }
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let probe = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&probe.stdout).into_owned()
        + &String::from_utf8_lossy(&probe.stderr);
    let name = model::requirement_name(&missing);
    let why = if text.contains("No sources permitted for") || text.contains("No binaries permitted")
    {
        BuildError::SdistOnly(name)
    } else if text.contains("\" 404 ") || text.contains("404 Client Error") {
        BuildError::UnknownPackage(name)
    } else if let Some(line) = text.lines().find(|l| {
        l.contains("Failed to establish a new connection")
            || l.contains("Name or service not known")
            || l.contains("Temporary failure in name resolution")
            || l.contains("Connection refused")
    }) {
        BuildError::Unreachable(line.trim().chars().take(300).collect())
    } else {
        BuildError::NoMatchingVersion(missing.clone())
    };
    log.line(&format!("Diagnosis: {why}"));
    Some(why)
}

async fn prepare_matplotlib(dir: &Path, tools: &Tools, log: &Log) -> Result<(), BuildError> {
    let config = dir.join(MPLCONFIG_DIR);
    std::fs::create_dir_all(&config).map_err(io("cannot create matplotlib's config"))?;
    std::fs::write(config.join("matplotlibrc"), "backend: Agg\n")
        .map_err(io("cannot write matplotlibrc"))?;
    let packages = dir.join(PYTHON_DIR);
    let mut command = Command::new(&tools.python);
    command
        .args(["-I", "-c"])
        .arg("import sys; sys.path.insert(1, sys.argv[1]); import matplotlib.font_manager")
        .arg(&packages)
        .env("MPLCONFIGDIR", &config)
        .env("MPLBACKEND", "Agg");
    let (code, _) = run(command, log, "matplotlib's font cache").await?;
    if code != Some(0) {
        return Err(BuildError::Step {
            step: "matplotlib's font cache",
            code,
        });
    }
    // The cache names font files by path: as the sandbox will see them.
    let built_at = packages.to_string_lossy().into_owned();
    let seen_at = format!("{MOUNT_POINT}/{PYTHON_DIR}");
    for entry in std::fs::read_dir(&config)
        .map_err(io("matplotlib's config"))?
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).map_err(io("matplotlib's font cache"))?;
            std::fs::write(&path, text.replace(&built_at, &seen_at))
                .map_err(io("matplotlib's font cache"))?;
        }
    }
    Ok(())
}

async fn npm(
    dir: &Path,
    spec: &Spec,
    tools: &Tools,
    log: &Log,
) -> Result<Vec<LockedPackage>, BuildError> {
    let root = dir.join("node");
    std::fs::create_dir_all(&root).map_err(io("cannot create the npm folder"))?;
    std::fs::write(
        root.join("package.json"),
        r#"{"name":"sandbox-environment","private":true,"description":"built by sandbox-console"}"#,
    )
    .map_err(io("cannot write package.json"))?;
    let mut command = Command::new(&tools.npm);
    command
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--omit=dev",
        ])
        .args(["--no-update-notifier", "--loglevel", "http", "--prefix"])
        .arg(&root)
        .args(&spec.npm);
    if let Some(registry) = &tools.npm_registry {
        command.args(["--registry", registry]);
    }
    log.line(&format!(
        "$ npm install --ignore-scripts {}",
        spec.npm.join(" ")
    ));
    let (code, output) = run(command, log, "npm").await?;
    if code != Some(0) {
        if output.contains("E404") {
            // The 404 lines name the package's registry address.
            let missing = spec.npm.iter().map(|s| model::npm_name(s)).find(|name| {
                let escaped = name.replace('/', "%2f");
                output.lines().any(|l| {
                    l.contains("404")
                        && (l.contains(&format!("/{escaped}")) || l.contains(&format!("'{name}@")))
                })
            });
            return Err(BuildError::UnknownPackage(
                missing.unwrap_or("a package").to_owned(),
            ));
        }
        if let Some(line) = output
            .lines()
            .find(|l| l.contains("ETARGET") || l.contains("No matching version"))
        {
            return Err(BuildError::NoMatchingVersion(line.trim().to_owned()));
        }
        if let Some(line) = output.lines().find(|l| {
            l.contains("ENOTFOUND") || l.contains("ECONNREFUSED") || l.contains("ETIMEDOUT")
        }) {
            return Err(BuildError::Unreachable(line.trim().to_owned()));
        }
        return Err(BuildError::Step { step: "npm", code });
    }
    let text = std::fs::read_to_string(root.join("package-lock.json"))
        .map_err(io("cannot read npm's package-lock.json"))?;
    let tree: Value = serde_json::from_str(&text)
        .map_err(|e| BuildError::Io(format!("npm's package-lock.json: {e}")))?;
    let requested: Vec<&str> = spec.npm.iter().map(|s| model::npm_name(s)).collect();
    let mut lock: Vec<LockedPackage> = tree["packages"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(path, entry)| {
            let name = path.rsplit_once("node_modules/").map(|(_, name)| name)?;
            Some(LockedPackage {
                ecosystem: "npm".into(),
                name: name.to_owned(),
                version: entry["version"].as_str().unwrap_or_default().to_owned(),
                requested: requested.contains(&name) && path == &format!("node_modules/{name}"),
            })
        })
        .collect();
    lock.sort_by(|a, b| a.name.cmp(&b.name));
    lock.dedup_by(|a, b| a.name == b.name && a.version == b.version);
    debug_assert!(root.join(NODE_MODULES.trim_start_matches("node/")).exists());
    Ok(lock)
}

/// Runs one step, its output line by line into the log; its exit code and its output.
async fn run(
    mut command: Command,
    log: &Log,
    step: &'static str,
) -> Result<(Option<i32>, String), BuildError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| BuildError::Io(format!("cannot start {step}: {e}")))?;
    let output = Log::default();
    let pump = |pipe: Option<Box<dyn AsyncRead + Send + Unpin>>| {
        let (log, output) = (log.clone(), output.clone());
        async move {
            let Some(pipe) = pipe else { return };
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.line(&line);
                output.line(&line);
            }
        }
    };
    let stdout = child
        .stdout
        .take()
        .map(|p| Box::new(p) as Box<dyn AsyncRead + Send + Unpin>);
    let stderr = child
        .stderr
        .take()
        .map(|p| Box::new(p) as Box<dyn AsyncRead + Send + Unpin>);
    let work = async {
        tokio::join!(pump(stdout), pump(stderr));
        child.wait().await
    };
    match tokio::time::timeout(STEP_DEADLINE, work).await {
        Ok(Ok(status)) => Ok((status.code(), output.text())),
        Ok(Err(e)) => Err(BuildError::Io(format!("lost {step}: {e}"))),
        Err(_) => Err(BuildError::Deadline(step, STEP_DEADLINE.as_secs() / 60)),
    }
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
