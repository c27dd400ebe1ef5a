//! Connections counted per client address, for the per-address cap of the accept loop.

use std::{
    net::IpAddr,
    sync::{Arc, Mutex},
};

use ipnet::IpNet;

/// Connections held per peer address.
#[derive(Clone, Default)]
pub(super) struct PerAddress(Arc<Mutex<std::collections::HashMap<IpAddr, usize>>>);

/// One connection counted against its address; uncounted when dropped.
pub(super) struct Held {
    counts: PerAddress,
    address: Option<IpAddr>,
}

impl PerAddress {
    /// Counts a connection from `address`, or `None` when the address holds `max` already.
    /// A trusted proxy's connections are not counted (its clients are many).
    pub(super) fn take(&self, address: IpAddr, trusted: &[IpNet], max: usize) -> Option<Held> {
        let address = address.to_canonical();
        if trusted.iter().any(|net| net.contains(&address)) {
            return Some(Held {
                counts: self.clone(),
                address: None,
            });
        }
        let mut counts = self.0.lock().expect("per-address lock");
        let count = counts.entry(address).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Held {
            counts: self.clone(),
            address: Some(address),
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(address) = self.address else { return };
        let mut counts = self.counts.0.lock().expect("per-address lock");
        if let Some(count) = counts.get_mut(&address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&address);
            }
        }
    }
}
