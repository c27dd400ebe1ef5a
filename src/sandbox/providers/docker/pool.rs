//! The warm pool of one language: at most `pool_size` containers exist or are being made, each
//! behind one permit. A run takes a permit (waiting up to the queue limit, then `pool_busy`),
//! an idle container or a cold one, and gives both back through [`Pool::release`], which
//! replaces (strict mode) or wipes (reuse mode) the container in the background while still
//! holding the permit: the next run gets a ready container, never an extra one. A lease that
//! is dropped without being released (its run was cancelled) removes its container and only
//! then gives its permit back, so a cancelled run never leaves a container outside the pool.
//! Removals the daemon refused (it was restarting, say) are retried on the next health check
//! and at shutdown.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::{
    ahead::{self, AheadExec},
    engine, Shared,
};
use crate::{
    model::execution::Language,
    sandbox::{Error, Waiting},
};

/// How long shutting a pool down waits for its runs and background work to finish.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Pool {
    pub language: Language,
    size: usize,
    slots: Arc<Semaphore>,
    idle: Mutex<Vec<String>>,
    /// The idle containers' interpreters started ahead, by container.
    ahead: Mutex<HashMap<String, AheadExec>>,
    /// Why interpreters cannot be started ahead, or lack a preloaded module.
    ahead_problem: Mutex<Option<String>>,
    /// Containers whose removal failed: removed again on the next health check and at close.
    leftovers: Mutex<Vec<String>>,
    /// Cancelled when the pool closes: no more runs, and work for idle containers gives way.
    closed: CancellationToken,
    /// Slots holding a permit to start a warm container (counted apart from runs).
    warming: AtomicUsize,
    /// Runs waiting for a slot.
    waiting: Waiting,
}

/// A container checked out for one run. Give it back with [`Pool::release`]; dropped
/// instead, it removes its container in the background and frees its slot after that.
#[derive(Debug)]
pub struct Lease {
    pub id: String,
    /// Started for this run rather than taken warm from the pool.
    pub cold: bool,
    pub waited: Duration,
    /// Its interpreter started ahead, when it has one.
    pub ahead: Option<AheadExec>,
    /// `None` once released.
    held: Option<Held>,
}

#[derive(Debug)]
struct Held {
    permit: OwnedSemaphorePermit,
    pool: Arc<Pool>,
    shared: Arc<Shared>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(Held {
            permit,
            pool,
            shared,
        }) = self.held.take()
        else {
            return;
        };
        let id = std::mem::take(&mut self.id);
        tracing::info!(
            container = &id[..id.len().min(12)],
            "a run was abandoned; removing its container"
        );
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { pool.discard(&shared, id, permit).await });
            }
            // No runtime (the process is ending): the start-up sweep of the next console
            // removes it, as for a crash.
            Err(_) => pool.leftovers.lock().expect("leftovers lock").push(id),
        }
    }
}

impl Pool {
    pub fn new(language: Language, size: usize) -> Self {
        Pool {
            language,
            size,
            slots: Arc::new(Semaphore::new(size)),
            idle: Mutex::new(Vec::new()),
            ahead: Mutex::new(HashMap::new()),
            ahead_problem: Mutex::new(None),
            leftovers: Mutex::new(Vec::new()),
            closed: CancellationToken::new(),
            warming: AtomicUsize::new(0),
            waiting: Waiting::default(),
        }
    }

    /// Runs waiting for a slot.
    pub fn waiting(&self) -> u64 {
        self.waiting.now()
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Slots running a program (a slot that is warming a container is not one).
    pub fn busy(&self) -> usize {
        (self.size - self.slots.available_permits()).saturating_sub(self.warming())
    }

    /// Slots starting a container to keep warm.
    pub fn warming(&self) -> usize {
        self.warming.load(Ordering::SeqCst)
    }

    pub fn idle(&self) -> usize {
        self.idle.lock().expect("idle list lock").len()
    }

    /// Idle containers whose interpreter was started ahead.
    pub fn ready_ahead(&self) -> usize {
        self.ahead.lock().expect("ahead lock").len()
    }

    /// Why interpreters are not (all) started ahead, when they are not.
    pub fn ahead_problem(&self) -> Option<String> {
        self.ahead_problem.lock().expect("ahead lock").clone()
    }

    pub fn idle_ids(&self) -> Vec<String> {
        self.idle.lock().expect("idle list lock").clone()
    }

    fn closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Fills every free slot with a started container, in the background.
    pub fn warm_up(self: &Arc<Self>, shared: &Arc<Shared>) {
        for _ in 0..self.size {
            let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                return;
            };
            let (pool, shared) = (self.clone(), shared.clone());
            tokio::spawn(async move { pool.refill(&shared, permit).await });
        }
    }

