//! Package environments as the console shows them: a named set of Python requirements and npm
//! packages, its builds (each a read-only folder with a lock of exact versions), and how each
//! provider that mounts it fared importing it.

use serde::{Deserialize, Serialize};

/// Most packages one environment may list (Python and npm together).
pub const MAX_PACKAGES: usize = 200;
/// What a new environment preloads in sandboxes started ahead: the modules RAGFlow's
/// programs import (skipped where the environment has not installed them).
pub const DEFAULT_PRELOAD: &str = "numpy pandas matplotlib matplotlib.pyplot";
/// The most modules an environment may preload.
pub const MAX_PRELOAD: usize = 32;
/// The name a provider's Environment field takes for "no packages: the bare interpreter".
pub const NONE: &str = "none";
/// The environment seeded on a first start: RAGFlow's sandbox image's packages.
pub const DEFAULT_NAME: &str = "default";
pub const DEFAULT_PYTHON: &str = "numpy\npandas<3\nmatplotlib\nrequests";
pub const DEFAULT_NPM: &str = "axios";

/// Where a build stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildStatus {
    Building,
    Ready,
    Failed,
}

impl BuildStatus {
    pub fn id(self) -> &'static str {
        match self {
            BuildStatus::Building => "building",
            BuildStatus::Ready => "ready",
            BuildStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "building" => Some(BuildStatus::Building),
            "ready" => Some(BuildStatus::Ready),
            "failed" => Some(BuildStatus::Failed),
            _ => None,
        }
    }
}

/// One package as installed: the lock's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockedPackage {
    /// `pypi` or `npm`.
    pub ecosystem: String,
    pub name: String,
    pub version: String,
    /// Asked for by name in the spec (not pulled in as a dependency).
    #[serde(default)]
    pub requested: bool,
}

/// How one provider fared importing every top-level module of a build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// The provider, and for docker its runtime: `local`, `docker (runc)`, `docker (runsc)`.
    pub provider: String,
    pub ok: bool,
    /// Wall time of importing everything in a fresh sandbox.
    pub import_ms: Option<u64>,
    /// What failed, when something did (the first lines of the error).
    #[serde(default)]
    pub error: Option<String>,
    pub checked_at: String,
}

/// One build of an environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    pub id: i64,
    pub environment: String,
    /// The content address of the build's folder.
    pub spec_hash: String,
    pub status: BuildStatus,
    /// What the build is doing now (while building) or why it failed.
    pub stage: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub started_by: String,
    pub size_bytes: Option<i64>,
    pub lock: Vec<LockedPackage>,
    pub verification: Vec<Verification>,
}

/// An environment with the builds that matter: the one in use and the newest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentInfo {
    pub name: String,
    pub python_requirements: String,
    pub npm_packages: String,
    /// Building packages from source distributions is allowed (their code runs in the build
    /// sandbox).
    pub allow_sdists: bool,
    /// The environment whose packages come first ('' for none): "default plus tabulate".
    #[serde(default)]
    pub base: String,
    /// The modules sandboxes started ahead import before their run, separated by spaces.
    #[serde(default)]
    pub preload: String,
    pub version: i64,
    pub is_default: bool,
    pub updated_at: String,
    pub updated_by: String,
    /// The build runs use.
    pub ready: Option<BuildInfo>,
    /// The newest build, when it is not the one in use (building, or failed).
    pub latest: Option<BuildInfo>,
    /// Providers whose settings name this environment (or the default, when it is).
    pub used_by: Vec<String>,
}

impl EnvironmentInfo {
    /// One word for the list: building, ready, failed or new (never built).
    pub fn status(&self) -> &'static str {
        match (&self.latest, &self.ready) {
            (Some(latest), _) if latest.status == BuildStatus::Building => "building",
            (Some(latest), None) if latest.status == BuildStatus::Failed => "failed",
            (_, Some(_)) => "ready",
            _ => "new",
        }
    }
}

/// A build's log, read while it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildLog {
    pub build: BuildInfo,
    pub log: String,
}

/// What the create/edit form held, given back after a refused save.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentForm {
    pub name: String,
    pub python_requirements: String,
    pub npm_packages: String,
    pub allow_sdists: bool,
    /// The environment it is based on ('' for none).
    #[serde(default)]
    pub base: String,
    /// The modules to preload, as typed.
    #[serde(default)]
    pub preload: String,
    /// The version edited (absent when creating).
    pub version: Option<i64>,
}

/// The outcome of the last plain form post on the environments pages, once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum EnvironmentFlash {
    Done {
        message: String,
    },
    Refused {
        message: String,
        /// Per-field messages, keyed by form field.
        #[serde(default)]
        errors: std::collections::BTreeMap<String, String>,
        form: Option<EnvironmentForm>,
    },
}

/// An environment's page: the environment, its newest build's log, and the page's flash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentPage {
    pub environment: EnvironmentInfo,
    /// The newest build's log (the one building, failed or in use).
    pub log: Option<BuildLog>,
    pub flash: Option<EnvironmentFlash>,
    /// Every environment's name (what this one may be based on).
    #[serde(default)]
    pub names: Vec<String>,
}

/// Checks an environment's name: 1 to 40 characters, lowercase letters, digits, `-` and `_`,
/// starting with a letter; `none` is taken (it means no environment).
/// The preload setting as stored: module names (`pandas`, `matplotlib.pyplot`) separated by
/// spaces; commas and new lines separate as spaces do. Refused, with the reason, when a name
/// is not a Python module path or there are too many.
pub fn check_preload(text: &str) -> Result<String, String> {
    let names: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|name| !name.is_empty())
        .collect();
    if names.len() > MAX_PRELOAD {
        return Err(format!("List at most {MAX_PRELOAD} modules."));
    }
    let module = |name: &str| {
        name.len() <= 100
            && name.split('.').all(|part| {
                part.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    if let Some(bad) = names.iter().find(|name| !module(name)) {
        return Err(format!(
            "{bad:?} is not a module name; write names as import does, e.g. pandas or matplotlib.pyplot."
        ));
    }
    let mut kept: Vec<&str> = Vec::new();
    for name in names {
        if !kept.contains(&name) {
            kept.push(name);
        }
    }
    Ok(kept.join(" "))
}

pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    let ok = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !ok {
        return Err(
            "Use 1 to 40 lowercase letters, digits, '-' or '_', starting with a letter.".into(),
        );
    }
    if name == NONE {
        return Err("'none' means no environment; choose another name.".into());
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_none_is_reserved() {
        assert_eq!(check_name(" data-2 ").unwrap(), "data-2");
        assert!(check_name("none").is_err());
        assert!(check_name("Data").is_err());
        assert!(check_name("2data").is_err());
    }

    #[test]
    fn preloaded_modules_are_module_paths() {
        assert_eq!(
            check_preload(" numpy,pandas\nmatplotlib.pyplot numpy ").unwrap(),
            "numpy pandas matplotlib.pyplot"
        );
        assert_eq!(check_preload("").unwrap(), "");
        assert!(check_preload("os; import x").is_err());
        assert!(check_preload("--upgrade").is_err());
        assert!(check_preload("a..b").is_err());
        assert!(check_preload(&"m ".repeat(MAX_PRELOAD + 1)).is_err());
    }
}
