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
/// Longest account name the limiter keeps (whatever was typed; real names are far shorter).
const MAX_ACCOUNT_CHARS: usize = 64;
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

    /// Starts a sign-in attempt: `Err(retry_after)` when this address may not try this
    /// account now. Otherwise the attempt counts as a failure at once (so concurrent attempts
    /// cannot all pass before any is recorded) until `Attempt::succeeded` takes it back.
    /// `exists`: whether the account exists; only real accounts get per-account counters
    /// (made-up names would only fill memory).
    pub fn begin(
        &self,
        account: &str,
        address: IpAddr,
        exists: bool,
    ) -> Result<Attempt<'_>, Duration> {
        let account: String = account.chars().take(MAX_ACCOUNT_CHARS).collect();
        let now = Instant::now();
        let mut state = self.state.lock().expect("limiter lock");
        if let Some(wait) = self.wait(&mut state, &account, address, now) {
            return Err(wait.max(Duration::from_secs(1)));
        }
        if state.failures.len() >= MAX_KEYS {
            let window = self.window;
            state.failures.retain(|_, times| {
                prune(times, now, window);
                !times.is_empty()
            });
        }
        let mut keys = vec![Key::Address(address)];
        if exists {
            keys.push(Key::Pair(account.clone(), address));
            keys.push(Key::Account(account.clone()));
        }
        for key in &keys {
            state
                .failures
                .entry(key.clone())
                .or_default()
                .push_back(now);
        }
        Ok(Attempt {
            limiter: self,
            account,
            address,
            at: now,
            keys,
        })
    }

    /// How long this address must wait before trying this account, if at all.
    fn wait(
        &self,
        state: &mut State,
        account: &str,
        address: IpAddr,
        now: Instant,
    ) -> Option<Duration> {
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
        waits.into_iter().max()
    }
}

/// A sign-in being checked. Counted as a failure from the start; dropping it without
/// `succeeded()` (a wrong password, or a request that went away) leaves it counted.
#[must_use = "a sign-in attempt is a failure unless it succeeded()"]
pub struct Attempt<'a> {
    limiter: &'a LoginLimiter,
    account: String,
    address: IpAddr,
    at: Instant,
    keys: Vec<Key>,
}

impl Attempt<'_> {
    /// The password could not be checked (no hashing slot came free): the attempt is taken
    /// back without forgiving anything else.
    pub fn withdrawn(self) {
        let mut state = self.limiter.state.lock().expect("limiter lock");
        state.take_back(&self.keys, self.at);
    }

    /// The password was right: the attempt is no failure, this account's failures from this
    /// address are forgiven, and the address is remembered as one the account signs in
    /// from. The address' count and the account's count from everywhere keep their other
    /// entries: one good password must not reset a guesser's budget.
    pub fn succeeded(self) {
        let now = Instant::now();
        let (account, address) = (self.account, self.address);
        let mut state = self.limiter.state.lock().expect("limiter lock");
        state.take_back(&self.keys, self.at);
        state.failures.remove(&Key::Pair(account.clone(), address));
        if state.known.len() >= MAX_KEYS && !state.known.contains_key(&account) {
            state
                .known
                .retain(|_, seen| seen.iter().any(|(_, at)| now - *at < KNOWN_FOR));
        }
        let seen = state.known.entry(account).or_default();
        seen.retain(|(ip, at)| *ip != address && now - *at < KNOWN_FOR);
        seen.push((address, now));
        if seen.len() > MAX_KNOWN_ADDRESSES {
            seen.remove(0);
        }
    }
}

impl State {
    /// Removes the failure an attempt at `at` recorded under each of `keys`.
    fn take_back(&mut self, keys: &[Key], at: Instant) {
        for key in keys {
            if let Some(times) = self.failures.get_mut(key) {
                if let Some(position) = times.iter().rposition(|t| *t == at) {
                    times.remove(position);
                }
                if times.is_empty() {
                    self.failures.remove(key);
                }
            }
        }
    }

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

    /// A wrong password: the attempt is dropped, so it stays counted.
    fn fail(limiter: &LoginLimiter, account: &str, from: IpAddr) -> Result<(), Duration> {
        limiter.begin(account, from, true).map(drop)
    }

    fn succeed(limiter: &LoginLimiter, account: &str, from: IpAddr) -> Result<(), Duration> {
        limiter.begin(account, from, true).map(Attempt::succeeded)
    }

