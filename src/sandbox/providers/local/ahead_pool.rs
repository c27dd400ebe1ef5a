//! The local provider's pool of Python sandboxes started ahead: at least `min` ready or
//! warming, more while runs are in progress (one spare per run in progress, up to `max`),
//! started in parallel in the background. A run takes the oldest ready one (or runs cold when
//! there is none) and a replacement starts at once. Housekeeping every few seconds starts
//! replacements for sandboxes near their idle limit, then ends those, and retries a pool that
//! could not fill (saying why in the health report). Closing ends every ready sandbox.

use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex, Weak,
    },
    time::{Duration, Instant},
};

use super::ahead::{self, Ahead, Spec};

/// How often housekeeping looks at the pool.
const HOUSEKEEPING: Duration = Duration::from_secs(5);
/// A ready sandbox this close to its idle limit is replaced and ended.
const RETIRE_BEFORE: Duration = Duration::from_secs(20);
/// After a failed start, how long before the pool tries again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub(super) struct AheadPool {
    spec: Arc<Spec>,
    min: usize,
    max: usize,
    ready: Mutex<VecDeque<Ahead>>,
    warming: AtomicUsize,
    /// Runs in progress on this provider (the pool keeps a spare per run, up to `max`).
    runs: AtomicUsize,
    closed: AtomicBool,
    /// Why the pool could not fill, or why its sandboxes lack a preloaded module.
    problem: Mutex<Option<(Instant, String)>>,
    failed_at: Mutex<Option<Instant>>,
}

/// The pool's counts for the health report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub ready: usize,
    pub warming: usize,
    pub problem: Option<String>,
}

impl AheadPool {
    pub fn new(spec: Spec, min: usize, max: usize) -> Self {
        AheadPool {
            spec: Arc::new(spec),
            min,
            max: max.max(min),
            ready: Mutex::new(VecDeque::new()),
            warming: AtomicUsize::new(0),
            runs: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            problem: Mutex::new(None),
            failed_at: Mutex::new(None),
        }
    }

    pub fn enabled(&self) -> bool {
        self.min > 0
    }

    pub fn counts(&self) -> Counts {
        Counts {
            ready: self.ready.lock().expect("ready lock").len(),
            warming: self.warming.load(Ordering::SeqCst),
            problem: self
                .problem
                .lock()
                .expect("problem lock")
                .as_ref()
                .map(|(_, p)| p.clone()),
        }
    }

    pub fn preload(&self) -> &[String] {
        &self.spec.preload
    }

    /// Starts filling the pool and its housekeeping (once per provider that serves runs).
    pub fn start(self: &Arc<Self>) {
        if !self.enabled() {
            return;
        }
        self.fill();
        let pool = Arc::downgrade(self);
        tokio::spawn(housekeeping(pool));
    }

    /// The oldest ready sandbox that has time left, if any; a replacement starts at once.
    pub fn take(self: &Arc<Self>) -> Option<Ahead> {
        if !self.enabled() || self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let taken = {
            let mut ready = self.ready.lock().expect("ready lock");
            let limit = self.spec.idle.saturating_sub(RETIRE_BEFORE);
            ready.retain(|a| a.born.elapsed() < limit);
            ready.pop_front()
        };
        self.fill();
        taken
    }

    /// Counts a run in progress for as long as the guard lives.
    pub fn running(self: &Arc<Self>) -> RunGuard {
        self.runs.fetch_add(1, Ordering::SeqCst);
        RunGuard(self.clone())
    }

    fn target(&self) -> usize {
        (self.min + self.runs.load(Ordering::SeqCst)).min(self.max)
    }

    /// Starts as many sandboxes as the pool is short of its target, each on its own.
    fn fill(self: &Arc<Self>) {
        if self.closed.load(Ordering::SeqCst) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let failed_recently = self
            .failed_at
            .lock()
            .expect("failed lock")
            .is_some_and(|at| at.elapsed() < RETRY_AFTER);
        if failed_recently {
            return;
        }
        loop {
            let have = self.ready.lock().expect("ready lock").len();
            let warming = self.warming.load(Ordering::SeqCst);
            if have + warming >= self.target() {
                return;
            }
            if self
                .warming
                .compare_exchange(warming, warming + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                continue;
            }
            let pool = self.clone();
            tokio::spawn(async move { pool.start_one().await });
        }
    }

    async fn start_one(self: Arc<Self>) {
        let started = ahead::start(self.spec.clone()).await;
        match started {
            Ok(sandbox) => {
                *self.failed_at.lock().expect("failed lock") = None;
                *self.problem.lock().expect("problem lock") = sandbox
                    .readiness
                    .problem()
                    .map(|problem| (Instant::now(), problem));
                let mut ready = self.ready.lock().expect("ready lock");
                if !self.closed.load(Ordering::SeqCst) {
                    ready.push_back(sandbox);
                }
            }
            Err(error) => {
                tracing::warn!(%error, "could not start a sandbox ahead");
                *self.failed_at.lock().expect("failed lock") = Some(Instant::now());
                *self.problem.lock().expect("problem lock") = Some((
                    Instant::now(),
                    format!("sandboxes cannot be started ahead: {error}"),
                ));
            }
        }
        self.warming.fetch_sub(1, Ordering::SeqCst);
    }

    /// Replaces sandboxes near their idle limit (the replacement first), then tops up.
    fn keep(self: &Arc<Self>) {
        let limit = self.spec.idle.saturating_sub(RETIRE_BEFORE);
        let old: Vec<Ahead> = {
            let mut ready = self.ready.lock().expect("ready lock");
            let (old, young): (VecDeque<_>, VecDeque<_>) =
                ready.drain(..).partition(|a| a.born.elapsed() >= limit);
            *ready = young;
            old.into_iter().collect()
        };
        self.fill();
        drop(old);
    }

    /// Ends every ready sandbox; nothing starts again.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.ready.lock().expect("ready lock").clear();
    }
}

/// A run in progress, as the pool counts them.
pub(super) struct RunGuard(Arc<AheadPool>);

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.0.runs.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn housekeeping(pool: Weak<AheadPool>) {
    let mut tick = tokio::time::interval(HOUSEKEEPING);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(pool) = pool.upgrade() else { return };
        if pool.closed.load(Ordering::SeqCst) {
            return;
        }
        pool.keep();
    }
}
