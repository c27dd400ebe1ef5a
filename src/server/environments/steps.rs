//! The steps of one build (pip, matplotlib's font cache, npm), each run in the build sandbox
//! (`local::build_jail`): as `nobody`, with the variables written here and no others, writing
//! only the build's folder (seen at the mount point runs see it at), reaching only the package
//! index. Arguments are the console's own: the spec's lines come parsed, after `-r` (pip) or
//! `--` (npm), never as options.

use std::{path::PathBuf, sync::Arc};

use serde_json::Value;

use super::{
    build_parts::{io, BuildError, Log, Spec, Tools, MAX_LEFT, STEP_DEADLINE},
    network::Reach,
};
use crate::{
    model::{environment::LockedPackage, package_spec},
    sandbox::{
        environment::{MOUNT_POINT, MPLCONFIG_DIR, NODE_MODULES, PYTHON_DIR},
        providers::local::{
            self,
            build_jail::{self, BuildStep, CACHE_POINT},
        },
    },
};

/// The system's CA bundle (Debian's ca-certificates).
const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// One build's steps and what they share.
pub struct Steps<'a> {
    /// The build's folder on the host (seen as [`MOUNT_POINT`] by the steps).
    pub folder: PathBuf,
    pub cache: Option<PathBuf>,
    pub tools: &'a Tools,
    pub reach: &'a Reach,
    pub spec: &'a Spec,
    pub log: &'a Log,
}

/// Inside the build sandbox.
fn inside(path: &str) -> String {
    format!("{MOUNT_POINT}/{path}")
}

