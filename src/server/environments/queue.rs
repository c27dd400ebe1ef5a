//! At most a few builds run at once (each is pip or npm with hundreds of MiB of memory): the
//! rest wait in order, and each waiting build says how many are ahead of it.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How often a waiting build notes its place.
const NOTE_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Debug)]
pub struct BuildQueue {
    slots: Arc<Semaphore>,
    /// Tickets handed out, and builds let through: tokio's semaphore serves in order, so a
    /// ticket's place is how many earlier tickets still wait.
    issued: AtomicU64,
    admitted: AtomicU64,
}

impl BuildQueue {
    pub fn new(slots: usize) -> Self {
        BuildQueue {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            issued: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
        }
    }

    /// Waits for a slot, telling `place` how many builds are ahead while it waits. The slot
    /// is the build's until the permit drops.
    pub async fn admit(&self, place: &(dyn Fn(u64) + Send + Sync)) -> OwnedSemaphorePermit {
        let ticket = self.issued.fetch_add(1, Ordering::SeqCst);
        let acquire = self.slots.clone().acquire_owned();
        tokio::pin!(acquire);
        loop {
            let ahead = ticket.saturating_sub(self.admitted.load(Ordering::SeqCst));
            if ahead > 0 || self.slots.available_permits() == 0 {
                place(ahead);
            }
            tokio::select! {
                permit = &mut acquire => {
                    self.admitted.fetch_add(1, Ordering::SeqCst);
                    return permit.expect("the build queue is never closed");
                }
                () = tokio::time::sleep(NOTE_EVERY) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn builds_past_the_cap_wait_in_order_and_know_their_place() {
        let queue = Arc::new(BuildQueue::new(1));
        let first = queue.admit(&|_| {}).await;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));

        let waiting = {
            let (queue, seen) = (queue.clone(), seen.clone());
            tokio::spawn(async move {
                queue
                    .admit(&move |ahead| seen.lock().unwrap().push(ahead))
                    .await
            })
        };
        while seen.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(
            !waiting.is_finished(),
            "the second build waits for the slot"
        );
        drop(first);
        let _second = waiting.await.unwrap();

        assert_eq!(seen.lock().unwrap().first(), Some(&0));
    }
}
