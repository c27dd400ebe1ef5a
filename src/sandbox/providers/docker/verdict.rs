//! What a finished run's status is, from what the provider saw of it: the deadline or the
//! output cap it stopped, a container that died (of memory, or of something else), the exit
//! code. Pure, so each case is tested without a dockerd.

use std::time::Duration;

use super::{engine::Stopped, RUNSC_LOST_SANDBOX};
use crate::{model::execution::ExecStatus, sandbox::runner};

/// What the provider saw of a run.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub stopped: Option<Stopped>,
    /// The container (or gVisor's sandbox) died during the run.
    pub died: bool,
    /// The kernel's OOM killer took the program or the container.
    pub oom: bool,
    pub exit_code: Option<i32>,
    pub elapsed: Duration,
    pub timeout: Duration,
}

/// The status a limit or a death decides (`None`: the program's own outcome stands); notes
/// for the user go to `stderr`, and runsc's own complaint about a lost sandbox leaves it.
pub fn limit(seen: &Seen, stderr: &mut String) -> Option<ExecStatus> {
    let code = seen.exit_code.unwrap_or(-1);
    match seen.stopped {
        Some(Stopped::Deadline) => Some(ExecStatus::Timeout),
        Some(Stopped::Output) => Some(ExecStatus::OutputLimit),
        None if seen.died && seen.oom => {
            *stderr = stderr
                .lines()
                .filter(|l| !l.contains(RUNSC_LOST_SANDBOX))
                .map(|l| format!("{l}\n"))
                .collect();
            Some(ExecStatus::MemoryLimit)
        }
        None if seen.died => {
            stderr.push_str("the container stopped during the run\n");
            Some(ExecStatus::ProgramError)
        }
        // SIGKILL from inside a container that lives on: the cgroup's OOM killer took the
        // program, as the daemon's `oom` event says; any other SIGKILL is the program's.
        None if code == 137 && seen.oom => Some(ExecStatus::MemoryLimit),
        None if code == 137 => None,
        None => {
            let signal = (129..160).contains(&code).then_some(code - 128);
            runner::classify(
                signal,
                seen.exit_code,
                seen.elapsed,
                seen.timeout,
                false,
                stderr,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(stopped: Option<Stopped>, died: bool, oom: bool, exit_code: i32) -> Seen {
        Seen {
            stopped,
            died,
            oom,
            exit_code: Some(exit_code),
            elapsed: Duration::from_millis(200),
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn each_way_a_run_ends_has_its_status() {
        let cases = [
            (
                seen(Some(Stopped::Deadline), false, false, 137),
                Some(ExecStatus::Timeout),
            ),
            (
                seen(Some(Stopped::Output), false, false, 137),
                Some(ExecStatus::OutputLimit),
            ),
            (seen(None, true, true, 137), Some(ExecStatus::MemoryLimit)),
            (seen(None, true, false, 137), Some(ExecStatus::ProgramError)),
            (seen(None, false, true, 137), Some(ExecStatus::MemoryLimit)),
            // A program that SIGKILLs itself: its own outcome.
            (seen(None, false, false, 137), None),
            (seen(None, false, false, 0), None),
        ];
        for (case, expected) in cases {
            assert_eq!(limit(&case, &mut String::new()), expected, "{case:?}");
        }
    }

    #[test]
    fn a_lost_gvisor_sandbox_is_reported_as_memory_without_runscs_complaint() {
        let mut stderr = format!("MemoryError\n{RUNSC_LOST_SANDBOX}Wait\" failed\n");
        assert_eq!(
            limit(&seen(None, true, true, 128), &mut stderr),
            Some(ExecStatus::MemoryLimit)
        );
        assert_eq!(stderr, "MemoryError\n");
    }

    #[test]
    fn a_container_that_died_otherwise_says_so() {
        let mut stderr = String::new();
        assert_eq!(
            limit(&seen(None, true, false, 1), &mut stderr),
            Some(ExecStatus::ProgramError)
        );
        assert_eq!(stderr, "the container stopped during the run\n");
    }
}
