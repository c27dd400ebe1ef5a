//! One run's exec driven to its end: its job written to stdin (closed after), stdout and
//! stderr read under the cap, the container watched (an OOM kill under gVisor takes it down
//! while the stream stays open), and past the deadline or the cap the container killed through
//! the API. The same for an exec started for the run and one started ahead of it.

use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::{
    engine::{self, Capped, Input, Output, RawRun, Stopped},
    DockerError,
};

/// An attached exec: its id and its streams.
pub(super) struct Exec {
    pub id: String,
    pub output: Output,
    pub input: Input,
}

/// The run's deadline (from when its job is written) and output cap.
pub(super) struct Bounds {
    pub timeout: Duration,
    pub max_output: usize,
}

/// Writes `payload` to the exec and reads it to its end, within `bounds`.
pub(super) async fn drive(
    docker: &bollard::Docker,
    id: &str,
    exec: Exec,
    payload: String,
    bounds: Bounds,
    beat: &super::Heartbeat,
) -> Result<RawRun, DockerError> {
    let Exec {
        id: exec_id,
        mut output,
        mut input,
    } = exec;
    let Bounds {
        timeout,
        max_output,
    } = bounds;
    let started = Instant::now();
    let started_at = SystemTime::now();
    let mut stdout = Capped::default();
    let mut stderr = Capped::default();
    let mut stopped = None;
    let mut container_died = false;
    let feed = async move {
        // A program that exits without reading stdin closes the pipe: not our error.
        let _ = input.write_all(payload.as_bytes()).await;
        let _ = input.shutdown().await;
    };
    let read = async {
        while let Some(frame) = output.next().await {
            beat.beat();
            match frame {
                Ok(bollard::container::LogOutput::StdOut { message }) => {
                    stdout.push(&message, max_output)
                }
                Ok(bollard::container::LogOutput::StdErr { message }) => {
                    stderr.push(&message, max_output)
                }
                Ok(_) => {}
                Err(source) => {
                    return Err(DockerError::Exec {
                        id: id.to_owned(),
                        source,
                    })
                }
            }
            if stdout.over || stderr.over {
                return Ok(Some(Stopped::Output));
            }
        }
        Ok(None)
    };
    // Under gVisor an out-of-memory kill takes the whole sandbox down while the exec stream
    // stays open; so after a moment the container itself is watched too (fast runs pay nothing).
    let watch = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        loop {
            let running = super::inspect::running(docker, id).await;
            beat.beat();
            if !running.unwrap_or(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    enum Ended {
        Stream(Option<Stopped>),
        ContainerDied,
    }
    let run = async {
        tokio::select! {
            read = async { tokio::join!(feed, read).1 } => read.map(Ended::Stream),
            () = watch => Ok(Ended::ContainerDied),
        }
    };
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(Ended::Stream(why))) => stopped = why,
        Ok(Ok(Ended::ContainerDied)) => container_died = true,
        Ok(Err(error)) => return Err(error),
        Err(_elapsed) => stopped = Some(Stopped::Deadline),
    }
    let elapsed = started.elapsed();
    let exit_code = if stopped.is_some() || container_died {
        engine::kill(docker, id).await;
        None
    } else {
        engine::exit_code(docker, &exec_id).await?
    };
    beat.beat();
    Ok(RawRun {
        stdout: String::from_utf8_lossy(&stdout.kept).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.kept).into_owned(),
        exit_code,
        stopped,
        container_died,
        elapsed,
        started_at,
    })
}
