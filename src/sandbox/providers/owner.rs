//! Which console made a sandbox (a docker container, a Kubernetes claim): its owner label
//! names the process (`host/pid:start-time`), so a console starting later tells a crashed
//! owner's leftovers from a live console's sandboxes.

/// This process, as an owner label or annotation names it: `host/pid:start-time` (the start time so a
/// reused pid is not mistaken for us, the host so consoles on other machines sharing a daemon
/// over TCP are never judged by our process table).
pub fn owner_of(pid: u32) -> Option<String> {
    Some(format!("{}/{}", hostname(), local_process(pid)?))
}

fn local_process(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 (starttime) counted after the command name, which may hold spaces.
    let after_name = stat.rsplit_once(')')?.1;
    let start = after_name.split_whitespace().nth(19)?;
    Some(format!("{pid}:{start}"))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether the console an owner label names may still be alive: on this host, the same pid
/// with the same start time; on another host we cannot tell, so yes.
pub fn owner_alive(owner: &str) -> bool {
    let process = match owner.split_once('/') {
        Some((host, _)) if host != hostname() => return true,
        Some((_, process)) => process,
        None => owner,
    };
    let Some(pid) = process
        .split(':')
        .next()
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return false;
    };
    local_process(pid).as_deref() == Some(process)
}
