//! Sessions on the kubernetes provider: a claim held for the session's life, the session
//! driver kept in its pod by `session_host.py`, and every request, interrupt and read of the
//! driver's output a short call through the pod's runtime (`/upload` of the request as a file,
//! `/execute` of the host's `call`). Output is read by a poller that asks the host for the
//! driver's lines since the last it saw, waiting in the pod up to 20 s for new ones. The claim
//! is deleted when the session ends (closed, reaped idle, past its lifetime, at shutdown, or
//! dropped); a console that dies leaves it to the sweep and the claim's shutdown time.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use async_trait::async_trait;
use rand::Rng;
use serde_json::{json, Value};
use tokio::{sync::mpsc, time::Instant};

use super::{
    claims::{ClaimGuard, Claims},
    reach::{self, Reached},
    runtime::Runtime,
    KubernetesProvider,
};
use crate::{
    model::execution::{ExecStatus, Language},
    sandbox::{
        providers::open_sandboxes::OpenSandboxes,
        session::{
            driver::{self, DriverSession, Transport},
            Session, SessionSpec, CELL_OUTPUT_CAP,
        },
        Error,
    },
};

const HOST: &str = include_str!("session_host.py");
const HOST_FILE: &str = ".sandbox-console-host.py";
const SPEC_FILE: &str = ".sandbox-console-driver.json";
/// How long the host waits in the pod for the driver's next line before answering.
const POLL_WAIT: Duration = Duration::from_secs(20);
const READY_WITHIN: Duration = Duration::from_secs(60);
const QUEUED_EVENTS: usize = 1024;
/// The most one answer of the host may be (4 MiB of lines, escaped once more as JSON).
const ANSWER_ROOM: usize = 16 << 20;

/// The claimed pod, as the session's calls reach it.
struct Pod {
    http: reqwest::Client,
    reached: Reached,
    sandbox: String,
    request_timeout: Duration,
    next: AtomicU64,
    alive: AtomicBool,
}

impl Pod {
    fn runtime(&self) -> Runtime<'_> {
        Runtime {
            client: &self.http,
            reached: &self.reached,
            sandbox: &self.sandbox,
            request_timeout: self.request_timeout,
        }
    }

    /// Runs `command` in the pod and reads its one line of JSON.
    async fn json_of(&self, command: &str, within: Duration) -> Result<Value, Error> {
        let ran = self
            .runtime()
            .execute(command, Instant::now() + within, ANSWER_ROOM)
            .await?;
        if ran.timed_out || ran.over {
            return Err(Error::Backend(format!(
                "the session's pod {} did not answer in time",
                self.sandbox
            )));
        }
        let answer: Value = serde_json::from_str(ran.stdout.trim()).map_err(|_| {
            Error::Backend(format!(
                "the session's pod {} answered {}",
                self.sandbox,
                super::http::one_line(&format!("{} {}", ran.stdout, ran.stderr))
            ))
        })?;
        if answer["ok"] != true {
            let message = answer["error"]
                .as_str()
                .unwrap_or("the session host failed");
            return Err(Error::Backend(format!(
                "the session's pod {}: {message}",
                self.sandbox
            )));
        }
        Ok(answer)
    }

    /// One request to the session host: written as a file, then sent by a `call`.
    async fn call(&self, request: Value, within: Duration) -> Result<Value, Error> {
        let file = format!(
            ".sandbox-console-req-{}.json",
            self.next.fetch_add(1, Ordering::SeqCst)
        );
        self.runtime()
            .upload(&file, request.to_string().into_bytes())
            .await?;
        self.json_of(&format!("python3 {HOST_FILE} call {file}"), within)
            .await
    }
}

struct PodTransport {
    pod: Arc<Pod>,
    claim: String,
    guard: std::sync::Mutex<Option<ClaimGuard>>,
    open: Arc<OpenSandboxes<()>>,
    sending: tokio::sync::Mutex<()>,
    poller: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for PodTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodTransport")
            .field("claim", &self.claim)
            .field("sandbox", &self.pod.sandbox)
            .finish_non_exhaustive()
    }
}

impl PodTransport {
    /// Ends the session: the poller stops and the claim (with its pod) is deleted.
    fn end(&self) {
        self.pod.alive.store(false, Ordering::SeqCst);
        self.poller.abort();
        // Dropping the guard deletes the claim.
        drop(self.guard.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.open.remove(&self.claim);
    }
}

impl Drop for PodTransport {
    fn drop(&mut self) {
        self.end();
    }
}

#[async_trait]
impl Transport for PodTransport {
    async fn send(&self, line: String) -> Result<(), Error> {
        let _one_at_a_time = self.sending.lock().await;
        self.pod
            .call(
                json!({ "op": "send", "line": line }),
                self.pod.request_timeout,
            )
            .await
            .map(drop)
    }