    #[test]
    fn an_address_locks_itself_out_of_an_account_and_nobody_else() {
        let limiter = LoginLimiter::new(3, 100, 100, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(fail(&limiter, "alice", AWAY).is_ok());
        }
        let wait = fail(&limiter, "alice", AWAY).unwrap_err();
        assert!(
            wait > Duration::from_secs(58) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        assert!(
            succeed(&limiter, "alice", HOME).is_ok(),
            "the account is still open from another address"
        );
        assert!(fail(&limiter, "bob", AWAY).is_ok());
    }

    #[test]
    fn attempts_in_flight_count_before_their_outcome_is_known() {
        let limiter = LoginLimiter::new(3, 100, 100, Duration::from_secs(60));
        let pending: Vec<_> = (0..3)
            .map(|_| limiter.begin("alice", AWAY, true).unwrap())
            .collect();

        let fourth = limiter.begin("alice", AWAY, true);

        assert!(
            fourth.is_err(),
            "three concurrent guesses use up the budget"
        );
        drop(fourth);
        pending.into_iter().next().unwrap().succeeded();
        assert!(
            succeed(&limiter, "alice", AWAY).is_ok(),
            "a right password clears the pair"
        );
    }

    #[test]
    fn address_locks_after_its_limit_across_accounts() {
        let limiter = LoginLimiter::new(100, 4, 100, Duration::from_secs(60));
        for n in 0..4 {
            fail(&limiter, &format!("user{n}"), HOME).unwrap();
        }
        assert!(fail(&limiter, "someone-new", HOME).is_err());
        assert!(fail(&limiter, "someone-new", AWAY).is_ok());
    }

    #[test]
    fn made_up_accounts_only_count_against_their_address() {
        let limiter = LoginLimiter::new(1, 1000, 1, Duration::from_secs(60));
        for n in 0..50 {
            drop(limiter.begin(&format!("nobody{n}"), AWAY, false).unwrap());
        }
        let state = limiter.state.lock().unwrap();
        assert_eq!(state.failures.len(), 1, "one address key, no per-name keys");
    }

    #[test]
    fn past_the_account_ceiling_unknown_addresses_back_off_and_known_ones_do_not() {
        let limiter = LoginLimiter::new(5, 100, 4, Duration::from_secs(900));
        succeed(&limiter, "admin", HOME).unwrap();
        for n in 0..4 {
            fail(&limiter, "admin", address(n)).unwrap();
        }
        assert!(
            limiter.begin("admin", address(50), true).is_ok(),
            "at the ceiling, not past it"
        );
        let first = fail(&limiter, "admin", address(51)).unwrap_err();
        assert_eq!(first, Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(1100));
        fail(&limiter, "admin", address(5)).unwrap();
        let third = fail(&limiter, "admin", address(52)).unwrap_err();
        assert!(
            third > Duration::from_secs(1) && third <= Duration::from_secs(2),
            "doubles with each failure past the ceiling: {third:?}"
        );
        assert!(
            succeed(&limiter, "admin", HOME).is_ok(),
            "the address the admin signed in from is never throttled by strangers"
        );
    }

    #[test]
    fn the_backoff_never_exceeds_the_window() {
        let limiter = LoginLimiter::new(1000, 1000, 1, Duration::from_secs(60));
        for n in 0..40 {
            let _ = fail(&limiter, "admin", address(n));
        }
        limiter.state.lock().unwrap().failures.insert(
            Key::Account("admin".into()),
            std::iter::repeat_n(Instant::now(), 40).collect(),
        );
        let wait = fail(&limiter, "admin", AWAY).unwrap_err();
        assert!(wait <= Duration::from_secs(60), "{wait:?}");
    }

    #[test]
    fn failures_expire_with_the_window_and_success_clears_the_pair() {
        let limiter = LoginLimiter::new(1, 100, 100, Duration::from_millis(30));
        fail(&limiter, "alice", HOME).unwrap();
        assert!(fail(&limiter, "alice", HOME).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(succeed(&limiter, "alice", HOME).is_ok());

        limiter.state.lock().unwrap().failures.insert(
            Key::Pair("carol".into(), HOME),
            VecDeque::from([Instant::now()]),
        );
        let _ = succeed(&limiter, "carol", AWAY);
        assert!(
            fail(&limiter, "carol", HOME).is_err(),
            "success elsewhere forgives nothing here"
        );
    }
}
