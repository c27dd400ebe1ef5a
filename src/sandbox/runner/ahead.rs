//! Sandboxes started ahead of their run: the protocol of `ahead.py`, shared by the local and
//! docker providers. A started-ahead sandbox's interpreter sets the package environment up,
//! imports the environment's preloaded modules and waits; its run's program, arguments and
//! limits arrive on stdin when a run takes it. It serves that one run and is discarded, so
//! nothing is shared between runs: only the waiting moves off the request path.

use std::{collections::BTreeMap, path::Path};

use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use serde::Deserialize;
use serde_json::json;

use super::Job;
use crate::sandbox::environment::{self, Mount};

/// The boot script (`python3 -I -B -u -c <it>`).
pub const BOOT_PY: &str = include_str!("ahead.py");
/// The line the boot prints on stdout once it waits for its job.
pub const READY: &str = "__SANDBOX_AHEAD_READY__:";
/// The most a boot may print before its ready line (what it prints is dropped, not kept).
pub const MAX_BEFORE_READY: usize = 64 * 1024;

/// What a boot said when it became ready.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Readiness {
    /// Preloaded modules that could not be imported, with the error.
    #[serde(default)]
    pub failed: BTreeMap<String, String>,
    /// How long the boot took to become ready, in its own clock.
    #[serde(default)]
    pub ms: u64,
}

impl Readiness {
    /// Why preloading fell short, in one sentence; `None` when every module was imported.
    pub fn problem(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let list: Vec<String> = self
            .failed
            .iter()
            .map(|(module, error)| format!("{module} ({error})"))
            .collect();
        Some(format!(
            "started-ahead sandboxes run, but could not preload {}",
            list.join(", ")
        ))
    }
}

/// The first line sent to a boot: the runner and the modules to import.
pub fn opening(preload: &[String]) -> String {
    json!({ "runner": super::PYTHON_RUNNER, "preload": preload }).to_string() + "\n"
}

/// The job sent to a ready boot (stdin closes after it): the run's files, the artifacts flag
/// and the run's CPU seconds.
pub fn order(job: &Job, flag: &str, cpu_secs: u64) -> String {
    let files: serde_json::Map<String, serde_json::Value> = job
        .files
        .iter()
        .map(|f| (f.name.to_owned(), json!(BASE64.encode(&f.contents))))
        .collect();
    json!({ "files": files, "flag": flag, "cpu_secs": cpu_secs }).to_string()
}

/// The readiness a line of a boot's stdout announces, if it is the ready line.
pub fn parse_ready(line: &str) -> Option<Readiness> {
    let rest = line.trim_end().rsplit_once(READY)?.1;
    Some(serde_json::from_str(rest).unwrap_or_default())
}

/// The modules a sandbox with `mount` preloads: of the environment's preload setting, those
/// it has installed or the standard library has (a bare interpreter preloads nothing and
/// still starts ahead). A module listed and found that still fails to import is named on
/// the health card.
pub fn preload_for(mount: Option<&Mount>) -> Vec<String> {
    let Some(mount) = mount else {
        return Vec::new();
    };
    let packages = mount.dir.join(environment::PYTHON_DIR);
    mount
        .preload
        .iter()
        .filter(|module| installed(&packages, module))
        .cloned()
        .collect()
}

fn installed(packages: &Path, module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    let found = |dir: &Path| dir.join(top).is_dir() || dir.join(format!("{top}.py")).is_file();
    let dynload = || {
        std::fs::read_dir(Path::new(STDLIB).join("lib-dynload"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{top}."))
            })
    };
    found(packages) || found(Path::new(STDLIB)) || dynload()
}

/// The standard library of the interpreter sandboxes run (the host's python3.11; the runtime
/// image's is the same Debian build).
const STDLIB: &str = "/usr/lib/python3.11";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_is_found_and_read() {
        let line = format!(
            "{READY}{{\"failed\": {{\"pandas\": \"ModuleNotFoundError: x\"}}, \"ms\": 12}}\n"
        );

        let ready = parse_ready(&line).unwrap();

        assert_eq!(ready.ms, 12);
        assert_eq!(
            ready.problem().unwrap(),
            "started-ahead sandboxes run, but could not preload pandas (ModuleNotFoundError: x)"
        );
        assert!(parse_ready("hello\n").is_none());
    }

    #[test]
    fn a_bare_interpreter_preloads_nothing_and_an_environment_what_it_has() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("python/numpy")).unwrap();
        std::fs::create_dir_all(dir.path().join("python/matplotlib")).unwrap();
        let mount = Mount {
            name: "default".into(),
            build: "b".into(),
            dir: dir.path().to_owned(),
            preload: crate::model::environment::DEFAULT_PRELOAD
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            lease: Default::default(),
        };

        assert!(preload_for(None).is_empty());
        assert_eq!(
            preload_for(Some(&mount)),
            ["numpy", "matplotlib", "matplotlib.pyplot"]
        );
    }
}