impl Steps<'_> {
    /// Writes what the steps read (the requirements, npm's package.json, matplotlib's
    /// config) and hands the folder to the build user.
    pub fn prepare(&self) -> Result<(), BuildError> {
        if !self.spec.python.is_empty() {
            let text = self.spec.python.join("\n") + "\n";
            std::fs::write(self.folder.join("requirements.txt"), text)
                .map_err(io("cannot write the requirements"))?;
            let config = self.folder.join(MPLCONFIG_DIR);
            std::fs::create_dir_all(&config).map_err(io("cannot create matplotlib's config"))?;
            std::fs::write(config.join("matplotlibrc"), "backend: Agg\n")
                .map_err(io("cannot write matplotlibrc"))?;
        }
        if !self.spec.npm.is_empty() {
            let root = self.folder.join("node");
            std::fs::create_dir_all(&root).map_err(io("cannot create the npm folder"))?;
            std::fs::write(
                root.join("package.json"),
                r#"{"name":"sandbox-environment","private":true,"description":"built by sandbox-console"}"#,
            )
            .map_err(io("cannot write package.json"))?;
        }
        build_jail::give(&self.folder, true).map_err(io("cannot prepare the build folder"))
    }

    /// A step of `program` with `args`, its variables built from nothing, reaching what
    /// `network` allows (nothing for `None`).
    fn step(
        &self,
        program: PathBuf,
        args: Vec<String>,
        network: Option<&Arc<crate::sandbox::egress::Policy>>,
    ) -> BuildStep {
        let mut env = vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), "/tmp".to_owned()),
            ("TMPDIR".to_owned(), "/tmp".to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ];
        if program == self.tools.npm {
            env.push(("npm_config_update_notifier".into(), "false".into()));
            // Node trusts only its own CA list; pip trusts the system's (pip.conf, certifi).
            // The system's bundle, where the host's admin adds a mirror's or proxy's CA,
            // counts for npm too.
            if std::path::Path::new(SYSTEM_CA_BUNDLE).is_file() {
                env.push(("NODE_EXTRA_CA_CERTS".into(), SYSTEM_CA_BUNDLE.into()));
            }
        }
        BuildStep {
            program,
            args,
            env,
            folder: self.folder.clone(),
            cache: self.cache.clone(),
            deadline: STEP_DEADLINE,
            network: network.cloned(),
        }
    }

    /// pip's options shared by install and the diagnosis.
    fn pip_options(&self, args: &mut Vec<String>) {
        if !self.spec.allow_sdists {
            args.push("--only-binary=:all:".into());
        }
        args.extend(["--index-url".into(), self.reach.index_url.clone()]);
        if let Some(host) = &self.reach.pip_trusted_host {
            args.extend(["--trusted-host".into(), host.clone()]);
        }
        match &self.cache {
            Some(_) => args.extend(["--cache-dir".into(), format!("{CACHE_POINT}/pip")]),
            None => args.push("--no-cache-dir".into()),
        }
    }

    pub async fn pip(&self) -> Result<Vec<LockedPackage>, BuildError> {
        let mut args: Vec<String> = [
            "-I",
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            "--no-warn-script-location",
            "--target",
        ]
        .map(str::to_owned)
        .into();
        args.push(inside(PYTHON_DIR));
        args.extend(["--report".into(), inside("pip-report.json")]);
        args.extend(["-r".into(), inside("requirements.txt")]);
        self.pip_options(&mut args);
        self.log
            .line(&format!("$ pip install {}", self.spec.python.join(" ")));
        let step = self.step(
            self.tools.python.clone(),
            args,
            Some(&self.reach.pip_policy),
        );
        let (code, output) = run(step, self.log, "pip").await?;
        if code != Some(0) {
            return Err(match self.diagnose_pip(&output).await {
                Some(why) => why,
                None => full_disk(&output, &self.folder)
                    .unwrap_or(BuildError::Step { step: "pip", code }),
            });
        }
        let report = self.folder.join("pip-report.json");
        let text =
            build_jail::read_left(&report, MAX_LEFT).map_err(io("cannot read pip's report"))?;
        let _ = std::fs::remove_file(&report);
        let report: Value = serde_json::from_str(&text)
            .map_err(|e| BuildError::Io(format!("pip's report: {e}")))?;
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
        lock.sort_by_key(|p| package_spec::normalize(&p.name));
        Ok(lock)
    }

    /// pip says "from versions: none" alike for an unknown project, a project with only source
    /// distributions and an index it could not reach; a second, verbose look at the one
    /// requirement it names tells them apart.
    async fn diagnose_pip(&self, output: &str) -> Option<BuildError> {
        if let Some(conflict) = output.lines().find(|l| l.contains("conflict")) {
            if output.contains("ResolutionImpossible") {
                return Some(BuildError::Conflict(conflict.trim().to_owned()));
            }
        }
        let missing = output
            .lines()
            .find_map(|l| l.split_once("No matching distribution found for "))
            .map(|(_, rest)| rest.trim().to_owned())?;
        // Only a requirement of the spec goes back to pip (pip names it as it was written).
        let requirement = self
            .spec
            .python
            .iter()
            .find(|r| {
                package_spec::requirement_name(r) == package_spec::requirement_name(&missing)
            })?
            .clone();
        let mut args: Vec<String> = [
            "-I",
            "-m",
            "pip",
            "download",
            "-vv",
            "--no-deps",
            "--disable-pip-version-check",
            "--no-input",
            "--dest",
            "/tmp/probe",
        ]
        .map(str::to_owned)
        .into();
        self.pip_options(&mut args);
        args.extend(["--".into(), requirement]);
        let quiet = Log::default();
        let step = self.step(
            self.tools.python.clone(),
            args,
            Some(&self.reach.pip_policy),
        );
        let (_, text) = run(step, &quiet, "pip's diagnosis").await.ok()?;
        let name = package_spec::requirement_name(&missing);
        let why = if text.contains("No sources permitted for")
            || text.contains("No binaries permitted")
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
        self.log.line(&format!("Diagnosis: {why}"));
        Some(why)
    }

    /// Builds matplotlib's font cache where runs will find it (the folder is already at the
    /// mount point, so the paths it records are the ones runs see).
    pub async fn matplotlib(&self) -> Result<(), BuildError> {
        let args = [
            "-I",
            "-c",
            "import sys; sys.path.insert(1, sys.argv[1]); import matplotlib.font_manager",
        ]
        .map(str::to_owned)
        .into_iter()
        .chain([inside(PYTHON_DIR)])
        .collect();
        let mut step = self.step(self.tools.python.clone(), args, None);
        // Importing matplotlib runs package code: it gets no shared download cache.
        step.cache = None;
        step.env.extend([
            ("MPLCONFIGDIR".to_owned(), inside(MPLCONFIG_DIR)),
            ("MPLBACKEND".to_owned(), "Agg".to_owned()),
        ]);
        let (code, output) = run(step, self.log, "matplotlib's font cache").await?;
        if code != Some(0) {
            return Err(
                full_disk(&output, &self.folder).unwrap_or(BuildError::Step {
                    step: "matplotlib's font cache",
                    code,
                }),
            );
        }
        Ok(())
    }

    pub async fn npm(&self) -> Result<Vec<LockedPackage>, BuildError> {
        let mut args: Vec<String> = [
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--omit=dev",
            "--no-update-notifier",
            "--loglevel",
            "http",
            "--prefix",
        ]
        .map(str::to_owned)
        .into();
        args.push(inside("node"));
        args.extend(["--registry".into(), self.reach.npm_registry.clone()]);
        args.extend([
            "--cache".into(),
            match &self.cache {
                Some(_) => format!("{CACHE_POINT}/npm"),
                None => "/tmp/npm-cache".into(),
            },
        ]);
        // Packages after `--`: whatever they are named, npm never reads one as an option.
        args.push("--".into());
        args.extend(self.spec.npm.iter().cloned());
        self.log.line(&format!(
            "$ npm install --ignore-scripts -- {}",
            self.spec.npm.join(" ")
        ));
        let step = self.step(self.tools.npm.clone(), args, Some(&self.reach.npm_policy));
        let (code, output) = run(step, self.log, "npm").await?;
        if code != Some(0) {
            return Err(npm_failure(&output, self.spec, code, &self.folder));
        }
        let root = self.folder.join("node");
        let text = build_jail::read_left(&root.join("package-lock.json"), MAX_LEFT)
            .map_err(io("cannot read npm's package-lock.json"))?;
        let tree: Value = serde_json::from_str(&text)
            .map_err(|e| BuildError::Io(format!("npm's package-lock.json: {e}")))?;
        let requested: Vec<&str> = self
            .spec
            .npm
            .iter()
            .map(|s| package_spec::npm_name(s))
            .collect();
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
}

