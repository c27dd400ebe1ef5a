//! Waiting for the signal itself (a metric, a pool's state, a file, a process) instead of for a
//! sleep to be long enough: a busy machine only makes the wait longer, never the test wrong.

use std::{
    future::Future,
    time::{Duration, Instant},
};

/// How long a condition that should come about soon may take on a machine whose cores are
/// busy with other work before the test fails, naming it: long, as it only bounds a failure.
pub const PATIENCE: Duration = Duration::from_secs(90);

/// Polls `condition` every 50 ms until it holds; fails after [`PATIENCE`], saying `what` was
/// awaited.
pub async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !condition().await {
        assert!(
            started.elapsed() < PATIENCE,
            "waited {PATIENCE:?} for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
