//! One run's network state: the names its DNS answered (each with a synthetic address the
//! console maps back), its connection log, and its byte budget.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv4Addr},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
};

use tokio_util::sync::CancellationToken;

use super::policy::Policy;
use crate::model::egress::{Connection, EgressReport, ALLOWED, DENIED, MAX_LISTED};

/// The sandbox side of the TUN: its own address, the DNS server it is told about, and the
/// range the synthetic addresses come from (198.18.0.0/15, reserved for benchmarking, so no
/// real destination is ever shadowed).
pub const SANDBOX_ADDRESS: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
pub const DNS_ADDRESS: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const FIRST_SYNTHETIC: u32 = u32::from_be_bytes([198, 18, 1, 0]);
const LAST_SYNTHETIC: u32 = u32::from_be_bytes([198, 19, 255, 254]);
/// Names one run may look up (each takes a synthetic address for the run).
const MAX_NAMES: usize = 4096;

#[derive(Default)]
struct Names {
    by_address: HashMap<Ipv4Addr, String>,
    by_name: HashMap<String, Ipv4Addr>,
}

#[derive(Default)]
struct Log {
    connections: Vec<Connection>,
    unlisted: u64,
    denied: u64,
}

/// A run's egress: shared by the packet pump, the DNS answers and every relayed connection.
pub struct Session {
    pub policy: Arc<Policy>,
    names: Mutex<Names>,
    log: Mutex<Log>,
    bytes_out: AtomicU64,
    bytes_in: AtomicU64,
    limit_reached: AtomicBool,
    /// Cancelled when the run ends: the sandbox's network stops.
    pub closed: CancellationToken,
    /// Cancelled when the byte budget is spent (or the run ends): every connection closes at
    /// once, the program sees it, and new ones are refused.
    pub cut: CancellationToken,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl Session {
    pub fn new(policy: Arc<Policy>) -> Arc<Session> {
        Arc::new(Session {
            policy,
            names: Mutex::default(),
            log: Mutex::default(),
            bytes_out: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            limit_reached: AtomicBool::new(false),
            closed: CancellationToken::new(),
            cut: CancellationToken::new(),
        })
    }

    /// The synthetic address for `name`, the same for the whole run; `None` once the run has
    /// looked up [`MAX_NAMES`] names.
    pub fn address_for(&self, name: &str) -> Option<Ipv4Addr> {
        let mut names = self.names.lock().expect("names lock");
        if let Some(address) = names.by_name.get(name) {
            return Some(*address);
        }
        let next = FIRST_SYNTHETIC + names.by_name.len() as u32;
        if names.by_name.len() >= MAX_NAMES || next > LAST_SYNTHETIC {
            return None;
        }
        let address = Ipv4Addr::from(next);
        names.by_name.insert(name.to_owned(), address);
        names.by_address.insert(address, name.to_owned());
        Some(address)
    }

    /// The name the run looked up to get `address`, if it is one of ours.
    pub fn name_of(&self, address: IpAddr) -> Option<String> {
        let IpAddr::V4(v4) = address else {
            return None;
        };
        self.names
            .lock()
            .expect("names lock")
            .by_address
            .get(&v4)
            .cloned()
    }

    /// Logs an attempt; returns its index when it is listed (for its byte counts later).
    pub fn record(&self, connection: Connection) -> Option<usize> {
        let mut log = self.log.lock().expect("log lock");
        if connection.denied() {
            log.denied += 1;
        }
        if log.connections.len() >= MAX_LISTED {
            log.unlisted += 1;
            return None;
        }
        log.connections.push(connection);
        Some(log.connections.len() - 1)
    }

    /// Logs a refused attempt.
    pub fn deny(
        &self,
        protocol: &str,
        name: Option<&str>,
        address: Option<IpAddr>,
        port: u16,
        reason: Option<String>,
    ) {
        self.record(Connection {
            protocol: protocol.into(),
            name: name.map(str::to_owned),
            address: address.map(|a| a.to_string()),
            port,
            verdict: DENIED.into(),
            reason,
            bytes_out: 0,
            bytes_in: 0,
        });
    }

    /// Logs an allowed connection to `address`.
    pub fn allow(&self, name: &str, address: IpAddr, port: u16) -> Option<usize> {
        self.record(Connection {
            protocol: "tcp".into(),
            name: Some(name.to_owned()),
            address: Some(address.to_string()),
            port,
            verdict: ALLOWED.into(),
            reason: None,
            bytes_out: 0,
            bytes_in: 0,
        })
    }

    /// Notes why an allowed connection went nowhere (the destination refused, ...).
    pub fn failed(&self, index: Option<usize>, reason: String) {
        if let Some(i) = index {
            if let Some(c) = self.log.lock().expect("log lock").connections.get_mut(i) {
                c.reason = Some(reason);
            }
        }
    }

    /// Takes `n` bytes from the run's budget; `false` (and every connection cut) once spent.
    pub fn spend(&self, index: Option<usize>, outbound: bool, n: usize) -> bool {
        let n = n as u64;
        let counter = if outbound {
            &self.bytes_out
        } else {
            &self.bytes_in
        };
        counter.fetch_add(n, Ordering::Relaxed);
        if let Some(i) = index {
            if let Some(c) = self.log.lock().expect("log lock").connections.get_mut(i) {
                match outbound {
                    true => c.bytes_out += n,
                    false => c.bytes_in += n,
                }
            }
        }
        let total = self.bytes_out.load(Ordering::Relaxed) + self.bytes_in.load(Ordering::Relaxed);
        if total > self.policy.max_bytes {
            self.limit_reached.store(true, Ordering::Relaxed);
            self.cut.cancel();
            return false;
        }
        true
    }

    /// Ends the run's network (every connection closes) and returns what it did.
    pub fn finish(&self) -> EgressReport {
        self.cut.cancel();
        self.closed.cancel();
        let log = self.log.lock().expect("log lock");
        EgressReport {
            connections: log.connections.clone(),
            unlisted: log.unlisted,
            egress_denied: log.denied,
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            limit_reached: self.limit_reached.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_address_and_map_back() {
        let session = Session::new(Arc::new(Policy::default()));
        let a = session.address_for("a.test").unwrap();
        let b = session.address_for("b.test").unwrap();
        assert_eq!(a, Ipv4Addr::new(198, 18, 1, 0));
        assert_ne!(a, b);
        assert_eq!(session.address_for("a.test"), Some(a));
        assert_eq!(session.name_of(IpAddr::V4(b)).as_deref(), Some("b.test"));
        assert_eq!(session.name_of(IpAddr::from([1, 2, 3, 4])), None);
    }

    #[test]
    fn the_budget_cuts_both_directions_together() {
        let policy = Policy::parse("a.test", "", 100).unwrap();
        let session = Session::new(Arc::new(policy));
        let i = session.allow("a.test", IpAddr::from([127, 0, 0, 1]), 443);
        assert!(session.spend(i, true, 40));
        assert!(session.spend(i, false, 60));
        assert!(!session.cut.is_cancelled());
        assert!(!session.spend(i, false, 1));
        assert!(session.cut.is_cancelled());
        assert!(
            !session.closed.is_cancelled(),
            "the network stays up to close connections"
        );
        let report = session.finish();
        assert!(report.limit_reached);
        assert_eq!((report.bytes_out, report.bytes_in), (40, 61));
        assert_eq!(report.connections[0].bytes_in, 61);
    }
}