    fn interrupt(&self) -> Result<(), Error> {
        let pod = self.pod.clone();
        tokio::spawn(async move {
            if let Err(error) = pod
                .call(json!({ "op": "interrupt" }), pod.request_timeout)
                .await
            {
                tracing::warn!(%error, "could not interrupt a session's cell");
            }
        });
        Ok(())
    }

    fn kill(&self) {
        self.end();
    }

    fn alive(&self) -> bool {
        self.pod.alive.load(Ordering::SeqCst)
    }

    fn ended_by(&self) -> Option<ExecStatus> {
        None
    }
}

/// Reads the driver's lines into `events` until the driver or the pod is gone or the
/// session's lifetime is over; then the claim goes.
async fn poll(pod: Arc<Pod>, events: mpsc::Sender<Value>, until: Instant, claim: (Claims, String)) {
    let mut after = 0u64;
    while pod.alive.load(Ordering::SeqCst) && Instant::now() < until {
        let wait = POLL_WAIT
            .min(until.saturating_duration_since(Instant::now()))
            .as_secs();
        let request = json!({ "op": "events", "after": after, "wait": wait });
        let answer = match pod
            .call(request, Duration::from_secs(wait) + pod.request_timeout)
            .await
        {
            Ok(answer) => answer,
            Err(error) => {
                tracing::info!(%error, sandbox = %pod.sandbox, "a session's pod stopped answering");
                break;
            }
        };
        for item in answer["events"].as_array().into_iter().flatten() {
            after = item[0].as_u64().unwrap_or(after);
            if let Some(event) = item[1].as_str().and_then(driver::parse_line) {
                if events.send(event).await.is_err() {
                    return;
                }
            }
        }
        if answer["exited"] == true {
            break;
        }
    }
    pod.alive.store(false, Ordering::SeqCst);
    let (claims, name) = claim;
    if let Err(error) = claims.delete(&name).await {
        tracing::warn!(%error, claim = %name, "could not delete an ended session's claim");
    }
}

/// Opens a session: claims a sandbox for its lifetime, starts the driver in the pod, and
/// waits until it says it is ready.
pub(super) async fn open(
    provider: &KubernetesProvider,
    spec: &SessionSpec,
) -> Result<Arc<dyn Session>, Error> {
    let claims: Claims = provider.claims().await?;
    provider.sweep(&claims).await;
    let name = format!("sandbox-console-{:016x}", rand::thread_rng().gen::<u64>());
    provider.open.insert(name.clone(), ());
    let guard = ClaimGuard {
        claims: Some(claims.clone()),
        name: name.clone(),
    };
    let opened = start(provider, &claims, &name, spec).await;
    let (pod, events_tx, events) = match opened {
        Ok(opened) => opened,
        Err(error) => {
            drop(guard);
            provider.open.remove(&name);
            return Err(error);
        }
    };
    let poller = tokio::spawn(poll(
        pod.clone(),
        events_tx,
        Instant::now() + spec.lifetime,
        (claims, name.clone()),
    ));
    let transport = PodTransport {
        pod,
        claim: name,
        guard: std::sync::Mutex::new(Some(guard)),
        open: provider.open.clone(),
        sending: tokio::sync::Mutex::new(()),
        poller,
    };
    let mut events = events;
    driver::ready(&mut events, READY_WITHIN).await?;
    Ok(Arc::new(DriverSession::new(
        transport,
        events,
        spec.language,
        CELL_OUTPUT_CAP,
    )))
}

type Started = (Arc<Pod>, mpsc::Sender<Value>, mpsc::Receiver<Value>);

/// The claim Ready, the host and the driver's spec uploaded, the host started.
async fn start(
    provider: &KubernetesProvider,
    claims: &Claims,
    name: &str,
    spec: &SessionSpec,
) -> Result<Started, Error> {
    let (bound, _) = provider.claim(claims, name, spec.lifetime).await?;
    let config = &provider.config;
    let reached = reach::reach(config, &bound, spec.lifetime + Duration::from_secs(60))?;
    let pod = Arc::new(Pod {
        http: provider.http.clone(),
        reached,
        sandbox: bound.sandbox,
        request_timeout: Duration::from_secs(config.request_timeout_secs.into()),
        next: AtomicU64::new(1),
        alive: AtomicBool::new(true),
    });
    let interpreter = match spec.language {
        Language::Python => "python3",
        Language::Javascript => "node",
    };
    let mut argv = vec![interpreter.to_owned()];
    argv.extend(driver::driver_args(spec.language).map(str::to_owned));
    let runtime = pod.runtime();
    runtime.upload(HOST_FILE, HOST.as_bytes().to_vec()).await?;
    runtime
        .upload(
            SPEC_FILE,
            json!({ "argv": argv, "home": "." })
                .to_string()
                .into_bytes(),
        )
        .await?;
    pod.json_of(&format!("python3 {HOST_FILE} start"), READY_WITHIN)
        .await?;
    let (events_tx, events) = mpsc::channel(QUEUED_EVENTS);
    Ok((pod, events_tx, events))
}
