//! Sign-in rate limits: failed attempts counted per account and per client address in a
//! sliding window. Kept in memory: a restart forgives, which is acceptable for a single binary.

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Beyond this many tracked keys, keys with no failure inside the window are dropped.
const MAX_KEYS: usize = 10_000;

#[derive(Debug)]
pub struct LoginLimiter {
    per_account: u32,
    per_address: u32,
    window: Duration,
    failures: Mutex<HashMap<Key, VecDeque<Instant>>>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Key {
    Account(String),
    Address(IpAddr),
}

impl LoginLimiter {
    pub fn new(per_account: u32, per_address: u32, window: Duration) -> Self {
        Self {
            per_account,
            per_address,
            window,
            failures: Mutex::default(),
        }
    }

    /// `Err(retry_after)` when the account or the address has used up its failures.
    pub fn check(&self, account: &str, address: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut failures = self.failures.lock().expect("limiter lock");
        let waits = [
            (Key::Account(account.to_owned()), self.per_account),
            (Key::Address(address), self.per_address),
        ]
        .into_iter()
        .filter_map(|(key, limit)| {
            let times = failures.get_mut(&key)?;
            prune(times, now, self.window);
            let oldest = *times.front()?;
            (times.len() >= limit as usize).then(|| self.window.saturating_sub(now - oldest))
        });
        match waits.max() {
            Some(wait) => Err(wait.max(Duration::from_secs(1))),
            None => Ok(()),
        }
    }

    pub fn record_failure(&self, account: &str, address: IpAddr) {
        let now = Instant::now();
        let mut failures = self.failures.lock().expect("limiter lock");
        if failures.len() >= MAX_KEYS {
            let window = self.window;
            failures.retain(|_, times| {
                prune(times, now, window);
                !times.is_empty()
            });
        }
        for key in [Key::Account(account.to_owned()), Key::Address(address)] {
            failures.entry(key).or_default().push_back(now);
        }
    }

    /// A successful sign-in clears the account's failures (not the address': one good
    /// password must not reset the budget of someone guessing many accounts).
    pub fn record_success(&self, account: &str) {
        self.failures
            .lock()
            .expect("limiter lock")
            .remove(&Key::Account(account.to_owned()));
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

    #[test]
    fn account_locks_after_its_limit_and_other_accounts_stay_open() {
        let limiter = LoginLimiter::new(3, 100, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(limiter.check("alice", HOME).is_ok());
            limiter.record_failure("alice", HOME);
        }
        let wait = limiter.check("alice", AWAY).unwrap_err();
        assert!(
            wait > Duration::from_secs(58) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        assert!(limiter.check("bob", HOME).is_ok());
    }

    #[test]
    fn address_locks_after_its_limit_across_accounts() {
        let limiter = LoginLimiter::new(100, 4, Duration::from_secs(60));
        for n in 0..4 {
            limiter.record_failure(&format!("user{n}"), HOME);
        }
        assert!(limiter.check("someone-new", HOME).is_err());
        assert!(limiter.check("someone-new", AWAY).is_ok());
    }

    #[test]
    fn failures_expire_with_the_window_and_success_clears_the_account() {
        let limiter = LoginLimiter::new(1, 100, Duration::from_millis(30));
        limiter.record_failure("alice", HOME);
        assert!(limiter.check("alice", HOME).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(limiter.check("alice", HOME).is_ok());

        limiter.record_failure("carol", HOME);
        limiter.record_success("carol");
        assert!(limiter.check("carol", HOME).is_ok());
    }
}