/// Why npm failed, from what it printed.
fn npm_failure(
    output: &str,
    spec: &Spec,
    code: Option<i32>,
    folder: &std::path::Path,
) -> BuildError {
    if output.contains("E404") {
        // The 404 lines name the package's registry address.
        let missing = spec
            .npm
            .iter()
            .map(|s| package_spec::npm_name(s))
            .find(|name| {
                let escaped = name.replace('/', "%2f");
                output.lines().any(|l| {
                    l.contains("404")
                        && (l.contains(&format!("/{escaped}")) || l.contains(&format!("'{name}@")))
                })
            });
        return BuildError::UnknownPackage(missing.unwrap_or("a package").to_owned());
    }
    if let Some(line) = output
        .lines()
        .find(|l| l.contains("ETARGET") || l.contains("No matching version"))
    {
        return BuildError::NoMatchingVersion(line.trim().to_owned());
    }
    if let Some(line) = output
        .lines()
        .find(|l| l.contains("ENOTFOUND") || l.contains("ECONNREFUSED") || l.contains("ETIMEDOUT"))
    {
        return BuildError::Unreachable(line.trim().to_owned());
    }
    full_disk(output, folder).unwrap_or(BuildError::Step { step: "npm", code })
}

/// A step that ran out of disk says so in its own words (errno 28); the sentence says where,
/// and how much is left there.
fn full_disk(output: &str, folder: &std::path::Path) -> Option<BuildError> {
    let full = output.contains("No space left on device")
        || output.contains("[Errno 28]")
        || output.contains("ENOSPC");
    full.then(|| {
        let free = rustix::fs::statvfs(folder)
            .map(|s| s.f_bavail.saturating_mul(s.f_frsize) / (1024 * 1024))
            .map_or_else(
                |_| "space unknown".to_owned(),
                |mb| format!("{mb} MiB free"),
            );
        BuildError::DiskFull(format!(
            "{}: {free}",
            folder.parent().unwrap_or(folder).display()
        ))
    })
}

/// Runs one step in the build sandbox, its output line by line into the log; its exit code
/// and its output. What the network refused the step is noted in the log.
async fn run(
    step: BuildStep,
    log: &Log,
    name: &'static str,
) -> Result<(Option<i32>, String), BuildError> {
    let output = Log::default();
    let line: Arc<dyn Fn(&str) + Send + Sync> = {
        let (log, output) = (log.clone(), output.clone());
        Arc::new(move |text: &str| {
            log.line(text);
            output.line(text);
        })
    };
    // Dropped with this future (the build abandoned): the sandbox is killed at once.
    let (_kill, watch) = local::stop_channel();
    let runtime = tokio::runtime::Handle::current();
    let ran = tokio::task::spawn_blocking(move || build_jail::run(&step, line, watch, runtime))
        .await
        .map_err(|e| BuildError::Io(format!("{name} crashed: {e}")))?
        .map_err(|e| BuildError::Io(format!("{name}: {e}")))?;
    if let Some(report) = &ran.egress {
        for denial in report.denial_lines() {
            log.line(&format!("[build sandbox] {denial}"));
        }
    }
    if ran.timed_out {
        return Err(BuildError::Deadline(name, STEP_DEADLINE.as_secs() / 60));
    }
    Ok((ran.code, output.text()))
}
