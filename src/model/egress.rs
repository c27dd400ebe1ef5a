//! What a run did on the network under an allow-list: every connection and name lookup the
//! console saw, whether it let it through, and the bytes each way. Wasm-safe (serde only).

use serde::{Deserialize, Serialize};

/// The verdict written in a connection's `verdict` and counted in `egress_denied`.
pub const DENIED: &str = "egress_denied";
pub const ALLOWED: &str = "allowed";

/// How many connections one run's report lists; more are counted in `unlisted`.
pub const MAX_LISTED: usize = 200;

/// One attempt by the program to reach something outside its sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// `tcp`, `udp`, or `dns` (a name lookup).
    pub protocol: String,
    /// The name the program asked for (from its DNS lookup), when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The address the console connected to (allowed), or the one the program tried (an
    /// address literal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub port: u16,
    /// [`ALLOWED`] or [`DENIED`].
    pub verdict: String,
    /// Why it was refused, or why an allowed connection failed; a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bytes from the program to the destination.
    #[serde(default)]
    pub bytes_out: u64,
    /// Bytes from the destination to the program.
    #[serde(default)]
    pub bytes_in: u64,
}

impl Connection {
    pub fn denied(&self) -> bool {
        self.verdict == DENIED
    }

    /// `name:port` (or `address:port`), as the program's error line names it.
    pub fn target(&self) -> String {
        let host = self
            .name
            .as_deref()
            .or(self.address.as_deref())
            .unwrap_or("?");
        match self.protocol.as_str() {
            "dns" => host.to_owned(),
            _ if host.contains(':') => format!("[{host}]:{}", self.port),
            _ => format!("{host}:{}", self.port),
        }
    }
}

/// A run's network report, in its result as `egress` and in its history row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressReport {
    pub connections: Vec<Connection>,
    /// Connections past [`MAX_LISTED`], counted but not listed.
    #[serde(default)]
    pub unlisted: u64,
    /// How many attempts were refused: the machine-readable sign of a denied egress.
    pub egress_denied: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// The run reached its provider's `max_egress_bytes` and its connections were cut.
    #[serde(default)]
    pub limit_reached: bool,
}

impl EgressReport {
    /// Every attempt the run made, listed or not.
    pub fn attempts(&self) -> u64 {
        self.connections.len() as u64 + self.unlisted
    }

    /// The lines appended to the program's stderr, one per refused target (at most 20).
    pub fn denial_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for connection in self.connections.iter().filter(|c| c.denied()) {
            let line = match &connection.reason {
                Some(reason) => format!("egress to {} {reason}", connection.target()),
                None => format!(
                    "egress to {} is not on this provider's allow-list",
                    connection.target()
                ),
            };
            if !lines.contains(&line) && lines.len() < 20 {
                lines.push(line);
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(
        protocol: &str,
        name: Option<&str>,
        address: Option<&str>,
        port: u16,
    ) -> Connection {
        Connection {
            protocol: protocol.into(),
            name: name.map(str::to_owned),
            address: address.map(str::to_owned),
            port,
            verdict: DENIED.into(),
            reason: None,
            bytes_out: 0,
            bytes_in: 0,
        }
    }

    #[test]
    fn denials_read_as_one_line_per_target() {
        let report = EgressReport {
            connections: vec![
                connection("tcp", Some("evil.example"), None, 443),
                connection("tcp", Some("evil.example"), None, 443),
                connection("tcp", None, Some("fd00:ec2::254"), 80),
                connection("dns", Some("other.example"), None, 53),
            ],
            egress_denied: 4,
            ..EgressReport::default()
        };
        assert_eq!(
            report.denial_lines(),
            [
                "egress to evil.example:443 is not on this provider's allow-list",
                "egress to [fd00:ec2::254]:80 is not on this provider's allow-list",
                "egress to other.example is not on this provider's allow-list",
            ]
        );
    }
}
