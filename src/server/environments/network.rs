//! Where a build may connect: the package index pip uses and the registry npm uses (the
//! console's settings, else pip's and npm's own configuration on this host, else PyPI and
//! npmjs), each name resolved by the console, and nothing else. An index given by address (or
//! as `localhost`) is reached under a name of the console's (`packages-N.build.internal`):
//! a sandbox reaches nothing by address.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::Path,
    sync::Arc,
    time::Duration,
};

use tokio::process::Command;

use super::build_parts::{BuildError, Tools};
use crate::sandbox::egress::Policy;

pub const DEFAULT_INDEX: &str = "https://pypi.org/simple";
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org/";
/// PyPI serves its files from a second host.
const PYPI: &str = "pypi.org";
const PYPI_FILES: &str = "files.pythonhosted.org";
/// What one build may download and upload in all.
const MAX_BYTES: u64 = 8 * 1024 * 1024 * 1024;
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
const CONFIG_TIMEOUT: Duration = Duration::from_secs(30);

/// A build's network: each tool's allow-list (pip reaches only the index, npm only the
/// registry), and the addresses they are given (rewritten where given by address).
#[derive(Clone, Debug)]
pub struct Reach {
    pub pip_policy: Arc<Policy>,
    pub npm_policy: Arc<Policy>,
    pub index_url: String,
    pub npm_registry: String,
    /// The index's host when it is plain HTTP (an index the console's operator chose; pip
    /// otherwise ignores plain HTTP except on localhost).
    pub pip_trusted_host: Option<String>,
}

/// What pip on this host is configured with (`pip config list`: pip.conf, `PIP_INDEX_URL`),
/// read by the console itself: the host's configuration, not a package's input.
async fn configured_index(python: &Path) -> Option<String> {
    let output = tokio::time::timeout(
        CONFIG_TIMEOUT,
        Command::new(python)
            .args(["-m", "pip", "config", "list"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    ["install.index-url", "global.index-url"]
        .iter()
        .find_map(|key| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .map(|v| v.trim().trim_matches(['\'', '"']).to_owned())
        })
        .filter(|url| !url.is_empty())
}

/// What npm on this host is configured with (`npm config get registry`).
async fn configured_registry(npm: &Path) -> Option<String> {
    let output = tokio::time::timeout(
        CONFIG_TIMEOUT,
        Command::new(npm)
            .args(["config", "get", "registry"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    let url = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && url.starts_with("http")).then_some(url)
}

/// The allow-list as it is built: each destination once, and the names given to addresses.
#[derive(Default)]
struct Destinations {
    list: Vec<(String, u16, IpAddr)>,
    aliases: Vec<IpAddr>,
}

impl Destinations {
    /// Adds `url`'s host and port; returns the URL to give the tool.
    async fn add(&mut self, url: &str) -> Result<String, BuildError> {
        let mut parsed = url::Url::parse(url)
            .map_err(|e| BuildError::Io(format!("the package index {url:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BuildError::Io(format!(
                "the package index {url:?} is not an http(s) URL"
            )));
        }
        let port = parsed.port_or_known_default().unwrap_or(443);
        let literal = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
            Some(url::Host::Domain("localhost")) => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Some(url::Host::Domain(_)) => None,
            None => {
                return Err(BuildError::Io(format!(
                    "the package index {url:?} has no host"
                )))
            }
        };
        let name = match literal {
            Some(address) => {
                let number = match self.aliases.iter().position(|a| *a == address) {
                    Some(number) => number,
                    None => {
                        self.aliases.push(address);
                        self.aliases.len() - 1
                    }
                };
                let name = format!("packages-{number}.build.internal");
                parsed
                    .set_host(Some(&name))
                    .map_err(|e| BuildError::Io(format!("the package index {url:?}: {e}")))?;
                self.push(&name, port, address);
                name
            }
            None => {
                let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
                self.resolve(&host, port).await?;
                host
            }
        };
        if name == PYPI {
            self.resolve(PYPI_FILES, 443).await?;
        }
        Ok(parsed.to_string())
    }

    async fn resolve(&mut self, host: &str, port: u16) -> Result<(), BuildError> {
        if self.list.iter().any(|(n, p, _)| n == host && *p == port) {
            return Ok(());
        }
        let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| BuildError::Unreachable(format!("{host} did not resolve within 10 s")))?
            .map_err(|e| BuildError::Unreachable(format!("{host}: {e}")))?
            .next()
            .ok_or_else(|| BuildError::Unreachable(format!("{host} has no address")))?;
        self.push(host, port, found.ip());
        Ok(())
    }

    fn push(&mut self, name: &str, port: u16, address: IpAddr) {
        if !self.list.iter().any(|(n, p, _)| n == name && *p == port) {
            self.list.push((name.to_owned(), port, address));
        }
    }
}

/// The network of one build: pip's index (and PyPI's file host), npm's registry.
pub async fn reach(tools: &Tools, console: &[SocketAddr]) -> Result<Reach, BuildError> {
    let index = match &tools.index_url {
        Some(url) => url.clone(),
        None => configured_index(&tools.python)
            .await
            .unwrap_or_else(|| DEFAULT_INDEX.to_owned()),
    };
    let registry = match &tools.npm_registry {
        Some(url) => url.clone(),
        None => configured_registry(&tools.npm)
            .await
            .unwrap_or_else(|| DEFAULT_REGISTRY.to_owned()),
    };
    let mut pip = Destinations::default();
    let index_url = pip.add(&index).await?;
    let mut npm = Destinations::default();
    let npm_registry = npm.add(&registry).await?;
    let pip_trusted_host = url::Url::parse(&index_url)
        .ok()
        .filter(|url| url.scheme() == "http")
        .and_then(|url| url.host_str().map(str::to_owned));
    let policy = |destinations: &Destinations| {
        Arc::new(Policy::destinations(
            &destinations.list,
            MAX_BYTES,
            console.to_vec(),
        ))
    };
    Ok(Reach {
        pip_trusted_host,
        pip_policy: policy(&pip),
        npm_policy: policy(&npm),
        index_url,
        npm_registry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_index_given_by_address_is_reached_under_a_name_of_the_consoles() {
        let mut destinations = Destinations::default();

        let pip = destinations
            .add("http://127.0.0.1:18599/simple")
            .await
            .unwrap();
        let npm = destinations.add("http://localhost:18600/").await.unwrap();
        let other = destinations.add("http://[::1]:18601/npm/").await.unwrap();

        assert_eq!(pip, "http://packages-0.build.internal:18599/simple");
        assert_eq!(npm, "http://packages-0.build.internal:18600/");
        assert_eq!(other, "http://packages-1.build.internal:18601/npm/");
        let policy = Policy::destinations(&destinations.list, 1, Vec::new());
        assert!(policy.allows("packages-0.build.internal", 18599));
        assert!(policy.allows("packages-0.build.internal", 18600));
        assert!(!policy.allows("packages-0.build.internal", 18601));
        assert_eq!(
            policy.static_address("packages-1.build.internal"),
            Some("::1".parse().unwrap())
        );
        assert!(destinations.add("file:///etc/passwd").await.is_err());
    }
}
