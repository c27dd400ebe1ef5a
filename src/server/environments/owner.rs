//! Which process runs a build: this host's boot, a pid and that process's start time, so
//! that a console or a command can tell a build of a process that is gone (killed, crashed)
//! from one that is still running beside it, without waiting for it to fall silent.

/// A process on some host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// `/proc/sys/kernel/random/boot_id` and the pid namespace: the same only for processes
    /// whose pids mean the same (containers on one host share the boot, not the pids).
    pub boot: String,
    pub pid: u32,
    /// When the process started, in clock ticks after boot (`/proc/<pid>/stat`, field 22): a
    /// reused pid has another one.
    pub started: u64,
}

fn boot_id() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|text| text.trim().to_owned())
        .unwrap_or_default();
    let pids = std::fs::read_link("/proc/self/ns/pid")
        .map(|link| link.to_string_lossy().into_owned())
        .unwrap_or_default();
    match boot.is_empty() || pids.is_empty() {
        true => String::new(),
        false => format!("{boot}/{pids}"),
    }
}

/// A process's start time, when it exists.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: read after the last one.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    /// This process.
    pub fn this() -> Owner {
        let pid = std::process::id();
        Owner {
            boot: boot_id(),
            pid,
            started: start_time(pid).unwrap_or(0),
        }
    }

    /// As stored beside a build: `boot|pid|started`.
    pub fn text(&self) -> String {
        format!("{}|{}|{}", self.boot, self.pid, self.started)
    }

    pub fn parse(text: &str) -> Option<Owner> {
        let mut parts = text.split('|');
        let (boot, pid, started) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Owner {
            boot: boot.to_owned(),
            pid: pid.parse().ok()?,
            started: started.parse().ok()?,
        })
    }

    /// Whether the process still runs: `None` when it is on another host (or this host has
    /// booted since), where only its heartbeat can tell.
    pub fn alive(&self) -> Option<bool> {
        if self.boot.is_empty() || self.boot != boot_id() {
            return None;
        }
        Some(start_time(self.pid) == Some(self.started))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_gone_one_is_not() {
        let me = Owner::this();
        assert_eq!(Owner::parse(&me.text()), Some(me.clone()));
        assert_eq!(me.alive(), Some(true));
        let reused = Owner {
            started: me.started + 1,
            ..me.clone()
        };
        assert_eq!(reused.alive(), Some(false), "a pid with another start time");
        let another_container = Owner {
            boot: format!("{}/pid:[1]", me.boot.split('/').next().unwrap()),
            ..me.clone()
        };
        assert_eq!(another_container.alive(), None, "same host, other pids");
        let elsewhere = Owner {
            boot: "another-host".into(),
            ..me
        };
        assert_eq!(elsewhere.alive(), None);
        assert_eq!(Owner::parse("no"), None);
    }
}
