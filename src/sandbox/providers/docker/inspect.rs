//! What the daemon says of one container: its init's pid (whose network namespace is the
//! container's), whether it still runs, and whether the OOM killer struck in it.

use std::{
    collections::HashMap,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use bollard::{query_parameters::EventsOptionsBuilder, Docker};
use futures_util::StreamExt;

use super::DockerError;

/// The host pid of a container's init, whose network namespace is the container's.
pub async fn init_pid(docker: &Docker, id: &str) -> Result<u32, DockerError> {
    let inspect = docker
        .inspect_container(id, None)
        .await
        .map_err(DockerError::Daemon)?;
    inspect
        .state
        .and_then(|s| s.pid)
        .filter(|pid| *pid > 0)
        .map(|pid| pid as u32)
        .ok_or_else(|| {
            DockerError::Protocol(format!(
                "container {} has no running init",
                super::short(id)
            ))
        })
}

/// Whether the container still runs.
pub async fn running(docker: &Docker, id: &str) -> Result<bool, DockerError> {
    Ok(state(docker, id).await?.0)
}

/// Whether the container still runs, and whether it ended because the OOM killer took its
/// main process (what `State.OOMKilled` records).
pub async fn state(docker: &Docker, id: &str) -> Result<(bool, bool), DockerError> {
    let inspected = docker
        .inspect_container(id, None)
        .await
        .map_err(DockerError::Daemon)?;
    let state = inspected.state.unwrap_or_default();
    Ok((
        state.running.unwrap_or(false),
        state.oom_killed.unwrap_or(false),
    ))
}

/// Whether the kernel's OOM killer struck in the container since `since`. dockerd sets
/// `State.OOMKilled` only when the container's main process dies; for a process killed inside
/// a running container there is only the `oom` event, read back from the daemon's event log.
pub async fn oom_since(docker: &Docker, id: &str, since: SystemTime) -> bool {
    let stamp = |t: SystemTime| {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
    };
    let filters = HashMap::from([
        ("container", vec![id.to_owned()]),
        ("event", vec!["oom".to_owned()]),
    ]);
    let options = EventsOptionsBuilder::new()
        .since(&stamp(since - Duration::from_secs(1)))
        .until(&stamp(SystemTime::now()))
        .filters(&filters)
        .build();
    let events = docker.events(Some(options));
    futures_util::pin_mut!(events);
    let first = tokio::time::timeout(Duration::from_secs(3), events.next()).await;
    matches!(first, Ok(Some(Ok(_))))
}
