//! Whether the out-of-memory killer ended a sandbox, from the count its memory cgroup keeps
//! (`oom_kill` in `memory.oom_control` on cgroup v1, in `memory.events` on v2).
//!
//! A SIGKILL alone does not say whose it was: the deadline's or the OOM killer's. Telling them
//! apart by the time the run took misreads an OOM kill that came late, as it does when a busy
//! machine slows the program down near its limit. The cgroup's own count does not.

use std::path::PathBuf;

/// The OOM-kill count of one sandbox's memory cgroup.
pub(super) struct OomCount {
    file: PathBuf,
    /// The count when the sandbox started: a group left behind by an earlier supervisor of
    /// the same pid (hakoniwa names groups by pid, and a killed supervisor's group can stay)
    /// would otherwise lend its kills to this one.
    before: u64,
}

impl OomCount {
    /// The count of the memory cgroup hakoniwa made for the sandbox whose supervisor is `pid`
    /// (read once its setup is done, that is after `spawn`). None when the sandbox has no
    /// cgroup of its own (a console that is not root), so that another group's kills are
    /// never counted as the run's.
    pub(super) fn of(pid: u32) -> Option<Self> {
        let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        // hakoniwa names the group after the supervisor's pid: its last number.
        let own = |path: &str| {
            let last = path
                .rsplit(|c: char| !c.is_ascii_digit())
                .find(|n| !n.is_empty());
            path.contains("hakoniwa") && last == Some(pid.to_string().as_str())
        };
        let v1 = groups.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then(|| path.to_owned())
        });
        let file = match v1 {
            Some(path) => own(&path)
                .then(|| PathBuf::from(format!("/sys/fs/cgroup/memory{path}/memory.oom_control"))),
            None => {
                let path = groups.lines().find_map(|line| line.strip_prefix("0::"))?;
                own(path).then(|| PathBuf::from(format!("/sys/fs/cgroup{path}/memory.events")))
            }
        }?;
        let before = read_count(&file)?;
        Some(Self { file, before })
    }

    /// Whether the OOM killer killed a process of the sandbox. Read after the supervisor has
    /// exited and before it is reaped: hakoniwa removes the group when it reaps it.
    pub(super) fn killed(&self) -> bool {
        read_count(&self.file).is_some_and(|kills| kills > self.before)
    }
}

/// The `oom_kill` line of a group's counter file.
fn read_count(file: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(file).ok().and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse::<u64>().ok())
    })
}

/// Waits until the process `pid` (a child of this one) has exited, without reaping it.
pub(super) fn wait_exited(pid: u32) {
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
        return;
    };
    let options = rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT;
    while let Err(rustix::io::Errno::INTR) =
        rustix::process::waitid(rustix::process::WaitId::Pid(pid), options)
    {}
}

impl OomCount {
    /// Raises the group's memory limit by what it uses now, so that a run in a sandbox started
    /// ahead has its whole limit on top of what its preloaded modules took: the limit starts
    /// when the program arrives. Returns the bytes granted; `None` when the limit could not be
    /// raised (the run then has the limit less the preload, never more than the setting).
    pub(super) fn grant_what_is_used(&self) -> Option<u64> {
        let dir = self.file.parent()?;
        let read = |name: &str| -> Option<u64> {
            std::fs::read_to_string(dir.join(name))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        if dir.join("memory.limit_in_bytes").exists() {
            // cgroup v1: memory+swap first, as it may never be below the memory limit.
            let used = read("memory.usage_in_bytes")?;
            let limit = read("memory.limit_in_bytes")?;
            let both = dir.join("memory.memsw.limit_in_bytes");
            if let Some(swap) = read("memory.memsw.limit_in_bytes") {
                std::fs::write(&both, swap.saturating_add(used).to_string()).ok()?;
            }
            std::fs::write(
                dir.join("memory.limit_in_bytes"),
                limit.saturating_add(used).to_string(),
            )
            .ok()?;
            return Some(used);
        }
        let used = read("memory.current")?;
        let limit = read("memory.max")?;
        std::fs::write(
            dir.join("memory.max"),
            limit.saturating_add(used).to_string(),
        )
        .ok()?;
        Some(used)
    }
}
