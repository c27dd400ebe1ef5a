//! Sign-in rate limits that stop guessing without letting a stranger lock an admin out.
//!
//! The rule (also in the README), for failures inside a sliding window (15 min by default):
//! 1. **Account from one address**: after `per_pair` failures (5), that address may not try
//!    that account again until the window moves on. Other addresses are not affected, so five
//!    wrong passwords from somewhere else never lock the admin out.
//! 2. **Address**: after `per_address` failures (20) across all accounts, the address may not
//!    try any account (one guesser spraying many accounts).
//! 3. **Account from everywhere**: after `per_account` failures (100) from all addresses, the
//!    account is throttled, not locked: an address must wait between attempts, 1 s after the
//!    first failure past the ceiling, doubling with each further one up to the window. An
//!    address the account signed in from successfully before (the last 30 days, kept here)
//!    is exempt, so a distributed guesser slows down while the admin's usual address does not.
//!
//! Kept in memory: a restart forgives, which is acceptable for a single binary (shared
//! counters for several replicas are a later step).

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Beyond this many tracked keys, keys with nothing left inside the window are dropped.
const MAX_KEYS: usize = 10_000;
/// Addresses remembered per account as ones it signed in from.
const MAX_KNOWN_ADDRESSES: usize = 32;
/// How long a successful sign-in keeps an address exempt from the account's throttle.
const KNOWN_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Debug)]
pub struct LoginLimiter {
    per_pair: u32,
    per_address: u32,
    per_account: u32,
    window: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    failures: HashMap<Key, VecDeque<Instant>>,
    /// Per account: addresses it signed in from, with when.
    known: HashMap<String, Vec<(IpAddr, Instant)>>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Key {
    Pair(String, IpAddr),
    Address(IpAddr),
    Account(String),
}

impl LoginLimiter {
    pub fn new(per_pair: u32, per_address: u32, per_account: u32, window: Duration) -> Self {
        Self {
            per_pair,
            per_address,
            per_account,
            window,
            state: Mutex::default(),
        }
    }

    /// `Err(retry_after)` when this address may not try this account now.
    pub fn check(&self, account: &str, address: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut state = self.state.lock().expect("limiter lock");
        let window = self.window;
        let mut waits = Vec::new();
        for (key, limit) in [
            (Key::Pair(account.to_owned(), address), self.per_pair),
            (Key::Address(address), self.per_address),
        ] {
            if let Some(times) = state.failures.get_mut(&key) {
                prune(times, now, window);
                if let Some(oldest) = times.front() {
                    if times.len() >= limit as usize {
                        waits.push(window.saturating_sub(now - *oldest));
                    }
                }
            }
        }
        let known = state.is_known(account, address, now);
        if let Some(times) = state.failures.get_mut(&Key::Account(account.to_owned())) {
            prune(times, now, window);
            let over = times.len().saturating_sub(self.per_account as usize);
            if over > 0 && !known {
                let backoff = Duration::from_secs(1u64 << (over - 1).min(20)).min(window);
                let last = *times.back().expect("over the ceiling means not empty");
                let since = now - last;
                if since < backoff {
                    waits.push(backoff - since);
                }
            }
        }
        match waits.into_iter().max() {
            Some(wait) => Err(wait.max(Duration::from_secs(1))),
            None => Ok(()),
        }
    }

    pub fn record_failure(&self, account: &str, address: IpAddr) {
        let now = Instant::now();
        let mut state = self.state.lock().expect("limiter lock");
        if state.failures.len() >= MAX_KEYS {
            let window = self.window;
            state.failures.retain(|_, times| {
                prune(times, now, window);
                !times.is_empty()
            });
        }
        for key in [
            Key::Pair(account.to_owned(), address),
            Key::Address(address),
            Key::Account(account.to_owned()),
        ] {
            state.failures.entry(key).or_default().push_back(now);
        }
    }

