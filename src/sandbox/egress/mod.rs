//! Egress on an allow-list for providers that run code on this host (local, docker): the
//! sandbox's only route is a TUN device the console reads, so what leaves is decided here,
//! connection by connection, whatever the program does.
//!
//! - [`policy`]: the admin's allow-list, static names and the addresses never reached.
//! - [`session`]: one run's names, connection log and byte budget.
//! - [`dns`], [`relay`], [`stack`]: the sandbox's DNS, each allowed connection, the packets.
//! - [`namespace`]: the TUN inside a fresh namespace or a container's.

pub mod dns;
pub mod files;
pub mod inspect;
pub mod namespace;
pub mod policy;
pub mod relay;
pub mod session;
pub mod stack;

use std::sync::Arc;

pub use policy::Policy;
pub use session::Session;

/// Starts serving a sandbox's TUN for `session`. The network stays up while the returned
/// guard lives: dropped (the run ended, or failed on the way), it closes the session, which
/// ends the task and frees the device.
pub fn serve(device: tun_rs::SyncDevice, session: Arc<Session>) -> std::io::Result<Running> {
    let device = tun_rs::AsyncDevice::new(device)?;
    tokio::spawn(stack::serve(device, session.clone()));
    Ok(Running { session })
}

/// A sandbox's network being served; see [`serve`].
#[derive(Debug)]
pub struct Running {
    session: Arc<Session>,
}

impl Running {
    /// Ends the network and returns what the run did on it.
    pub fn finish(self) -> crate::model::egress::EgressReport {
        self.session.finish()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.session.cut.cancel();
        self.session.closed.cancel();
    }
}

/// `network` values.
pub const NONE: &str = "none";
pub const ALLOW_LIST: &str = "allow-list";
pub const DEFAULT_MAX_EGRESS_BYTES: u64 = 100 * 1024 * 1024;
/// The largest `ca_certificates` text.
const MAX_CERTIFICATES_BYTES: usize = 256 * 1024;

/// The network part of a provider's settings (flattened into its config).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct NetworkConfig {
    pub network: String,
    pub allowed_hosts: String,
    pub static_hosts: String,
    pub max_egress_bytes: u64,
    pub ca_certificates: String,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            network: NONE.into(),
            allowed_hosts: String::new(),
            static_hosts: String::new(),
            max_egress_bytes: DEFAULT_MAX_EGRESS_BYTES,
            ca_certificates: String::new(),
        }
    }
}

impl NetworkConfig {
    /// The policy sandboxes run under, or `None` without network. `console` lists where the
    /// console listens (never reachable from a sandbox).
    pub fn policy(&self, console: &[std::net::SocketAddr]) -> Result<Option<Arc<Policy>>, String> {
        if self.network != ALLOW_LIST {
            return Ok(None);
        }
        let mut policy = Policy::parse(
            &self.allowed_hosts,
            &self.static_hosts,
            self.max_egress_bytes,
        )?;
        policy.console = console.to_vec();
        Ok(Some(Arc::new(policy)))
    }
}

/// Checks `ca_certificates`: blank, or PEM certificates only.
pub fn check_certificates(text: &str) -> Result<(), String> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    if text.len() > MAX_CERTIFICATES_BYTES {
        return Err(format!(
            "At most {} KiB of certificates.",
            MAX_CERTIFICATES_BYTES / 1024
        ));
    }
    let mut rest = text;
    let mut count = 0;
    while !rest.is_empty() {
        let Some(body) = rest.strip_prefix(BEGIN) else {
            return Err(format!(
                "Paste PEM certificates only, each from {BEGIN} to {END}."
            ));
        };
        let Some((body, after)) = body.split_once(END) else {
            return Err(format!("Certificate {} has no {END} line.", count + 1));
        };
        let base64 = body.split_whitespace().collect::<String>();
        use base64::Engine;
        if base64::engine::general_purpose::STANDARD
            .decode(&base64)
            .is_err()
        {
            return Err(format!("Certificate {} is not valid base64.", count + 1));
        }
        count += 1;
        rest = after.trim_start();
    }
    Ok(())
}

