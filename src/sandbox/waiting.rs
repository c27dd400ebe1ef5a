//! How many runs wait in a provider's line for a slot right now, for its pool state and the
//! `sandbox_pool_waiting` metric: each is counted for as long as it waits, however its wait
//! ends (a slot, the queue limit, a caller that went away). Work done ahead of runs (an
//! interpreter's imports) can wait for [`Waiting::some`] to give way to one.

use std::{
    future::Future,
    sync::atomic::{AtomicU64, Ordering},
};

use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct Waiting {
    count: AtomicU64,
    arrived: Notify,
}

impl Waiting {
    pub fn now(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Counts one more waiting run while `wait` goes on.
    pub async fn during<T>(&self, wait: impl Future<Output = T>) -> T {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_waiters();
        let _left = Left(&self.count);
        wait.await
    }

    /// Returns once at least one run waits (at once if one does already).
    pub async fn some(&self) {
        loop {
            let arrival = self.arrived.notified();
            tokio::pin!(arrival);
            arrival.as_mut().enable();
            if self.now() > 0 {
                return;
            }
            arrival.await;
        }
    }
}

struct Left<'a>(&'a AtomicU64);

impl Drop for Left<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    #[tokio::test]
    async fn a_wait_is_counted_until_it_ends_or_is_dropped() {
        let waiting = Waiting::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let line = waiting.during(rx);
        tokio::pin!(line);
        assert!((&mut line).now_or_never().is_none());
        assert_eq!(waiting.now(), 1);
        tx.send(()).unwrap();
        line.await.unwrap();
        assert_eq!(waiting.now(), 0);

        {
            let abandoned = waiting.during(std::future::pending::<()>());
            tokio::pin!(abandoned);
            assert!((&mut abandoned).now_or_never().is_none());
            assert_eq!(waiting.now(), 1);
        }
        assert_eq!(waiting.now(), 0);
    }

    #[tokio::test]
    async fn some_returns_when_a_run_starts_waiting_and_not_before() {
        let waiting = Waiting::default();
        let some = waiting.some();
        tokio::pin!(some);
        assert!((&mut some).now_or_never().is_none());
        let line = waiting.during(std::future::pending::<()>());
        tokio::pin!(line);
        assert!((&mut line).now_or_never().is_none());
        assert!((&mut some).now_or_never().is_some());
        // One already waiting: at once.
        assert!(waiting.some().now_or_never().is_some());
    }
}
