//! A warm container's Python started ahead: an attached exec of `ahead.py` (as the programs'
//! user, in /workspace) that has imported the environment's preloaded modules and waits for
//! its one job on stdin. A run that takes the container writes its job and drives the exec
//! as a cold run's ([`super::drive`]); its deadline starts then. Dropped unused (the pool
//! closed, the container went), its stdin closes and the boot exits.

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

/// Starts the boot in container `id` and waits until it is ready.
pub(super) async fn start(
    docker: &bollard::Docker,
    id: &str,
    preload: &[String],
) -> Result<AheadExec, DockerError> {
    let cmd = ["python3", "-I", "-B", "-u", "-c", ahead::BOOT_PY]
        .map(str::to_owned)
        .to_vec();
    let (exec_id, mut output, mut input) = engine::start_exec(docker, id, cmd, true).await?;
    let opening = ahead::opening(preload);
    let sent = async {
        input.write_all(opening.as_bytes()).await?;
        input.flush().await
    };
    sent.await.map_err(|e| {
        DockerError::Protocol(format!("the started-ahead interpreter did not start: {e}"))
    })?;
    let mut stdout = Capped::default();
    let mut stderr = Capped::default();
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
    let readiness = match tokio::time::timeout(READY_WITHIN, ready).await {
        Ok(Ok(readiness)) => readiness,
        Ok(Err(why)) => {
            return Err(DockerError::Protocol(format!(
                "the started-ahead interpreter failed: {why}"
            )))
        }
        Err(_) => {
            return Err(DockerError::Protocol(format!(
                "the started-ahead interpreter was not ready within {} s",
                READY_WITHIN.as_secs()
            )))
        }
    };
    Ok(AheadExec {
        exec: Exec {
            id: exec_id,
            output,
            input,
        },
        readiness,
    })
}
