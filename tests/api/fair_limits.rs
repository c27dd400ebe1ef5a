//! Limits that hold for everyone (2026-12-06 findings, item 9): one client holding and
//! re-opening connections does not keep others out (a per-address cap), and a frozen dockerd
//! answers a run at its own deadline plus a small margin, not after the queue wait as well;
//! a slow one that keeps answering (a busy machine) finishes the run.

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpSocket, TcpStream, UnixListener, UnixStream},
    sync::watch,
};

use crate::{
    docker_provider::{our_containers, IMAGE},
    faults::configure,
    helpers::spawn_app_with,
};

async fn connect_from(source: [u8; 4], to: std::net::SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind((source, 0).into()).unwrap();
    socket.connect(to).await.unwrap()
}

async fn answer_of(stream: &mut TcpStream, request: &[u8]) -> String {
    let _ = stream.write_all(request).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn one_address_holding_connections_leaves_room_for_everyone_else() {
    let app = spawn_app_with(|config| config.max_connections_per_address = 8).await;
    let to: std::net::SocketAddr = app.address.trim_start_matches("http://").parse().unwrap();
    // Eight half-open requests from one address: its whole share.
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut stream = connect_from([127, 0, 0, 1], to).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\n")
            .await
            .unwrap();
        held.push(stream);
    }

    let mut ninth = connect_from([127, 0, 0, 1], to).await;
    let refused = answer_of(&mut ninth, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let mut other = connect_from([127, 0, 0, 2], to).await;
    let served = answer_of(
        &mut other,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;

    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    // A real client gets that answer too (it arrives after its request, not before).
    let client = reqwest::Client::new()
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .expect("an answer, not a broken connection");
    assert_eq!(client.status().as_u16(), 503);
    assert_eq!(client.headers()["retry-after"], "1");
    // Its share comes back as its connections close.
    drop(held);
    let started = Instant::now();
    loop {
        let mut again = connect_from([127, 0, 0, 1], to).await;
        let answer = answer_of(
            &mut again,
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A socket in front of the real dockerd that forwards every byte until it is frozen; then it
/// forwards nothing more (as a SIGSTOPped dockerd answers nothing). Slowed, it holds each
/// piece of every answer a while before passing it on (as a daemon on a busy machine does).
struct FreezableDocker {
    path: PathBuf,
    frozen: watch::Sender<bool>,
    delay_ms: Arc<AtomicU64>,
    _dir: tempfile::TempDir,
}

impl FreezableDocker {
    fn start() -> FreezableDocker {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let frozen = watch::channel(false).0;
        let gate = frozen.clone();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = delay_ms.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let gate = gate.subscribe();
                let delay = delay.clone();
                tokio::spawn(async move {
                    let Ok(outbound) = UnixStream::connect("/var/run/docker.sock").await else {
                        return;
                    };
                    let (in_read, in_write) = inbound.into_split();
                    let (out_read, out_write) = outbound.into_split();
                    let pipe = |mut from: tokio::net::unix::OwnedReadHalf,
                                mut to: tokio::net::unix::OwnedWriteHalf,
                                mut gate: watch::Receiver<bool>,
                                delay: Option<Arc<AtomicU64>>| async move {
                        let mut buffer = vec![0u8; 64 * 1024];
                        loop {
                            let Ok(n) = from.read(&mut buffer).await else {
                                return;
                            };
                            if n == 0 {
                                return;
                            }
                            // Frozen: hold the bytes forever, as a stopped daemon does.
                            let _ = gate.wait_for(|frozen| !frozen).await;
                            if let Some(delay) = &delay {
                                let ms = delay.load(Ordering::SeqCst);
                                tokio::time::sleep(Duration::from_millis(ms)).await;
                            }
                            if to.write_all(&buffer[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    let up = pipe(in_read, out_write, gate.clone(), None);
                    let down = pipe(out_read, in_write, gate, Some(delay));
                    tokio::join!(up, down);
                });
            }
        });
        FreezableDocker {
            path,
            frozen,
            delay_ms,
            _dir: dir,
        }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    fn freeze(&self, frozen: bool) {
        self.frozen.send_replace(frozen);
    }

    /// Every piece of every answer from now on waits `delay` before it is passed on.
    fn slow(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }
}

/// A console of the test's own, stoppable, with the key that runs code.
struct Console {
    app: crate::helpers::TestApp,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
    key: String,
}

/// A console on docker through `docker`, its one pooled container warm and waiting (its
/// Python started ahead or not); with the key that runs code.
async fn console_through(docker: &FreezableDocker, start_ahead: bool) -> Console {
    let (app, stop, running) =
        crate::helpers::spawn_app_stoppable(tempfile::tempdir().unwrap(), |_| {}).await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    configure(
        &app,
        &admin,
        "docker",
        json!({"docker_host": docker.host(), "runtime": "runc", "python_image": IMAGE,
               "javascript_image": IMAGE, "pool_size": 1, "fresh_container_per_run": false,
               "queue_wait_secs": 30, "environment": "none", "start_ahead": start_ahead}),
    )
    .await;
    let warm: Value = app
        .post_json(
            "/api/v1/execute",
            &key,
            &json!({"language": "python", "code": "def main():\n    return 1\n"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(warm["status"], "success", "{warm}");
    // Frozen only once a container waits ready (none warming, none busy).
    app.login().await;
    let started = Instant::now();
    loop {
        let pool = app.call_ok("sandbox_settings", &[]).await["active_pool"].clone();
        if pool["warming"] == 0 && pool["busy"] == 0 && pool["size"].as_u64() > Some(0) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{pool}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    Console {
        app,
        stop,
        running,
        key,
    }
}

/// One run through the API of a program returning 42 with its own `timeout`: how long it
/// took, its status and its body.
async fn timed_run(
    app: &crate::helpers::TestApp,
    key: &str,
    timeout: u32,
) -> (Duration, u16, String) {
    let started = Instant::now();
    let response = app
        .post_json(
            "/api/v1/execute",
            key,
            &json!({"language": "python", "code": "def main():\n    return 41 + 1\n", "timeout": timeout}),
        )
        .await;
    let took = started.elapsed();
    let status = response.status().as_u16();
    (took, status, response.text().await.unwrap())
}

/// Stops the console, then checks that none of its containers outlived it.
async fn stop_leaving_nothing(console: Console) {
    console.stop.send(()).unwrap();
    console.running.await.unwrap().unwrap();
    assert_eq!(
        our_containers(),
        Vec::<String>::new(),
        "nothing outlives the console"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_dockerd_answers_a_run_at_its_own_deadline() {
    let docker = Arc::new(FreezableDocker::start());
    let console = console_through(&docker, true).await;

    docker.freeze(true);
    let (took, status, body) = timed_run(&console.app, &console.key, 2).await;
    docker.freeze(false);

    assert_eq!(status, 504, "{body}");
    // 2 s and the 8 s margin, not the 30 s queue wait and 20 s more (52 s) as before.
    assert!(
        took < Duration::from_secs(2 + 8 + 5),
        "a 2 s run on a frozen dockerd answered after {took:?}"
    );
    stop_leaving_nothing(console).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_dockerd_that_keeps_answering_finishes_the_run() {
    let docker = Arc::new(FreezableDocker::start());
    // A run that starts its interpreter: one started ahead skips the exec's creation and start.
    let console = console_through(&docker, false).await;

    // Each answer of the run (the exec created, started, its output, its exit code) comes 4 s
    // late: the run takes longer than its 5 s timeout and the 8 s margin together, yet dockerd
    // is never quiet for that long.
    docker.slow(Duration::from_secs(4));
    let (took, status, body) = timed_run(&console.app, &console.key, 5).await;
    docker.slow(Duration::ZERO);

    assert!(
        took > Duration::from_secs(5 + 8),
        "the slow daemon answered within {took:?}"
    );
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "success", "{body}");
    assert_eq!(body["result"]["value"], 42, "{body}");
    stop_leaving_nothing(console).await;
}