    /// A successful sign-in clears the failures of this account from this address and
    /// remembers the address for the account. The address' own count and the account's
    /// count from everywhere stay: one good password must not reset a guesser's budget.
    pub fn record_success(&self, account: &str, address: IpAddr) {
        let now = Instant::now();
        let mut state = self.state.lock().expect("limiter lock");
        state
            .failures
            .remove(&Key::Pair(account.to_owned(), address));
        if state.known.len() >= MAX_KEYS && !state.known.contains_key(account) {
            state
                .known
                .retain(|_, seen| seen.iter().any(|(_, at)| now - *at < KNOWN_FOR));
        }
        let seen = state.known.entry(account.to_owned()).or_default();
        seen.retain(|(ip, at)| *ip != address && now - *at < KNOWN_FOR);
        seen.push((address, now));
        if seen.len() > MAX_KNOWN_ADDRESSES {
            seen.remove(0);
        }
    }
}

impl State {
    fn is_known(&self, account: &str, address: IpAddr, now: Instant) -> bool {
        self.known.get(account).is_some_and(|seen| {
            seen.iter()
                .any(|(ip, at)| *ip == address && now - *at < KNOWN_FOR)
        })
    }
}

fn prune(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= window)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));

    fn address(n: u8) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, n))
    }

    #[test]
    fn an_address_locks_itself_out_of_an_account_and_nobody_else() {
        let limiter = LoginLimiter::new(3, 100, 100, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(limiter.check("alice", AWAY).is_ok());
            limiter.record_failure("alice", AWAY);
        }
        let wait = limiter.check("alice", AWAY).unwrap_err();
        assert!(
            wait > Duration::from_secs(58) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        assert!(
            limiter.check("alice", HOME).is_ok(),
            "the account is still open from another address"
        );
        assert!(limiter.check("bob", AWAY).is_ok());
    }

    #[test]
    fn address_locks_after_its_limit_across_accounts() {
        let limiter = LoginLimiter::new(100, 4, 100, Duration::from_secs(60));
        for n in 0..4 {
            limiter.record_failure(&format!("user{n}"), HOME);
        }
        assert!(limiter.check("someone-new", HOME).is_err());
        assert!(limiter.check("someone-new", AWAY).is_ok());
    }

    #[test]
    fn past_the_account_ceiling_unknown_addresses_back_off_and_known_ones_do_not() {
        let limiter = LoginLimiter::new(5, 100, 4, Duration::from_secs(900));
        limiter.record_success("admin", HOME);
        for n in 0..4 {
            limiter.record_failure("admin", address(n));
        }
        assert!(
            limiter.check("admin", address(50)).is_ok(),
            "at the ceiling, not past it"
        );
        limiter.record_failure("admin", address(4));
        let first = limiter.check("admin", address(51)).unwrap_err();
        assert_eq!(first, Duration::from_secs(1));
        limiter.record_failure("admin", address(5));
        limiter.record_failure("admin", address(6));
        let third = limiter.check("admin", address(52)).unwrap_err();
        assert!(
            third > Duration::from_secs(3) && third <= Duration::from_secs(4),
            "doubles with each failure past the ceiling: {third:?}"
        );
        assert!(
            limiter.check("admin", HOME).is_ok(),
            "the address the admin signed in from is never throttled by strangers"
        );
    }

    #[test]
    fn the_backoff_never_exceeds_the_window() {
        let limiter = LoginLimiter::new(1000, 1000, 1, Duration::from_secs(60));
        for n in 0..40 {
            limiter.record_failure("admin", address(n));
        }
        let wait = limiter.check("admin", AWAY).unwrap_err();
        assert!(wait <= Duration::from_secs(60), "{wait:?}");
    }

    #[test]
    fn failures_expire_with_the_window_and_success_clears_the_pair() {
        let limiter = LoginLimiter::new(1, 100, 100, Duration::from_millis(30));
        limiter.record_failure("alice", HOME);
        assert!(limiter.check("alice", HOME).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(limiter.check("alice", HOME).is_ok());

        limiter.record_failure("carol", HOME);
        limiter.record_success("carol", HOME);
        assert!(limiter.check("carol", HOME).is_ok());
    }
}
