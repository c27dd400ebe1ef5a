//! The `ssh` provider (RAGFlow's `ssh`): each run on a remote host over SSH, in a private
//! folder of its own under the work folder. The host's key is checked against the known hosts
//! (never learnt), the job's files go over SFTP (code, runner and arguments: nothing of them on
//! the command line), the same main() runner and envelope as every provider, the deadline and
//! the output cap kill the run's whole session and process group, artifacts come back over
//! SFTP under the shared rules, and the folder is removed. Isolation is whatever the remote
//! account allows. See README.md here.

mod command;
mod config;
mod connect;
mod error;
mod files;
mod keys;
mod known_hosts;
mod run;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use russh::keys::PrivateKey;
use serde_json::{json, Map};

pub use config::{build, build_provider, schema, SshConfig};

use self::known_hosts::KnownHosts;
use crate::{
    model::{
        execution::{ExecRequest, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
    },
    sandbox::{registry::ProviderKind, Error, Instance, SandboxProvider},
};

pub const KIND: &str = "ssh";

/// Each interpreter's version query.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "SSH".into(),
        description: "Runs each program on a remote machine over SSH, in a private folder of its \
                      own, removed afterwards. Isolation is only what the remote account \
                      allows: use a dedicated, unprivileged account on a machine you can lose."
            .into(),
        tags: vec![
            "remote".into(),
            "ssh".into(),
            "custom-runtime".into(),
            "python".into(),
            "javascript".into(),
        ],
    }
}

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build: |raw, _| build(raw),
    }
}

#[derive(Debug)]
pub struct SshProvider {
    config: SshConfig,
    key: Option<Arc<PrivateKey>>,
    known: Arc<KnownHosts>,
    info: ProviderInfo,
}

impl SshProvider {
    fn new(config: SshConfig, key: Option<Arc<PrivateKey>>, known: KnownHosts) -> Self {
        SshProvider {
            config,
            key,
            known: Arc::new(known),
            info: info(),
        }
    }

    /// Connects, signs in and asks each interpreter (and `timeout`) for its version.
    async fn probe(&self, details: &mut Map<String, serde_json::Value>) -> Result<String, Error> {
        let connection = connect::open(&self.config, self.key.as_ref(), &self.known).await?;
        let mut found = Vec::new();
        let mut missing = Vec::new();
        let probes = [
            ("python", self.config.python_bin.as_str(), "--version"),
            ("node", self.config.node_bin.as_str(), "--version"),
            ("timeout", "timeout", "--version"),
        ];
        for (name, program, flag) in probes {
            let line = format!("{} {flag} 2>&1", command::quote(program));
            let answer = command::short(&connection, name, &line, PROBE_TIMEOUT).await;
            match answer {
                Ok(short) if short.exit_status == Some(0) => {
                    let version = short
                        .stdout
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_owned();
                    details.insert(format!("{name}_version"), json!(version));
                    match name {
                        "node" => found.push(format!("Node.js {version}")),
                        "python" => found.push(version),
                        _ => {}
                    }
                }
                Ok(short) => missing.push(format!(
                    "{program} ({})",
                    short.stdout.lines().next().unwrap_or("not found").trim()
                )),
                Err(error) => missing.push(format!("{program} ({error})")),
            }
        }
        let folder = format!(
            "test -d {0} && test -w {0}",
            command::quote(&self.config.work_dir)
        );
        let writable = command::short(&connection, "work folder", &folder, PROBE_TIMEOUT)
            .await
            .is_ok_and(|s| s.exit_status == Some(0));
        connection.close().await;
        if !writable {
            missing.push(format!("a writable {}", self.config.work_dir));
        }
        if missing.is_empty() {
            Ok(found.join(", "))
        } else {
            Err(Error::Backend(format!(
                "the host lacks {}",
                missing.join("; ")
            )))
        }
    }
}

#[async_trait]
impl SandboxProvider for SshProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    fn languages(&self) -> &[Language] {
        &Language::ALL
    }

    async fn health(&self) -> HealthReport {
        let target = connect::target(&self.config);
        let mut details = Map::new();
        details.insert("host".into(), json!(target));
        let (healthy, message) = match self.probe(&mut details).await {
            Ok(versions) => (
                true,
                format!("Signed in to {target} (host key verified); it runs {versions}."),
            ),
            Err(Error::Unauthenticated(why)) => (false, why),
            Err(error) => (false, format!("{target}: {error}")),
        };
        HealthReport {
            healthy,
            message,
            details,
        }
    }

    fn offers_network(&self) -> bool {
        true
    }

    fn run_deadline(&self, request: &ExecRequest) -> Duration {
        let run = crate::sandbox::provider::timeout_secs(request, self.config.timeout_secs);
        // Connecting, the files both ways and the clean-up besides the run itself.
        Duration::from_secs(u64::from(run) + 120)
    }

    async fn execute(
        &self,
        instance: &Instance,
        request: &ExecRequest,
    ) -> Result<ExecutionResult, Error> {
        instance.check_language(request)?;
        self.run(request).await
    }
}
