//! The end of a local run, started cold or ahead: its output read under the cap, its exit
//! waited for, and what ended it told (the program, a deadline, the OOM killer, a limit).

use std::{
    io::Read,
    path::Path,
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use super::{
    jail::{RawRun, Stop},
    oom::{self, OomCount},
};
use crate::{
    model::execution::ExecStatus,
    sandbox::runner::{self, ArtifactLimits},
};

/// The program's output pipes.
pub(super) struct Pipes<O, E> {
    pub stdout: Option<O>,
    pub stderr: Option<E>,
}

/// What watches the sandbox: its memory group's OOM count and its watchdog's stop sender.
pub(super) struct Watched {
    pub oom: Option<OomCount>,
    pub finished: mpsc::Sender<Stop>,
}

/// When the run began and how long it had.
pub(super) struct Clock {
    pub started: Instant,
    pub timeout: Duration,
    /// hakoniwa's own clock timed the program (a cold run, whose supervisor started with its
    /// program); otherwise the run is timed from `started` (a sandbox started ahead waited
    /// before its program came).
    pub own: bool,
}

/// Reads the output, waits for the sandbox to exit and reports what the run did.
pub(super) fn finish<O, E>(
    mut child: hakoniwa::Child,
    pipes: Pipes<O, E>,
    watched: Watched,
    clock: Clock,
    cap: usize,
    host: &Path,
    limits: ArtifactLimits,
) -> Result<RawRun, String>
where
    O: Read + Send + 'static,
    E: Read + Send + 'static,
{
    let stdout = pipes
        .stdout
        .map(|pipe| thread::spawn(move || read_capped(pipe, cap)));
    let stderr = pipes
        .stderr
        .map(|pipe| thread::spawn(move || read_capped(pipe, cap)));
    oom::wait_exited(child.id());
    let oom_killed = watched.oom.is_some_and(|count| count.killed());
    let status = child.wait();
    let _ = watched.finished.send(Stop::Finished);
    let status = status.map_err(|e| format!("lost the sandboxed process: {e}"))?;
    let elapsed = clock.started.elapsed();
    let join = |reader: Option<thread::JoinHandle<(String, bool)>>| {
        reader.and_then(|r| r.join().ok()).unwrap_or_default()
    };
    let (stdout, stdout_over) = join(stdout);
    let (stderr, stderr_over) = join(stderr);

    // hakoniwa's own process inside the sandbox was SIGKILLed: with a cgroup memory limit the
    // OOM killer sometimes picks it rather than the program (seen once under a 1 GiB
    // allocation), and a started-ahead sandbox's deadline is a SIGKILL to it. It is the run's
    // SIGKILL all the same: timeout or memory, as for the program.
    let supervisor_killed = status.reason == "container received signal SIGKILL";
    if status.exit_code.is_none() && status.code == 125 && !supervisor_killed {
        return Err(format!("the sandbox could not start: {}", status.reason));
    }
    let signal = match supervisor_killed {
        true => Some(9),
        false => status.exit_code.is_none().then(|| status.code - 128),
    };
    // Whether a SIGKILL was the deadline's or the OOM killer's is told by how long the program
    // itself ran, as hakoniwa's supervisor timed it from where its alarm starts: the time from
    // spawn also counts the jail's setup, which on a busy machine took long enough to make an
    // OOM kill look like the deadline's. A killed supervisor reports no times: then the spawn's.
    let ran = match clock.own {
        true => status
            .rusage
            .as_ref()
            .map_or(elapsed, |usage| usage.real_time),
        false => elapsed,
    };
    let mut limit = runner::classify(
        signal,
        status.exit_code,
        ran,
        clock.timeout,
        stdout_over || stderr_over,
        &stderr,
    );
    // The cgroup counted an OOM kill: the SIGKILL was its, however late it came.
    if oom_killed && signal == Some(9) && limit == Some(ExecStatus::Timeout) {
        limit = Some(ExecStatus::MemoryLimit);
    }
    let (artifacts, skipped_artifacts) = runner::collect_artifacts(host, limits);
    Ok(RawRun {
        exit_code: status.exit_code,
        stdout,
        stderr,
        elapsed,
        limit,
        artifacts,
        skipped_artifacts,
        egress: None,
    })
}

/// Reads a pipe to its end, keeping at most `cap` bytes (and draining the rest, so the
/// program is never blocked on a full pipe). Returns the text and whether it was cut.
pub(super) fn read_capped(mut pipe: impl Read, cap: usize) -> (String, bool) {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut over = false;
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
                over |= n > room;
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), over)
}
