//! One local sandbox started ahead of its run: a jail like a run's (namespaces, read-only root,
//! landlock, seccomp, cgroup limits, the allow-list's network when there is one) whose Python
//! runs `ahead.py`, has imported the environment's preloaded modules and waits for one job.
//! The run's deadline starts when its job arrives (a watchdog of its own then), its memory
//! limit is raised by what the preload took, its CPU limit is lowered by the boot to what the
//! preload used plus the run's. Unused for `idle`, it ends. It never serves a second run.

use std::{
    io::{BufRead, BufReader, Write},
    sync::{mpsc, Arc},
    thread,
    time::{Duration, Instant},
};

use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::{
    finish::{self, Clock, Pipes, Watched},
    jail::{self, RawRun, Stop, Watch},
    oom::OomCount,
    LocalConfig,
};
use crate::{
    model::execution::{Language, MAX_TIMEOUT_SECS},
    sandbox::{
        egress::{self, files::NetworkFiles, Egress},
        environment::Mount,
        runner::{
            ahead::{self, Readiness},
            ArtifactLimits, Job,
        },
    },
};

/// How long a boot may take to become ready (pandas under a loaded machine takes seconds).
pub(super) const READY_WITHIN: Duration = Duration::from_secs(60);

/// What every started-ahead sandbox of one pool is made from.
#[derive(Debug)]
pub(super) struct Spec {
    pub config: Arc<LocalConfig>,
    pub mount: Option<Arc<Mount>>,
    pub egress: Option<Egress>,
    pub preload: Vec<String>,
    /// How long a ready sandbox waits for a run before it ends.
    pub idle: Duration,
}

/// A ready sandbox, waiting for its one run.
#[derive(Debug)]
pub(super) struct Ahead {
    orders: mpsc::SyncSender<Order>,
    pub born: Instant,
    pub readiness: Readiness,
}

/// One run for a ready sandbox.
pub(super) struct Order {
    pub job: Job,
    pub timeout: Duration,
    /// The run's stop channel: the async side dropping its end kills the sandbox.
    pub watch: Watch,
    /// The run's slot, given back when the sandbox is gone.
    pub slot: OwnedSemaphorePermit,
    pub done: oneshot::Sender<Result<RawRun, String>>,
}

impl Ahead {
    /// Gives the sandbox its run. The order comes back when the sandbox is already gone
    /// (ended at its idle limit, killed behind our back): the caller runs it elsewhere.
    pub fn run(self, order: Order) -> Result<(), Box<Order>> {
        self.orders.send(order).map_err(|e| Box::new(e.0))
    }
}

type Ready = Option<oneshot::Sender<Result<Ahead, String>>>;

