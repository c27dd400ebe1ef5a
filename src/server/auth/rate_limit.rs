//! Sign-in rate limits that stop guessing without letting a stranger lock an admin out.
//!
//! The rule (also in the README), for failures inside a sliding window (15 min by default):
//! 1. **Account from one address**: after `per_pair` failures (5), that address may not try
//!    that account again until the window moves on. Other addresses are not affected, so five
//!    wrong passwords from somewhere else never lock the admin out.
//! 2. **Address**: after `per_address` failures (20) across all accounts, the address may not
//!    try any account (one guesser spraying many accounts).
//! 3. **Account from everywhere**: after `per_account` failures (100) from all addresses, the
//!    account is throttled, not locked: an address must wait between attempts, 1 s (the
//!    `backoff`) after the first failure past the ceiling, doubling with each further one up to the window. An
//!    address the account signed in from successfully before (the last 30 days, kept here)
//!    is exempt, so a distributed guesser slows down while the admin's usual address does not.
//!
//! A console alone on SQLite keeps the counts in memory (a restart forgives). Replicas on one
//! PostgreSQL database keep them in the database ([`SharedLoginLimiter`]), with the same rule,
//! so failures spread over the replicas count once.

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

pub use crate::server::clock::Clock;

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
    /// The first wait past the account's ceiling (doubling after each further failure).
    backoff: Duration,
    window: Duration,
    state: Mutex<State>,
    clock: Clock,
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
            backoff: Duration::from_secs(1),
            window,
            state: Mutex::default(),
            clock: Clock::default(),
        }
    }

    /// The first wait past the account's ceiling, instead of 1 s.
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// The limiter reading the time from `clock` (tests move one by hand).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Starts a sign-in attempt: `Err(retry_after)` when this address may not try this
    /// account now. Otherwise the attempt counts as a failure at once (so concurrent attempts
    /// cannot all pass before any is recorded) until `Attempt::succeeded` takes it back.
    /// Every name is counted alike, whether an account has it or not: the answers must not
    /// tell the two apart (an address adds per-name keys only until its own limit stops it).
    pub fn begin(&self, account: &str, address: IpAddr) -> Result<Attempt<'_>, Duration> {
        let account: String = account.chars().take(MAX_ACCOUNT_CHARS).collect();
        let now = self.clock.now();
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
        let keys = vec![
            Key::Address(address),
            Key::Pair(account.clone(), address),
            Key::Account(account.clone()),
        ];
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
                let backoff = self
                    .backoff
                    .saturating_mul(1u32 << (over - 1).min(20))
                    .min(window);
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
/// `succeeded()` (a request that went away) leaves it counted at the time it began, and
/// `failed()` (a wrong password) counts it at the time the check ended.
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

    /// The password was wrong: the failure is timed from now, when it is known, not from
    /// when the check began. The account's backoff runs from the last failure, and a slow
    /// check (argon2 on a busy machine takes seconds) must not use up the wait.
    pub fn failed(self) {
        let now = self.limiter.clock.now();
        let mut state = self.limiter.state.lock().expect("limiter lock");
        state.take_back(&self.keys, self.at);
        for key in &self.keys {
            let times = state.failures.entry(key.clone()).or_default();
            let later = times.iter().rposition(|t| *t <= now).map_or(0, |i| i + 1);
            times.insert(later, now);
        }
    }

    /// The password was right: the attempt is no failure, this account's failures from this
    /// address are forgiven, and the address is remembered as one the account signs in
    /// from. The address' count and the account's count from everywhere keep their other
    /// entries: one good password must not reset a guesser's budget.
    pub fn succeeded(self) {
        let now = self.limiter.clock.now();
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

/// The sign-in limits in force: this process's own, or the ones replicas share.
#[derive(Debug)]
pub enum SignInLimits {
    Memory(LoginLimiter),
    Shared(SharedLoginLimiter),
}

/// Why a sign-in may not be tried now.
#[derive(Debug)]
pub enum Refusal {
    /// Too many failures: try again after this long.
    Wait(Duration),
    /// The shared counts could not be read.
    Unavailable,
}

/// A sign-in being checked, counted as a failure until it `succeeded()`.
#[must_use = "a sign-in attempt is a failure unless it succeeded()"]
pub enum Pass<'a> {
    Memory(Attempt<'a>),
    Shared(&'a SharedLoginLimiter, SharedAttempt),
}

impl std::fmt::Debug for Pass<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pass::Memory(_) => f.write_str("Pass::Memory"),
            Pass::Shared(_, attempt) => write!(f, "Pass::Shared({:?})", attempt.ids),
        }
    }
}

impl SignInLimits {
    /// [`LoginLimiter::begin`], wherever the counts are kept.
    pub async fn begin(&self, account: &str, address: IpAddr) -> Result<Pass<'_>, Refusal> {
        match self {
            SignInLimits::Memory(limiter) => limiter
                .begin(account, address)
                .map(Pass::Memory)
                .map_err(Refusal::Wait),
            SignInLimits::Shared(limiter) => match limiter.begin(account, address).await {
                Ok(Ok(attempt)) => Ok(Pass::Shared(limiter, attempt)),
                Ok(Err(wait)) => Err(Refusal::Wait(wait)),
                Err(error) => {
                    tracing::error!(%error, "sign-in: could not read the shared sign-in counts");
                    Err(Refusal::Unavailable)
                }
            },
        }
    }
}

