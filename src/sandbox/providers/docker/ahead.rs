//! A warm container's Python started ahead: an attached exec of `ahead.py` (as the programs'
//! user, in /workspace) that has imported the environment's preloaded modules and waits for
//! its one job on stdin. A run that takes the container writes its job and drives the exec
//! as a cold run's ([`super::drive`]); its deadline starts then. Dropped unused (the pool
//! closed, the container went), its stdin closes and the boot exits. A run that waits for the
//! container meanwhile does not wait for the imports: the pool gives the boot up
//! ([`abandon`]) and the run starts its interpreter itself.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::{
    drive::Exec,
    engine::{self, Capped},
    DockerError,
};
use crate::sandbox::runner::ahead::{self, Readiness};

/// How long a boot may take to become ready (pandas under gVisor on a loaded machine).
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long a boot given up may take to exit once its stdin is closed.
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// A started-ahead exec, ready for its job.
pub(super) struct AheadExec {
    pub exec: Exec,
    pub readiness: Readiness,
}

impl std::fmt::Debug for AheadExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AheadExec")
            .field("exec", &self.exec.id)
            .field("readiness", &self.readiness)
            .finish()
    }
}

/// Starts the boot in container `id`: its opening written, its imports under way.
pub(super) async fn begin(
    docker: &bollard::Docker,
    id: &str,
    preload: &[String],
) -> Result<Exec, DockerError> {
    let cmd = ["python3", "-I", "-B", "-u", "-c", ahead::BOOT_PY]
        .map(str::to_owned)
        .to_vec();
    let (exec_id, output, mut input) = engine::start_exec(docker, id, cmd, true).await?;
    let opening = ahead::opening(preload);
    let sent = async {
        input.write_all(opening.as_bytes()).await?;
        input.flush().await
    };
    sent.await.map_err(|e| {
        DockerError::Protocol(format!("the started-ahead interpreter did not start: {e}"))
    })?;
    Ok(Exec {
        id: exec_id,
        output,
        input,
    })
}

/// Waits until the boot says it is ready (its preloaded modules imported).
pub(super) async fn ready(exec: &mut Exec) -> Result<Readiness, DockerError> {
    let mut stdout = Capped::default();
    let mut stderr = Capped::default();
    let output = &mut exec.output;
    let ready = async {
        while let Some(frame) = output.next().await {
            match frame {
                Ok(bollard::container::LogOutput::StdOut { message }) => {
                    stdout.push(&message, ahead::MAX_BEFORE_READY);
                    let text = String::from_utf8_lossy(&stdout.kept);
                    if let Some(readiness) = text.lines().find_map(ahead::parse_ready) {
                        return Ok(readiness);
                    }
                    if stdout.over {
                        return Err("it printed too much before it was ready".to_owned());
                    }
                }
                Ok(bollard::container::LogOutput::StdErr { message }) => {
                    stderr.push(&message, 4096)
                }
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        let said = String::from_utf8_lossy(&stderr.kept);
        Err(match said.trim().lines().last() {
            Some(last) => format!("it exited before it was ready: {last}"),
            None => "it exited before it was ready".to_owned(),
        })
    };
    match tokio::time::timeout(READY_WITHIN, ready).await {
        Ok(Ok(readiness)) => Ok(readiness),
        Ok(Err(why)) => Err(DockerError::Protocol(format!(
            "the started-ahead interpreter failed: {why}"
        ))),
        Err(_) => Err(DockerError::Protocol(format!(
            "the started-ahead interpreter was not ready within {} s",
            READY_WITHIN.as_secs()
        ))),
    }
}

/// Ends a boot that is no longer wanted and waits for it to be gone: its stdin closed, it
/// exits at once, imports or not. `false` when it was not seen to end (the container is then
/// no one's to hand out).
pub(super) async fn abandon(exec: Exec) -> bool {
    let Exec {
        mut output,
        mut input,
        ..
    } = exec;
    let ended = async {
        let _ = input.shutdown().await;
        while output.next().await.is_some() {}
    };
    tokio::time::timeout(GONE_WITHIN, ended).await.is_ok()
}