    /// Takes a container for one run: an idle one, or a new one when the slot has none. A run
    /// still waiting when the pool closes (its provider was replaced by a save) gets
    /// `Retired`: nothing ran, and it may go to the new provider.
    pub async fn checkout(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        wait: Duration,
    ) -> Result<Lease, Error> {
        let started = std::time::Instant::now();
        let line = tokio::time::timeout(wait, self.slots.clone().acquire_owned());
        let permit = match self.waiting.during(line).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_closed)) => return Err(Error::Retired),
            Err(_) => {
                return Err(Error::PoolBusy {
                    retry_after: Duration::from_secs(shared.config.timeout_secs.clamp(1, 5).into()),
                    detail: None,
                })
            }
        };
        if self.closed() {
            return Err(Error::Retired);
        }
        let waited = started.elapsed();
        let warm = self.idle.lock().expect("idle list lock").pop();
        // Leased before a cold start, so a run cancelled during the start still frees its
        // slot only after the container is gone.
        let ahead = warm
            .as_ref()
            .and_then(|id| self.ahead.lock().expect("ahead lock").remove(id));
        let mut lease = Lease {
            id: warm.clone().unwrap_or_default(),
            cold: warm.is_none(),
            waited,
            ahead,
            held: Some(Held {
                permit,
                pool: self.clone(),
                shared: shared.clone(),
            }),
        };
        if lease.cold {
            match shared.start(self.language).await {
                Ok(id) => lease.id = id,
                Err(error) => {
                    // Nothing to remove: give the slot back as it is.
                    lease.held.take();
                    return Err(error);
                }
            }
        }
        Ok(lease)
    }

    /// A container that turned out dead at checkout: replaced by a fresh one, same permit.
    pub async fn replace(&self, shared: &Shared, lease: &mut Lease) -> Result<(), Error> {
        let docker = shared.engine.client().await?;
        lease.ahead = None;
        self.remove(&docker, &lease.id).await;
        lease.id = shared.start(self.language).await?;
        lease.cold = true;
        Ok(())
    }

    /// Gives a container back after its run. Strict mode (or a container that hit a limit):
    /// removed, and a new one warmed in its slot. Reuse mode: wiped, then idle again.
    pub fn release(self: &Arc<Self>, shared: &Arc<Shared>, mut lease: Lease, reusable: bool) {
        let Some(Held { permit, .. }) = lease.held.take() else {
            return;
        };
        let id = std::mem::take(&mut lease.id);
        let (pool, shared) = (self.clone(), shared.clone());
        tokio::spawn(async move {
            let Ok(docker) = shared.engine.client().await else {
                pool.leftovers.lock().expect("leftovers lock").push(id);
                return;
            };
            let keep = reusable
                && !shared.config.fresh_container_per_run
                && !pool.closed()
                && engine::wipe(&docker, &id).await.unwrap_or(false)
                && pool.start_ahead(&shared, &docker, &id).await;
            let id = match keep {
                true => match pool.park(id) {
                    None => return,
                    Some(id) => id,
                },
                false => id,
            };
            pool.remove(&docker, &id).await;
            pool.refill(&shared, permit).await;
        });
    }

    /// Removes the container of an abandoned run, then frees (and refills) its slot.
    async fn discard(&self, shared: &Shared, id: String, permit: OwnedSemaphorePermit) {
        // Cancelled during its cold start: no id yet (a container half made is swept by its
        // pool label at shutdown).
        if id.is_empty() {
            self.refill(shared, permit).await;
            return;
        }
        match shared.engine.client().await {
            Ok(docker) => self.remove(&docker, &id).await,
            Err(_) => self.leftovers.lock().expect("leftovers lock").push(id),
        }
        self.refill(shared, permit).await;
    }

    /// Removes one container; one the daemon would not remove is kept for a later try.
    async fn remove(&self, docker: &bollard::Docker, id: &str) {
        if !engine::remove(docker, id).await {
            self.leftovers
                .lock()
                .expect("leftovers lock")
                .push(id.to_owned());
        }
    }

    /// Tries the removals that failed before again; returns how many are still left.
    async fn remove_leftovers(&self, docker: &bollard::Docker) -> usize {
        let ids = std::mem::take(&mut *self.leftovers.lock().expect("leftovers lock"));
        for id in ids {
            self.remove(docker, &id).await;
        }
        self.leftovers.lock().expect("leftovers lock").len()
    }

    /// Puts a ready container in the idle list, unless the pool is closed: then it is handed
    /// back for removal. Checked under the list's lock, so `close` cannot miss it.
    fn park(&self, id: String) -> Option<String> {
        let mut idle = self.idle.lock().expect("idle list lock");
        if self.closed() {
            self.ahead.lock().expect("ahead lock").remove(&id);
            return Some(id);
        }
        idle.push(id);
        None
    }

    /// Starts a container for a free slot and parks it idle; the permit goes when it is ready
    /// (or when it could not be made: the next run then starts one itself).
    async fn refill(&self, shared: &Shared, permit: OwnedSemaphorePermit) {
        if self.closed() {
            return;
        }
        self.warming.fetch_add(1, Ordering::SeqCst);
        self.start_warm(shared).await;
        drop(permit);
        self.warming.fetch_sub(1, Ordering::SeqCst);
    }

    /// One container started and parked idle (or removed when the pool closed meanwhile).
    async fn start_warm(&self, shared: &Shared) {
        match shared.start(self.language).await {
            Ok(id) => {
                let fit = match shared.engine.client().await {
                    Ok(docker) => self.start_ahead(shared, &docker, &id).await,
                    Err(_) => true,
                };
                let unparked = match fit {
                    true => self.park(id),
                    false => Some(id),
                };
                if let Some(id) = unparked {
                    match shared.engine.client().await {
                        Ok(docker) => self.remove(&docker, &id).await,
                        Err(_) => self.leftovers.lock().expect("leftovers lock").push(id),
                    }
                }
            }
            Err(error) => {
                tracing::warn!(language = %self.language, %error, "could not warm a sandbox container")
            }
        }
    }

    /// Starts the interpreter of a container about to be parked ahead of its run, when the
    /// provider starts interpreters ahead (Python) and no run waits for a container: a run
    /// that waits gets the container now and starts its interpreter itself, rather than
    /// waiting for the preload too. A run that starts waiting while the imports go on, or
    /// the pool closing, ends them the same way. A container whose interpreter cannot be
    /// started is parked as it is. `false` when the container is unfit to hand out: a boot
    /// given up was not seen to end.
    async fn start_ahead(&self, shared: &Shared, docker: &bollard::Docker, id: &str) -> bool {
        let Some(preload) = shared.preload_for(self.language) else {
            return true;
        };
        if self.waiting() > 0 {
            return true;
        }
        let started = match ahead::begin(docker, id, preload).await {
            Ok(mut exec) => tokio::select! {
                readiness = ahead::ready(&mut exec) => match readiness {
                    Ok(readiness) => Ok(AheadExec { exec, readiness }),
                    // A boot that failed or hangs is ended before its container is parked.
                    Err(error) if ahead::abandon(exec).await => Err(error),
                    Err(error) => {
                        tracing::warn!(container = super::short(id), %error, "an interpreter started ahead failed and did not end");
                        return false;
                    }
                },
                () = self.give_way() => {
                    let gone = ahead::abandon(exec).await;
                    tracing::info!(container = super::short(id), gone, "an interpreter importing ahead was given up for a waiting run or a closing pool");
                    return gone;
                }
            },
            Err(error) => Err(error),
        };
        match started {
            Ok(started) => {
                *self.ahead_problem.lock().expect("ahead lock") = started.readiness.problem();
                self.ahead
                    .lock()
                    .expect("ahead lock")
                    .insert(id.to_owned(), started);
            }
            Err(error) => {
                tracing::warn!(container = super::short(id), %error, "could not start an interpreter ahead");
                *self.ahead_problem.lock().expect("ahead lock") =
                    Some(format!("sandboxes cannot be started ahead: {error}"));
            }
        }
        true
    }

    /// Returns once a run waits for a slot or the pool closes.
    async fn give_way(&self) {
        tokio::select! {
            () = self.waiting.some() => {}
            () = self.closed.cancelled() => {}
        }
    }

    /// Drops idle containers that are no longer running (killed or removed behind our back,
    /// or stopped by a dockerd restart) and warms replacements. Returns how many went.
    pub async fn heal(self: &Arc<Self>, shared: &Arc<Shared>) -> usize {
        let Ok(docker) = shared.engine.client().await else {
            return 0;
        };
        self.remove_leftovers(&docker).await;
        let mut dead = Vec::new();
        for id in self.idle_ids() {
            if !matches!(super::inspect::running(&docker, &id).await, Ok(true)) {
                dead.push(id);
            }
        }
        if dead.is_empty() {
            return 0;
        }
        self.idle
            .lock()
            .expect("idle list lock")
            .retain(|id| !dead.contains(id));
        self.ahead
            .lock()
            .expect("ahead lock")
            .retain(|id, _| !dead.contains(id));
        for id in &dead {
            self.remove(&docker, id).await;
        }
        if !self.closed() {
            self.warm_up(shared);
        }
        dead.len()
    }

    /// Stops taking runs and removes the idle containers; busy ones go when their run ends.
    pub async fn close(&self, shared: &Shared) {
        let idle = {
            let mut idle = self.idle.lock().expect("idle list lock");
            self.closed.cancel();
            self.ahead.lock().expect("ahead lock").clear();
            std::mem::take(&mut *idle)
        };
        if let Ok(docker) = shared.engine.client().await {
            for id in idle {
                self.remove(&docker, &id).await;
            }
        }
        // Waiting runs see the pool closed at once (`Retired`) instead of a slot later.
        self.slots.close();
        // Every permit back means every run and every background replace or wipe is over
        // (each removes its container once it sees the pool closed): nothing is left behind
        // when the process exits right after.
        let started = std::time::Instant::now();
        while self.slots.available_permits() < self.size && started.elapsed() < CLOSE_WAIT {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if self.slots.available_permits() < self.size {
            tracing::warn!(language = %self.language, "runs still in flight after {CLOSE_WAIT:?}; their containers go when they end");
        }
        if let Ok(docker) = shared.engine.client().await {
            let left = self.remove_leftovers(&docker).await;
            if left > 0 {
                tracing::warn!(language = %self.language, left, "sandbox containers the daemon would not remove");
            }
        }
    }
}