/// Tells the program's reader what the network refused: one line per refused target at the
/// end of stderr, and `egress_limit` when the run's budget cut its connections.
pub fn explain(
    report: &crate::model::egress::EgressReport,
    status: &mut crate::model::execution::ExecStatus,
    stderr: &mut String,
) {
    use crate::model::execution::ExecStatus;
    let mut lines = report.denial_lines();
    if report.limit_reached {
        lines.push(format!(
            "egress stopped: the run moved {} bytes, past this provider's max_egress_bytes",
            report.bytes_out + report.bytes_in
        ));
        if matches!(*status, ExecStatus::Success | ExecStatus::ProgramError) {
            *status = ExecStatus::EgressLimit;
        }
    }
    for line in lines {
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        stderr.push_str(&line);
        stderr.push('\n');
    }
}

/// What a provider on an allow-list keeps: the policy and the files its sandboxes read.
#[derive(Clone, Debug)]
pub struct Egress {
    pub policy: Arc<Policy>,
    pub files: Arc<files::NetworkFiles>,
}

impl Egress {
    /// Writes the sandboxes' files (resolv.conf; the CA bundle when `extra_ca` is not blank).
    pub fn new(policy: Arc<Policy>, extra_ca: &str) -> Result<Egress, crate::sandbox::Error> {
        let files = files::NetworkFiles::create(extra_ca).map_err(|e| {
            crate::sandbox::Error::Backend(format!("cannot write the sandbox's network files: {e}"))
        })?;
        Ok(Egress {
            policy,
            files: Arc::new(files),
        })
    }

    /// The health check of the allow-list, through `provider` (which runs on it): [`PROBE_PY`]
    /// in one of its sandboxes, then [`check`]. The details to add, or why it is unhealthy.
    pub async fn probe(
        &self,
        provider: &dyn crate::sandbox::SandboxProvider,
    ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        use crate::model::execution::{ExecRequest, Language};
        let probe = ExecRequest {
            language: Language::Python,
            code: format!("{PROBE_PY}\ndef main():\n    return None\n"),
            arguments: serde_json::Map::new(),
            timeout_secs: Some(15),
        };
        match crate::sandbox::run_once(provider, &probe).await.0 {
            Ok(result) => check(&self.policy, &result.stdout).await,
            Err(error) => Err(format!("the network probe did not run: {error}")),
        }
    }
}

/// The health check of an allow-list: the console resolves each exact allowed name (the first
/// five) as it would for a connection, and `probe_output` (what [`PROBE_PY`] printed in a real
/// sandbox on the list) shows that a listed name resolves inside, and that the metadata
/// address and an unlisted name are refused. Returns the details, or why it is unhealthy.
async fn check(
    policy: &Policy,
    probe_output: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    use serde_json::{json, Value};
    let mut resolved = serde_json::Map::new();
    let mut reach = serde_json::Map::new();
    let mut problems = Vec::new();
    let mut unreachable = Vec::new();
    for name in policy.exact_names().into_iter().take(5) {
        let port = if policy.allows(name, 443) {
            443
        } else {
            policy.ports()[0]
        };
        match relay::resolve(policy, name, port).await {
            Ok(address) => {
                resolved.insert(name.to_owned(), json!(address.ip().to_string()));
                // Each allowed port is tried from the console, as a run's connection is made:
                // a port nothing listens on is told now, not by the first run that needs it.
                for port in policy.ports_for(name).into_iter().take(4) {
                    let target = std::net::SocketAddr::new(address.ip(), port);
                    let outcome = if policy.is_console(target) {
                        "the console's own address: refused to sandboxes".to_owned()
                    } else {
                        reachability(target).await
                    };
                    if outcome != "reachable" {
                        unreachable.push(format!("{name}:{port} ({outcome})"));
                    }
                    reach.insert(format!("{name}:{port}"), json!(outcome));
                }
            }
            Err(reason) => {
                problems.push(format!("{name} {reason}"));
                resolved.insert(name.to_owned(), json!(reason));
            }
        }
    }
    let mut inside: Value = probe_output
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("the network probe printed nothing usable: {probe_output:?}"))?;
    if inside["metadata"] == "reached" {
        return Err("a sandbox reached 169.254.169.254: the allow-list is not enforced".into());
    }
    if inside["unlisted"] == "resolved" {
        return Err(
            "a sandbox resolved a name not on the list: its DNS is not the console's".into(),
        );
    }
    if let Some(first) = problems.first() {
        return Err(format!("allowed host {first}"));
    }
    // What the sandbox met, in words rather than Python's exception names.
    if let Some(checks) = inside.as_object_mut() {
        for value in checks.values_mut() {
            if let Some(text) = value.as_str() {
                *value = json!(plain(text));
            }
        }
    }
    Ok(serde_json::Map::from_iter([(
        "egress".to_owned(),
        json!({"resolved": resolved, "reach": reach, "unreachable": unreachable, "inside": inside}),
    )]))
}

