//! Sessions on the local provider: one jail held for the session's lifetime, with the
//! session driver as its program (`python3 -I -B -c <driver>`, `node -e <driver>`), its workspace a tmpfs at
//! `/home/user`, under the same namespaces, landlock, seccomp, cgroup limits and network
//! policy as a run. The jail's pipes are the driver's transport; SIGINT to the driver
//! interrupts a cell; the watchdog ends the jail at the session's lifetime or when the session
//! is closed or dropped.

use std::{
    io::{BufRead, BufReader, Read, Write},
    sync::{
        atomic::{AtomicBool, AtomicU8, Ordering},
        Arc, Mutex,
    },
    thread,
    time::Duration,
};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{
    jail::{self, KillOnDrop, Stop, KILL_MARGIN},
    oom::{self, OomCount},
    LocalConfig,
};
use crate::{
    model::execution::{ExecStatus, Language},
    sandbox::{
        egress::{self, Egress},
        environment::Mount,
        session::{
            self,
            driver::{self, DriverSession, Transport},
            Session, SessionSpec,
        },
        Error,
    },
};

/// Where a session's files live, inside its sandbox (also its working folder and `HOME`).
pub const HOME: &str = "/home/user";
/// How long a new session's driver may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// Events a driver may have queued before the session reads them.
const QUEUED_EVENTS: usize = 1024;

const ENDED_NORMALLY: u8 = 1;
const ENDED_OOM: u8 = 2;

/// The writing end of the driver's stdin.
type Stdin = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// The jail side of a session: its stdin, its interpreter's pid, its kill switch.
struct JailTransport {
    stdin: Stdin,
    /// The driver's pid on the host (the supervisor's child), for SIGINT.
    driver_pid: Option<i32>,
    kill: KillOnDrop,
    alive: Arc<AtomicBool>,
    ended: Arc<AtomicU8>,
}

impl std::fmt::Debug for JailTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JailTransport")
            .field("driver_pid", &self.driver_pid)
            .field("alive", &self.alive)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Transport for JailTransport {
    async fn send(&self, line: String) -> Result<(), Error> {
        let stdin = self.stdin.clone();
        tokio::task::spawn_blocking(move || {
            let mut stdin = stdin.lock().unwrap_or_else(|e| e.into_inner());
            let pipe = stdin
                .as_mut()
                .ok_or_else(|| Error::Backend("the session has ended".into()))?;
            pipe.write_all(line.as_bytes())
                .and_then(|_| pipe.write_all(b"\n"))
                .and_then(|_| pipe.flush())
                .map_err(|e| Error::Backend(format!("the session's sandbox is gone: {e}")))
        })
        .await
        .map_err(|e| Error::Backend(format!("the session's writer crashed: {e}")))?
    }

    fn interrupt(&self) -> Result<(), Error> {
        let pid = self
            .driver_pid
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| Error::Backend("the session's interpreter is unknown".into()))?;
        if !self.alive() {
            return Ok(());
        }
        rustix::process::kill_process(pid, rustix::process::Signal::INT)
            .map_err(|e| Error::Backend(format!("cannot interrupt the session: {e}")))
    }

    fn kill(&self) {
        self.kill.kill();
    }

    fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    fn ended_by(&self) -> Option<ExecStatus> {
        (self.ended.load(Ordering::SeqCst) == ENDED_OOM).then_some(ExecStatus::MemoryLimit)
    }
}

/// What the session thread hands back once the jail runs.
struct Started {
    stdin: Box<dyn Write + Send>,
    supervisor: u32,
}

