//! How a run tells a slow dockerd from a frozen one: every answer from the daemon is a beat,
//! and a run is abandoned only after a quiet spell with none, however long the run as a whole
//! has taken on a busy machine.

use std::{future::Future, sync::Mutex, time::Duration};

use tokio::time::Instant;

pub struct Heartbeat {
    last: Mutex<Instant>,
}

impl Heartbeat {
    pub fn new() -> Heartbeat {
        Heartbeat {
            last: Mutex::new(Instant::now()),
        }
    }

    /// dockerd answered (with anything, an error too).
    pub fn beat(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn last(&self) -> Instant {
        *self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work` to its end, or gives up (`None`) once `quiet` has passed without a beat.
    pub async fn bound<T>(&self, quiet: Duration, work: impl Future<Output = T>) -> Option<T> {
        tokio::pin!(work);
        loop {
            let deadline = self.last() + quiet;
            tokio::select! {
                out = &mut work => return Some(out),
                () = tokio::time::sleep_until(deadline) => {
                    if self.last() + quiet <= Instant::now() {
                        return None;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn beats_keep_a_long_run_going_and_silence_ends_it() {
        let beat = Heartbeat::new();
        let quiet = Duration::from_secs(2);
        // Thirty beats 100 ms apart: 3 s in all, longer than the quiet spell, never near it
        // without a beat (a twentieth of it).
        let talking = beat.bound(quiet, async {
            for _ in 0..30 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                beat.beat();
            }
            "done"
        });
        assert_eq!(talking.await, Some("done"));

        let started = Instant::now();
        let silent = beat.bound(quiet, async {
            beat.beat();
            std::future::pending::<()>().await
        });
        assert_eq!(silent.await, None);
        assert!(started.elapsed() >= quiet);
    }
}