impl Pass<'_> {
    /// [`Attempt::withdrawn`].
    pub async fn withdrawn(self) {
        match self {
            Pass::Memory(attempt) => attempt.withdrawn(),
            Pass::Shared(limiter, attempt) => limiter.withdrawn(attempt).await,
        }
    }

    /// [`Attempt::failed`].
    pub async fn failed(self) {
        match self {
            Pass::Memory(attempt) => attempt.failed(),
            Pass::Shared(limiter, attempt) => limiter.failed(attempt).await,
        }
    }

    /// [`Attempt::succeeded`].
    pub async fn succeeded(self) {
        match self {
            Pass::Memory(attempt) => attempt.succeeded(),
            Pass::Shared(limiter, attempt) => limiter.succeeded(attempt).await,
        }
    }
}

/// The same rule as [`LoginLimiter`], with the failures and the known addresses in the
/// database replicas share (`login_failure`, `login_known`). Each check reads the counts of
/// the keys it concerns into a [`State`] and decides with [`LoginLimiter`]'s own code, inside
/// a write transaction, so replicas checking at once take turns.
#[derive(Debug)]
pub struct SharedLoginLimiter {
    rule: LoginLimiter,
    pool: sqlx::AnyPool,
}

/// A sign-in counted in the database: the failure rows it added.
#[derive(Debug)]
pub struct SharedAttempt {
    ids: Vec<i64>,
    account: String,
    address: IpAddr,
}

impl Key {
    /// How the key is written in `login_failure.key`.
    fn text(&self) -> String {
        match self {
            Key::Pair(account, address) => format!("pair|{address}|{account}"),
            Key::Address(address) => format!("address|{address}"),
            Key::Account(account) => format!("account|{account}"),
        }
    }
}

impl SharedLoginLimiter {
    pub fn new(rule: LoginLimiter, pool: sqlx::AnyPool) -> Self {
        SharedLoginLimiter { rule, pool }
    }

    async fn begin(
        &self,
        account: &str,
        address: IpAddr,
    ) -> Result<Result<SharedAttempt, Duration>, sqlx::Error> {
        use crate::server::db::{clock, login_limit};
        let account: String = account.chars().take(MAX_ACCOUNT_CHARS).collect();
        let (now, now_ms) = (self.rule.clock.now(), clock::unix_millis());
        let all = [
            Key::Pair(account.clone(), address),
            Key::Address(address),
            Key::Account(account.clone()),
        ];
        let texts: Vec<String> = all.iter().map(Key::text).collect();
        let mut tx =
            crate::server::db::begin_locked(&self.pool, crate::server::db::lock::SIGN_IN).await?;
        login_limit::forget_before(&mut tx, now_ms - self.rule.window.as_millis() as i64).await?;
        let mut state = State::default();
        for (text, at_ms) in login_limit::failures(&mut tx, &texts).await? {
            let Some(key) = all.iter().find(|key| key.text() == text) else {
                continue;
            };
            let age = Duration::from_millis((now_ms - at_ms).max(0) as u64);
            let at = now.checked_sub(age).unwrap_or(now);
            state.failures.entry(key.clone()).or_default().push_back(at);
        }
        let known_since = now_ms - KNOWN_FOR.as_millis() as i64;
        if login_limit::is_known(&mut tx, &account, &address.to_string(), known_since).await? {
            state.known.insert(account.clone(), vec![(address, now)]);
        }
        if let Some(wait) = self.rule.wait(&mut state, &account, address, now) {
            tx.commit().await?;
            return Ok(Err(wait.max(Duration::from_secs(1))));
        }
        let mut ids = Vec::with_capacity(all.len());
        for key in &all {
            ids.push(login_limit::record(&mut tx, &key.text(), now_ms).await?);
        }
        tx.commit().await?;
        Ok(Ok(SharedAttempt {
            ids,
            account,
            address,
        }))
    }

    async fn withdrawn(&self, attempt: SharedAttempt) {
        let done = async {
            let mut conn = self.pool.acquire().await?;
            crate::server::db::login_limit::take_back(&mut conn, &attempt.ids).await
        };
        if let Err(error) = done.await {
            tracing::warn!(%error, "sign-in: could not take back a withdrawn attempt");
        }
    }

    async fn failed(&self, attempt: SharedAttempt) {
        use crate::server::db::{clock, login_limit};
        let done = async {
            let mut conn = self.pool.acquire().await?;
            login_limit::restamp(&mut conn, &attempt.ids, clock::unix_millis()).await
        };
        if let Err(error) = done.await {
            // The failure stays counted, timed from when the attempt began.
            tracing::warn!(%error, "sign-in: could not time a failed attempt");
        }
    }

    async fn succeeded(&self, attempt: SharedAttempt) {
        use crate::server::db::{clock, login_limit};
        let done = async {
            let mut tx =
                crate::server::db::begin_locked(&self.pool, crate::server::db::lock::SIGN_IN)
                    .await?;
            login_limit::take_back(&mut tx, &attempt.ids).await?;
            let pair = Key::Pair(attempt.account.clone(), attempt.address).text();
            login_limit::forgive(&mut tx, &pair).await?;
            login_limit::remember(
                &mut tx,
                &attempt.account,
                &attempt.address.to_string(),
                clock::unix_millis(),
                MAX_KNOWN_ADDRESSES as i64,
            )
            .await?;
            tx.commit().await
        };
        if let Err(error) = done.await {
            tracing::warn!(%error, "sign-in: could not record a successful sign-in");
        }
    }
}

#[cfg(test)]
#[path = "rate_limit_tests.rs"]
mod tests;
