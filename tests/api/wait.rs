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

/// How many processes below this test process have `token` in their command line (the
/// arguments joined by spaces): what a test started, whoever else runs on the machine.
pub fn descendants_with(token: &str) -> usize {
    let me = std::process::id();
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if !cmdline.contains(token) {
                return false;
            }
            let mut at = *pid;
            while let Some(parent) = parent_of(at) {
                if parent == me {
                    return true;
                }
                if parent <= 1 {
                    return false;
                }
                at = parent;
            }
            false
        })
        .count()
}