/// Opens a session: starts its jail on a thread of its own (in a network namespace of its own
/// on an allow-list) and waits for its driver to be ready.
pub(super) async fn open(
    config: Arc<LocalConfig>,
    mount: Option<Arc<Mount>>,
    egress: Option<Egress>,
    spec: &SessionSpec,
) -> Result<Arc<dyn Session>, Error> {
    let (kill, watch) = jail::stop_channel();
    let (events_tx, mut events) = mpsc::channel::<Value>(QUEUED_EVENTS);
    let (started_tx, started_rx) = oneshot::channel::<Result<Started, String>>();
    let alive = Arc::new(AtomicBool::new(true));
    let ended = Arc::new(AtomicU8::new(0));
    let (lifetime, language) = (spec.lifetime, spec.language);
    let runtime = tokio::runtime::Handle::current();
    let (thread_alive, thread_ended) = (alive.clone(), ended.clone());
    thread::Builder::new()
        .name("sandbox-session".into())
        .spawn(move || {
            let body = |files: Option<&egress::files::NetworkFiles>| {
                hold(
                    &config,
                    mount.as_deref(),
                    language,
                    lifetime,
                    files,
                    watch,
                    events_tx,
                    started_tx,
                    &thread_ended,
                )
            };
            match egress {
                None => body(None),
                Some(egress) => {
                    let session = egress::Session::new(egress.policy.clone());
                    let files = egress.files.clone();
                    let held = egress::namespace::in_new(|device| {
                        let _runtime = runtime.enter();
                        let _serving = egress::serve(device, session);
                        body(Some(&files));
                    });
                    if let Err(error) = held {
                        tracing::warn!(%error, "a session could not get its network");
                    }
                }
            }
            thread_alive.store(false, Ordering::SeqCst);
        })
        .map_err(|e| Error::Backend(format!("cannot start a session thread: {e}")))?;

    let started = started_rx
        .await
        .map_err(|_| Error::Backend("the session's sandbox did not start".into()))?
        .map_err(Error::Backend)?;
    let ready = tokio::time::timeout(READY_WITHIN, events.recv()).await;
    let driver_pid = driver_pid(started.supervisor);
    let transport = JailTransport {
        stdin: Arc::new(Mutex::new(Some(started.stdin))),
        driver_pid,
        kill,
        alive,
        ended,
    };
    match ready {
        Ok(Some(event)) if event["t"] == "ready" => {}
        other => {
            transport.kill();
            return Err(Error::Backend(format!(
                "the session's interpreter did not start: {}",
                match other {
                    Ok(Some(event)) => event["text"].as_str().unwrap_or("").trim().to_owned(),
                    Ok(None) => "it exited".into(),
                    Err(_) => format!("no answer within {} s", READY_WITHIN.as_secs()),
                }
            )));
        }
    }
    Ok(Arc::new(DriverSession::new(
        transport,
        events,
        language,
        session::CELL_OUTPUT_CAP,
    )))
}

/// The driver's host pid: the one child of the jail's supervisor.
fn driver_pid(supervisor: u32) -> Option<i32> {
    let children =
        std::fs::read_to_string(format!("/proc/{supervisor}/task/{supervisor}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// The session's thread: starts the jail, reads its events until it is gone, and records how
/// it ended. Returns when the jail has exited.
#[allow(clippy::too_many_arguments)]
fn hold(
    config: &LocalConfig,
    mount: Option<&Mount>,
    language: Language,
    lifetime: Duration,
    network: Option<&egress::files::NetworkFiles>,
    watch: jail::Watch,
    events: mpsc::Sender<Value>,
    started: oneshot::Sender<Result<Started, String>>,
    ended: &AtomicU8,
) {
    let container = jail::container(config, mount, None, language, lifetime, network, HOME);
    let container = match container {
        Ok(container) => container,
        Err(error) => {
            let _ = started.send(Err(error));
            return;
        }
    };
    let mut command = super::command::interpreter_command(
        &container, config, language, HOME, mount, network, lifetime,
    );
    command.args(driver::driver_args(language));
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            let _ = started.send(Err(format!("cannot start the sandbox: {error}")));
            return;
        }
    };
    let supervisor = child.id();
    let oom = OomCount::of(supervisor);
    let finished = match jail::watchdog(supervisor, lifetime + KILL_MARGIN, watch) {
        Ok(finished) => finished,
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = started.send(Err(error));
            return;
        }
    };
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        let _ = started.send(Err("the sandbox has no pipes".into()));
        return;
    };
    let reader = thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Some(event) = driver::parse_line(&line) else {
                continue;
            };
            if events.blocking_send(event).is_err() {
                break;
            }
        }
        events
    });
    // What the interpreter writes before the driver takes its descriptors over (a crash at
    // start) goes to the log, at most 64 KiB of it.
    let stderr = child.stderr.take().map(|pipe| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.take(64 * 1024).read_to_string(&mut text);
            if !text.trim().is_empty() {
                tracing::debug!(stderr = %text.trim(), "a session's interpreter wrote to its stderr");
            }
        })
    });
    if started
        .send(Ok(Started {
            stdin: Box::new(stdin),
            supervisor,
        }))
        .is_err()
    {
        let _ = child.kill();
    }
    oom::wait_exited(supervisor);
    let oom_killed = oom.is_some_and(|count| count.killed());
    let _ = child.wait();
    let _ = finished.send(Stop::Finished);
    ended.store(
        if oom_killed {
            ENDED_OOM
        } else {
            ENDED_NORMALLY
        },
        Ordering::SeqCst,
    );
    // The events end only now, after how the jail ended is known.
    if let Ok(events) = reader.join() {
        drop(events);
    }
    if let Some(stderr) = stderr {
        let _ = stderr.join();
    }
}