/// The sentence a health message adds when an allowed host:port does not take connections
/// (from a health check's details), or `None`.
pub fn unreachable_note(details: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let list: Vec<&str> = details
        .get("egress")?
        .get("unreachable")?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    (!list.is_empty()).then(|| {
        format!(
            "Allowed, but not reachable from this host: {}.",
            list.join("; ")
        )
    })
}

/// Whether the console can open a TCP connection to `target`, in words.
async fn reachability(target: std::net::SocketAddr) -> String {
    match tokio::time::timeout(
        std::time::Duration::from_secs(3),
        tokio::net::TcpStream::connect(target),
    )
    .await
    {
        Ok(Ok(_)) => "reachable".into(),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused: nothing listens there".into()
        }
        Ok(Err(e)) => format!("cannot connect: {e}"),
        Err(_) => "no answer within 3 s".into(),
    }
}

/// A refusal the probe reported (`refused: ConnectionRefusedError`) in plain words.
fn plain(text: &str) -> String {
    let Some(kind) = text.strip_prefix("refused: ") else {
        return text.to_owned();
    };
    let words = match kind {
        "gaierror" => "the name does not resolve",
        "ConnectionRefusedError" | "ConnectionResetError" => "the connection was refused",
        "TimeoutError" | "timeout" => "the connection timed out",
        "OSError" | "PermissionError" => "the connection was not allowed",
        other => other,
    };
    format!("refused: {words}")
}

/// The network probe run in a sandbox on the allow-list: prints one JSON line.
const PROBE_PY: &str = r#"import json, socket
out = {}
try:
    socket.create_connection(('169.254.169.254', 80), timeout=3).close()
    out['metadata'] = 'reached'
except OSError as e:
    out['metadata'] = 'refused: ' + type(e).__name__
try:
    socket.getaddrinfo('unlisted.invalid', 443)
    out['unlisted'] = 'resolved'
except OSError as e:
    out['unlisted'] = 'refused: ' + type(e).__name__
print(json.dumps(out))
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_are_pem_or_nothing() {
        assert_eq!(check_certificates(""), Ok(()));
        let one = "-----BEGIN CERTIFICATE-----\nTUlJQg==\n-----END CERTIFICATE-----";
        assert_eq!(check_certificates(&format!("{one}\n{one}\n")), Ok(()));
        assert!(check_certificates("hello")
            .unwrap_err()
            .starts_with("Paste PEM"));
        assert!(check_certificates("-----BEGIN CERTIFICATE-----\nTUlJQg==")
            .unwrap_err()
            .contains("has no"));
        assert!(
            check_certificates("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----")
                .unwrap_err()
                .contains("not valid base64")
        );
    }
}