/// Starts a sandbox ahead and waits until its boot is ready (or says why it is not).
pub(super) async fn start(spec: Arc<Spec>) -> Result<Ahead, String> {
    let (ready_tx, ready_rx) = oneshot::channel();
    let runtime = tokio::runtime::Handle::current();
    thread::Builder::new()
        .name("sandbox-ahead".into())
        .spawn(move || {
            let mut ready: Ready = Some(ready_tx);
            match spec.egress.clone() {
                None => hold(&spec, None, None, &mut ready),
                Some(egress) => {
                    let session = egress::Session::new(egress.policy.clone());
                    let files = egress.files.clone();
                    let held = egress::namespace::in_new(|device| {
                        let _runtime = runtime.enter();
                        match egress::serve(device, session.clone()) {
                            Ok(_serving) => hold(&spec, Some(&files), Some(session), &mut ready),
                            Err(e) => tell(
                                &mut ready,
                                Err(format!("cannot serve the sandbox's network: {e}")),
                            ),
                        }
                    });
                    if let Err(e) = held {
                        tell(
                            &mut ready,
                            Err(format!("cannot give the sandbox its network: {e}")),
                        );
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start a sandbox thread: {e}"))?;
    ready_rx
        .await
        .map_err(|_| "the sandbox's thread ended".to_owned())?
}

fn tell(ready: &mut Ready, result: Result<Ahead, String>) {
    if let Some(tx) = ready.take() {
        let _ = tx.send(result);
    }
}

/// The sandbox's thread: starts the jail, waits for its boot, then for one order, and runs it.
fn hold(
    spec: &Spec,
    network: Option<&NetworkFiles>,
    session: Option<Arc<egress::Session>>,
    ready: &mut Ready,
) {
    let config = &spec.config;
    let mount = spec.mount.as_deref();
    // hakoniwa's own deadline is only the outer bound: the run's starts with its job.
    let bound = spec.idle + READY_WITHIN + Duration::from_secs(MAX_TIMEOUT_SECS.into());
    let prepared =
        jail::host_folder(config, jail::AHEAD_FOLDER_PREFIX).and_then(|(host, artifacts)| {
            let container = jail::container(
                config,
                mount,
                Some(&artifacts),
                Language::Python,
                bound,
                network,
                "/workspace",
            )?;
            Ok((Folder(host.keep()), container))
        });
    let (mut host, container) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return tell(ready, Err(error)),
    };
    let mut command = super::command::interpreter_command(
        &container,
        config,
        Language::Python,
        "/workspace",
        mount,
        network,
        bound,
    );
    // The boot is the program's text, not a file: the run's workspace holds only its own.
    command.args(["-I", "-B", "-u", "-c", ahead::BOOT_PY]);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return tell(ready, Err(format!("cannot start the sandbox: {error}"))),
    };
    let supervisor = child.id();
    let oom = OomCount::of(supervisor);
    let (idle_kill, idle_watch) = jail::stop_channel();
    let idle_finished = match jail::watchdog(supervisor, spec.idle + READY_WITHIN, idle_watch) {
        Ok(finished) => finished,
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            return tell(ready, Err(error));
        }
    };
    let born = Instant::now();
    let (Some(mut stdin), Some(stdout), stderr) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        idle_kill.kill();
        let _ = child.wait();
        return tell(ready, Err("the sandbox has no pipes".into()));
    };
    let mut stdout = BufReader::new(stdout);
    let readiness = stdin
        .write_all(ahead::opening(&spec.preload).as_bytes())
        .and_then(|_| stdin.flush())
        .map_err(|e| format!("the sandbox's interpreter did not start: {e}"))
        .and_then(|_| wait_ready(&mut stdout));
    let readiness = match readiness {
        Ok(readiness) => readiness,
        Err(error) => {
            idle_kill.kill();
            let said = stderr
                .map(|pipe| finish::read_capped(pipe, 4096).0)
                .unwrap_or_default();
            let _ = child.wait();
            let said = said.trim();
            let error = match said.lines().last() {
                Some(last) => format!("{error}: {last}"),
                None => error,
            };
            return tell(ready, Err(error));
        }
    };
    let (orders, next) = mpsc::sync_channel(1);
    tell(
        ready,
        Ok(Ahead {
            orders,
            born,
            readiness,
        }),
    );
    let Ok(order) = next.recv_timeout(spec.idle) else {
        // Retired or unused: stdin closing ends the boot, and its supervisor exits as after a
        // run, removing its cgroups (a killed one leaves them). The idle watchdog still kills
        // a sandbox that would not end.
        drop(stdin);
        let _ = child.wait();
        let _ = idle_finished.send(Stop::Finished);
        return;
    };
    let _ = idle_finished.send(Stop::Finished);
    let Order {
        job,
        timeout,
        watch,
        slot,
        done,
    } = order;
    // The run is timed from when its deadline starts, never later: a clock started after the
    // watchdog (past the grant and the folder's rename below) read 1992 ms for a run killed
    // at its 2 s deadline on a busy machine (CI42), and a gap past classify's 100 ms would
    // have called the deadline's kill an out-of-memory one.
    let started = Instant::now();
    let finished = match jail::watchdog(supervisor, timeout, watch) {
        Ok(finished) => finished,
        Err(error) => {
            idle_kill.kill();
            let _ = child.wait();
            let _ = done.send(Err(error));
            return;
        }
    };
    if let Some(count) = &oom {
        count.grant_what_is_used();
    }
    host.running();
    let flag = format!("{}artifacts", job.marker);
    let sent = ahead::order(&job, &flag, timeout.as_secs() + 1);
    // A boot that is gone shows in how the sandbox ended; nothing to add here.
    let _ = stdin.write_all(sent.as_bytes());
    drop(stdin);
    let limits = ArtifactLimits {
        max_count: config.max_artifacts as usize,
        max_bytes: config.max_artifact_bytes,
    };
    let result = finish::finish(
        child,
        Pipes {
            stdout: Some(stdout),
            stderr,
        },
        Watched { oom, finished },
        Clock {
            started,
            timeout,
            own: false,
        },
        config.max_output_bytes as usize,
        &host.0,
        limits,
    )
    .map(|mut raw| {
        if let Some(at) = raw.stderr.find(&format!("\n{flag}\n")) {
            raw.stderr.replace_range(at..at + flag.len() + 2, "");
        }
        raw.egress = session.map(|s| s.finish());
        raw
    });
    // The run's folder goes before its slot, as a cold run's does: a run that takes the slot
    // next never sees more sandboxes running than there are slots.
    drop(host);
    drop(slot);
    let _ = done.send(result);
}

/// The sandbox's host folder (its artifacts), named as waiting until its run arrives and as
/// running after (what counts a local provider's sandboxes counts runs); removed with this.
struct Folder(std::path::PathBuf);

impl Folder {
    fn running(&mut self) {
        let Some(name) = self.0.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return;
        };
        let renamed = self.0.with_file_name(name.replacen(
            jail::AHEAD_FOLDER_PREFIX,
            jail::RUN_FOLDER_PREFIX,
            1,
        ));
        if std::fs::rename(&self.0, &renamed).is_ok() {
            self.0 = renamed;
        }
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads the boot's stdout up to its ready line.
fn wait_ready(stdout: &mut impl BufRead) -> Result<Readiness, String> {
    let mut seen = 0;
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line) {
            Ok(0) => return Err("the sandbox's interpreter exited before it was ready".into()),
            Ok(n) => seen += n,
            Err(e) => return Err(format!("cannot read the sandbox's interpreter: {e}")),
        }
        if let Some(readiness) = ahead::parse_ready(&line) {
            return Ok(readiness);
        }
        if seen > ahead::MAX_BEFORE_READY {
            return Err("the sandbox's interpreter printed too much before it was ready".into());
        }
    }
}
