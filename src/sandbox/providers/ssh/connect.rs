//! One SSH connection to the configured host: TCP within a deadline, the host's key checked
//! against the known hosts (never learnt), then the private key and the password tried in that
//! order. No agent, no ~/.ssh of the console's user, no environment sent along.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use russh::{
    client::{self, Handle},
    keys::{PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate},
};

use super::{
    known_hosts::{KnownHosts, Verdict},
    SshConfig,
};
use crate::sandbox::Error;

/// TCP, key exchange and sign-in together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Checks the host's key and keeps what it found for the error message.
pub struct HostCheck {
    known: Arc<KnownHosts>,
    host: String,
    port: u16,
    verdict: Arc<Mutex<Option<Verdict>>>,
}

impl client::Handler for HostCheck {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = key else {
            // Host certificates would need a @cert-authority line; none is trusted.
            return Ok(false);
        };
        let verdict = self.known.verdict(&self.host, self.port, key);
        let trusted = verdict == Verdict::Trusted;
        *self.verdict.lock().unwrap_or_else(|e| e.into_inner()) = Some(verdict);
        Ok(trusted)
    }
}

/// An open, signed-in connection.
pub struct Connection {
    pub handle: Handle<HostCheck>,
    /// `user@host:port`, for messages.
    pub target: String,
}

impl Connection {
    pub async fn close(self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }
}

pub fn target(config: &SshConfig) -> String {
    format!("{}@{}:{}", config.username, config.host, config.port)
}

/// Connects and signs in, within [`CONNECT_TIMEOUT`].
pub async fn open(
    config: &SshConfig,
    key: Option<&Arc<PrivateKey>>,
    known: &Arc<KnownHosts>,
) -> Result<Connection, Error> {
    match tokio::time::timeout(CONNECT_TIMEOUT, open_unbounded(config, key, known)).await {
        Ok(result) => result,
        Err(_) => Err(Error::Unreachable(format!(
            "{} did not finish connecting and signing in within {} s",
            target(config),
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

async fn open_unbounded(
    config: &SshConfig,
    key: Option<&Arc<PrivateKey>>,
    known: &Arc<KnownHosts>,
) -> Result<Connection, Error> {
    let target = target(config);
    let verdict = Arc::new(Mutex::new(None));
    let check = HostCheck {
        known: known.clone(),
        host: config.host.clone(),
        port: config.port,
        verdict: verdict.clone(),
    };
    let settings = Arc::new(client::Config {
        // A run's own deadline bounds it; this ends a connection nobody uses any more.
        inactivity_timeout: Some(Duration::from_secs(660)),
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 3,
        nodelay: true,
        ..Default::default()
    });
    let stream = tokio::net::TcpStream::connect((config.host.as_str(), config.port))
        .await
        .map_err(|e| {
            Error::Unreachable(format!("cannot reach {}:{}: {e}", config.host, config.port))
        })?;
    let _ = stream.set_nodelay(true);
    let mut handle = match client::connect_stream(settings, stream, check).await {
        Ok(handle) => handle,
        Err(error) => {
            let found = verdict.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Err(host_key_refusal(&target, found).unwrap_or_else(|| {
                Error::Unreachable(format!("{target}: the SSH handshake failed: {error}"))
            }));
        }
    };
    let mut tried = Vec::new();
    if let Some(key) = key {
        let hash = handle
            .best_supported_rsa_hash()
            .await
            .ok()
            .flatten()
            .flatten();
        let signed_in = handle
            .authenticate_publickey(
                config.username.clone(),
                PrivateKeyWithHashAlg::new(key.clone(), hash),
            )
            .await
            .map_err(|e| Error::Unreachable(format!("{target}: signing in failed: {e}")))?;
        if signed_in.success() {
            return Ok(Connection { handle, target });
        }
        tried.push("the private key");
    }
    if !config.password.is_empty() {
        let signed_in = handle
            .authenticate_password(config.username.clone(), config.password.clone())
            .await
            .map_err(|e| Error::Unreachable(format!("{target}: signing in failed: {e}")))?;
        if signed_in.success() {
            return Ok(Connection { handle, target });
        }
        tried.push("the password");
    }
    Err(Error::Unauthenticated(format!(
        "{target} refused {}",
        tried.join(" and ")
    )))
}

/// The refusal of a host key, in words an admin can act on.
fn host_key_refusal(target: &str, found: Option<Verdict>) -> Option<Error> {
    let message = match found? {
        Verdict::Trusted => return None,
        Verdict::Unknown { line, fingerprint } => format!(
            "{target} offered a host key that Known hosts does not list ({fingerprint}). \
             Check it on the host (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub); if it is the \
             same, add this line to Known hosts: {line}"
        ),
        Verdict::Changed { fingerprint } => format!(
            "{target} offered another host key ({fingerprint}) than Known hosts lists for it: \
             the host was reinstalled, or someone stands between. Refused."
        ),
        Verdict::Revoked { fingerprint } => {
            format!("{target} offered a revoked host key ({fingerprint}). Refused.")
        }
    };
    Some(Error::Unauthenticated(message))
}
