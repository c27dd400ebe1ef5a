//! Sessions on the docker provider: a container of the provider's kind (runc or gVisor, the
//! same hardening, limits, environment and network policy as a run's) held for the session,
//! with the session driver as one long-lived exec in it, its stdin and stdout attached. The
//! container carries this console's owner label, so a console that dies leaves it to the
//! start-up sweep of the next; its pool label is the provider's plus `-sessions`, so replacing
//! the provider (a settings save) leaves sessions running.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, SystemTime},
};

use async_trait::async_trait;
use bollard::Docker;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::{io::AsyncWriteExt, sync::mpsc};

use super::{engine, inspect, DockerProvider};
use crate::{
    model::execution::{ExecStatus, Language},
    sandbox::{
        egress,
        session::{
            driver::{self, DriverSession, Transport},
            Session, SessionSpec,
        },
        Error,
    },
};

/// A session's home in its container.
const HOME: &str = "/home/user";
const READY_WITHIN: Duration = Duration::from_secs(60);
const QUEUED_EVENTS: usize = 1024;

struct ContainerTransport {
    docker: Docker,
    container: String,
    input: tokio::sync::Mutex<engine::Input>,
    /// The driver's pid inside the container, for SIGINT.
    driver_pid: u64,
    alive: Arc<AtomicBool>,
    oom: Arc<AtomicBool>,
    /// The container's network on an allow-list, served until the session ends.
    _network: Option<egress::Running>,
}

impl std::fmt::Debug for ContainerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerTransport")
            .field("container", &self.container)
            .finish_non_exhaustive()
    }
}

impl ContainerTransport {
    fn remove(&self) {
        self.alive.store(false, Ordering::SeqCst);
        let (docker, id) = (self.docker.clone(), self.container.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                engine::remove(&docker, &id).await;
            });
        }
    }
}

impl Drop for ContainerTransport {
    fn drop(&mut self) {
        self.remove();
    }
}

#[async_trait]
impl Transport for ContainerTransport {
    async fn send(&self, line: String) -> Result<(), Error> {
        let mut input = self.input.lock().await;
        input
            .write_all(format!("{line}\n").as_bytes())
            .await
            .and(input.flush().await)
            .map_err(|e| Error::Backend(format!("the session's container is gone: {e}")))
    }

    fn interrupt(&self) -> Result<(), Error> {
        let (docker, id, pid) = (self.docker.clone(), self.container.clone(), self.driver_pid);
        tokio::spawn(async move {
            // The shell's own `kill`: every runtime image has a shell, not every one Python.
            let cmd = vec!["/bin/sh".into(), "-c".into(), format!("kill -INT {pid}")];
            if let Ok((_, mut output, _)) =
                engine::start_exec_in(&docker, &id, cmd, false, HOME, HOME).await
            {
                while output.next().await.is_some() {}
            }
        });
        Ok(())
    }

    fn kill(&self) {
        self.remove();
    }

    fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    fn ended_by(&self) -> Option<ExecStatus> {
        self.oom
            .load(Ordering::SeqCst)
            .then_some(ExecStatus::MemoryLimit)
    }
}

/// Opens a session: starts its container, then the driver in it, and waits until it is ready.
pub(super) async fn open(
    provider: &DockerProvider,
    spec: &SessionSpec,
) -> Result<Arc<dyn Session>, Error> {
    let shared = &provider.shared;
    let docker = shared.engine.client().await?;
    let container = engine::start_container(
        &docker,
        &shared.config,
        spec.language,
        &shared.owner,
        &format!("{}-sessions", shared.pool_id),
        shared.mount.as_ref(),
        shared.egress.as_ref().map(|e| e.files.as_ref()),
    )
    .await?;
    match start_driver(provider, &docker, &container, spec).await {
        Ok(session) => Ok(session),
        Err(error) => {
            engine::remove(&docker, &container).await;
            Err(error)
        }
    }
}

async fn start_driver(
    provider: &DockerProvider,
    docker: &Docker,
    container: &str,
    spec: &SessionSpec,
) -> Result<Arc<dyn Session>, Error> {
    let lifetime = spec.lifetime;
    let network = provider.connect(docker, container).await?;
    let interpreter = match spec.language {
        Language::Python => "python3",
        Language::Javascript => "node",
    };
    let mut cmd = vec![interpreter.to_owned()];
    cmd.extend(driver::driver_args(spec.language).map(str::to_owned));
    let (_, mut output, input) =
        engine::start_exec_in(docker, container, cmd, true, HOME, HOME).await?;
    let (events_tx, mut events) = mpsc::channel::<Value>(QUEUED_EVENTS);
    let alive = Arc::new(AtomicBool::new(true));
    let oom = Arc::new(AtomicBool::new(false));
    let started = SystemTime::now();
    {
        let (docker, id, alive, oom) = (
            docker.clone(),
            container.to_owned(),
            alive.clone(),
            oom.clone(),
        );
        tokio::spawn(async move {
            let mut pending: Vec<u8> = Vec::new();
            let read = async {
                while let Some(Ok(frame)) = output.next().await {
                    let bollard::container::LogOutput::StdOut { message } = frame else {
                        continue;
                    };
                    pending.extend_from_slice(&message);
                    while let Some(at) = pending.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=at).collect();
                        let line = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                        if let Some(event) = driver::parse_line(&line) {
                            if events_tx.send(event).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            };
            // Under gVisor an out-of-memory kill takes the sandbox down while the exec stream
            // stays open: the container is watched too. And its lifetime ends it.
            let watch = async {
                let until = tokio::time::Instant::now() + lifetime;
                while tokio::time::Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    if !inspect::running(&docker, &id).await.unwrap_or(false) {
                        return;
                    }
                }
            };
            tokio::select! {
                () = read => {}
                () = watch => {}
            }
            if inspect::oom_since(&docker, &id, started).await {
                oom.store(true, Ordering::SeqCst);
            }
            alive.store(false, Ordering::SeqCst);
            engine::remove(&docker, &id).await;
            drop(events_tx);
        });
    }
    let driver_pid = driver::ready(&mut events, READY_WITHIN).await?["pid"]
        .as_u64()
        .unwrap_or(0);
    let transport = ContainerTransport {
        docker: docker.clone(),
        container: container.to_owned(),
        input: tokio::sync::Mutex::new(input),
        driver_pid,
        alive,
        oom,
        _network: network,
    };
    Ok(Arc::new(DriverSession::new(
        transport,
        events,
        spec.language,
        crate::sandbox::session::CELL_OUTPUT_CAP,
    )))
}
