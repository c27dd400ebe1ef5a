//! The warm pool of one language: at most `pool_size` containers exist or are being made, each
//! behind one permit. A run takes a permit (waiting up to the queue limit, then `pool_busy`),
//! an idle container or a cold one, and gives both back through [`Pool::release`], which
//! replaces (strict mode) or wipes (reuse mode) the container in the background while still
//! holding the permit: the next run gets a ready container, never an extra one.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{engine, Shared};
use crate::{model::execution::Language, sandbox::Error};

/// How long shutting a pool down waits for its runs and background work to finish.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Pool {
    pub language: Language,
    size: usize,
    slots: Arc<Semaphore>,
    idle: Mutex<Vec<String>>,
    closed: AtomicBool,
}

/// A container checked out for one run.
#[derive(Debug)]
pub struct Lease {
    pub id: String,
    /// Started for this run rather than taken warm from the pool.
    pub cold: bool,
    pub waited: Duration,
    permit: OwnedSemaphorePermit,
}

impl Pool {
    pub fn new(language: Language, size: usize) -> Self {
        Pool {
            language,
            size,
            slots: Arc::new(Semaphore::new(size)),
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn busy(&self) -> usize {
        self.size - self.slots.available_permits()
    }

    pub fn idle(&self) -> usize {
        self.idle.lock().expect("idle list lock").len()
    }

    pub fn idle_ids(&self) -> Vec<String> {
        self.idle.lock().expect("idle list lock").clone()
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
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

    /// Takes a container for one run: an idle one, or a new one when the slot has none.
    pub async fn checkout(&self, shared: &Shared, wait: Duration) -> Result<Lease, Error> {
        let started = std::time::Instant::now();
        let permit = match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_closed)) => return Err(Error::Backend("the container pool is closed".into())),
            Err(_) => {
                return Err(Error::PoolBusy {
                    retry_after: Duration::from_secs(shared.config.timeout_secs.clamp(1, 5).into()),
                })
            }
        };
        if self.closed() {
            return Err(Error::Backend(
                "the docker provider is shutting down".into(),
            ));
        }
        let waited = started.elapsed();
        let warm = self.idle.lock().expect("idle list lock").pop();
        let (id, cold) = match warm {
            Some(id) => (id, false),
            None => (shared.start(self.language).await?, true),
        };
        Ok(Lease {
            id,
            cold,
            waited,
            permit,
        })
    }

    /// A container that turned out dead at checkout: replaced by a fresh one, same permit.
    pub async fn replace(&self, shared: &Shared, lease: &mut Lease) -> Result<(), Error> {
        let docker = shared.engine.client().await?;
        engine::remove(&docker, &lease.id).await;
        lease.id = shared.start(self.language).await?;
        lease.cold = true;
        Ok(())
    }

    /// Gives a container back after its run. Strict mode (or a container that hit a limit):
    /// removed, and a new one warmed in its slot. Reuse mode: wiped, then idle again.
    pub fn release(self: &Arc<Self>, shared: &Arc<Shared>, lease: Lease, reusable: bool) {
        let (pool, shared) = (self.clone(), shared.clone());
        tokio::spawn(async move {
            let Lease { id, permit, .. } = lease;
            let Ok(docker) = shared.engine.client().await else {
                return;
            };
            let keep = reusable
                && !shared.config.fresh_container_per_run
                && !pool.closed()
                && engine::wipe(&docker, &id).await.unwrap_or(false);
            let id = match keep {
                true => match pool.park(id) {
                    None => return,
                    Some(id) => id,
                },
                false => id,
            };
            engine::remove(&docker, &id).await;
            pool.refill(&shared, permit).await;
        });
    }

    /// Puts a ready container in the idle list, unless the pool is closed: then it is handed
    /// back for removal. Checked under the list's lock, so `close` cannot miss it.
    fn park(&self, id: String) -> Option<String> {
        let mut idle = self.idle.lock().expect("idle list lock");
        if self.closed() {
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
        match shared.start(self.language).await {
            Ok(id) => {
                if let Some(id) = self.park(id) {
                    if let Ok(docker) = shared.engine.client().await {
                        engine::remove(&docker, &id).await;
                    }
                }
            }
            Err(error) => {
                tracing::warn!(language = %self.language, %error, "could not warm a sandbox container")
            }
        }
        drop(permit);
    }

    /// Drops idle containers that are no longer running (killed or removed behind our back,
    /// or stopped by a dockerd restart) and warms replacements. Returns how many went.
    pub async fn heal(self: &Arc<Self>, shared: &Arc<Shared>) -> usize {
        let Ok(docker) = shared.engine.client().await else {
            return 0;
        };
        let mut dead = Vec::new();
        for id in self.idle_ids() {
            if !matches!(engine::running(&docker, &id).await, Ok(true)) {
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
        for id in &dead {
            engine::remove(&docker, id).await;
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
            self.closed.store(true, Ordering::SeqCst);
            std::mem::take(&mut *idle)
        };
        if let Ok(docker) = shared.engine.client().await {
            for id in idle {
                engine::remove(&docker, &id).await;
            }
        }
        // Every permit back means every run and every background replace or wipe is over
        // (each removes its container once it sees the pool closed): nothing is left behind
        // when the process exits right after.
        let all = u32::try_from(self.size).unwrap_or(u32::MAX);
        let drained = tokio::time::timeout(CLOSE_WAIT, self.slots.acquire_many(all)).await;
        if drained.is_err() {
            tracing::warn!(language = %self.language, "runs still in flight after {CLOSE_WAIT:?}; their containers go when they end");
        }
    }
}
