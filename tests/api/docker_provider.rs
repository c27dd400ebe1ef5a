//! The docker provider against the real dockerd that `make test` starts (scripts/docker.sh
//! up), under runc and under gVisor (runsc): the conformance suite, hostile programs, faults.
//! These never skip: without a daemon they fail and say how to start one.

use std::{process::Command, sync::Arc, time::Duration};

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    sandbox::{
        providers::docker::{self, DockerProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Map, Value};

use crate::{
    own_dockerd::OwnDockerd,
    wait::{wait_until, PATIENCE},
};

pub const IMAGE: &str = "sandbox-runtime:local";
pub const RUNTIMES: [&str; 2] = ["runc", "runsc"];

pub fn docker_cli(args: &[&str]) -> String {
    let output = Command::new("docker")
        .args(args)
        .output()
        .expect("the docker CLI runs (scripts/docker.sh up installs it)");
    assert!(
        output.status.success(),
        "docker {args:?} failed: {} — is dockerd running? `scripts/docker.sh up` starts it",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Our sandbox containers on the daemon, running or not: those the consoles of this test
/// process made (another console on the same daemon, a second test run, has its own).
pub fn our_containers() -> Vec<String> {
    let owner = docker::owner_of(std::process::id()).expect("this process's owner label");
    docker_cli(&[
        "ps",
        "-aq",
        "--filter",
        &format!("label={}=1", docker::LABEL_MANAGED),
        "--filter",
        &format!("label={}={owner}", docker::LABEL_OWNER),
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Test settings for `runtime`: small limits so limit cases end quickly.
pub fn settings(runtime: &str, overrides: Value) -> Map<String, Value> {
    let mut values = json!({
        "runtime": runtime,
        "python_image": IMAGE,
        "javascript_image": IMAGE,
        "pool_size": 2,
        // Programs that must succeed get a deadline a busy machine cannot reach first; a test
        // that wants a run timed out asks for a short one.
        "timeout_secs": 30,
        "memory_mb": 256,
        "pids_limit": if runtime.starts_with("runsc") { 1000 } else { 64 },
        "max_output_bytes": 65536,
        "queue_wait_secs": 30,
    });
    for (key, value) in overrides.as_object().unwrap() {
        values[key] = value.clone();
    }
    values.as_object().unwrap().clone()
}

pub fn provider(runtime: &str, overrides: Value) -> Arc<DockerProvider> {
    Arc::new(
        docker::build_provider(&settings(runtime, overrides)).expect("the docker provider builds"),
    )
}

async fn run(provider: &DockerProvider, language: Language, code: &str) -> ExecutionResult {
    try_run(provider, language, code)
        .await
        .expect("the provider runs the code")
}

async fn try_run(
    provider: &DockerProvider,
    language: Language,
    code: &str,
) -> Result<ExecutionResult, Error> {
    try_run_for(provider, language, code, None).await
}

/// A run with its own deadline (within the provider's).
async fn try_run_for(
    provider: &DockerProvider,
    language: Language,
    code: &str,
    timeout_secs: Option<u32>,
) -> Result<ExecutionResult, Error> {
    let request = ExecRequest {
        language,
        code: code.into(),
        arguments: Map::new(),
        timeout_secs,
    };
    crate::helpers::run_once(provider, &request).await
}

/// Containers carrying a pool's label, running or not.
fn containers_of(pool: &str) -> Vec<String> {
    docker_cli(&[
        "ps",
        "-aq",
        "--filter",
        &format!("label={}={pool}", docker::LABEL_POOL),
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

fn pool_id(provider: &DockerProvider) -> String {
    provider.pool_id().to_owned()
}

/// Waits until the warm-up parked `per_language` idle containers for each language.
async fn warmed(provider: &DockerProvider, per_language: usize) -> Vec<String> {
    let idle = || {
        Language::ALL
            .iter()
            .flat_map(|l| provider.idle_containers(*l))
            .collect::<Vec<String>>()
    };
    wait_until(
        &format!("the pool to warm up to {per_language} per language"),
        || async { idle().len() == 2 * per_language },
    )
    .await;
    idle()
}

/// Waits until a pool's background work settles to `expected` containers.
async fn settle(pool: &str, expected: usize) -> Vec<String> {
    wait_until(
        &format!("pool {pool} to settle to {expected} containers"),
        || async { containers_of(pool).len() == expected },
    )
    .await;
    containers_of(pool)
}

#[tokio::test]
async fn the_conformance_suite_passes_under_runc_and_gvisor() {
    for runtime in RUNTIMES {
        let provider = provider(runtime, json!({ "timeout_secs": 10 }));

        let failures = testkit::run_all(provider.as_ref()).await;
        provider.shutdown().await;

        assert!(failures.is_empty(), "{runtime}: {failures:#?}");
    }
}

#[tokio::test]
async fn health_reports_daemon_runtime_images_and_pool() {
    for runtime in RUNTIMES {
        let provider = provider(runtime, json!({}));
        provider.warm_up();
        let pool = pool_id(&provider);
        warmed(&provider, 2).await;

        let health = provider.health().await;
        let state = provider.pool_state().unwrap();
        provider.shutdown().await;

        assert!(health.healthy, "{runtime}: {}", health.message);
        assert_eq!(health.details["runtime"], json!(runtime));
        assert_eq!(health.details["gvisor"], json!(runtime == "runsc"));
        assert_eq!(health.details["pool_python_size"], json!(2));
        assert_eq!(health.details["pool_python_idle"], json!(2));
        assert_eq!(health.details["pool_javascript_busy"], json!(0));
        assert!(health.details["api_version"].as_str().is_some());
        // The pool is one figure on the card (pool_state), never a second one in the
        // message; the details keep each language's counts.
        assert!(!health.message.contains("Pool"), "{}", health.message);
        assert_eq!((state.size, state.busy, state.warming), (4, 0, 0));
        settle(&pool, 0).await;
    }
}

#[tokio::test]
async fn every_container_is_hardened() {
    let provider = provider("runc", json!({ "cpu_millis": 500, "pids_limit": 77 }));
    provider.warm_up();
    let pool = pool_id(&provider);
    let ids = warmed(&provider, 2).await;

    let inspected: Value = serde_json::from_str(&docker_cli(&["inspect", &ids[0]])).unwrap();
    provider.shutdown().await;

    let host = &inspected[0]["HostConfig"];
    assert_eq!(host["NetworkMode"], "none");
    assert_eq!(host["Init"], true);
    assert_eq!(host["ReadonlyRootfs"], true);
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges"]));
    assert_eq!(host["Memory"], json!(256 * 1024 * 1024));
    assert_eq!(host["MemorySwap"], host["Memory"]);
    assert_eq!(host["PidsLimit"], 77);
    assert_eq!(host["NanoCpus"], 500_000_000);
    assert!(host["Tmpfs"]["/workspace"]
        .as_str()
        .unwrap()
        .contains("size=64m"));
    assert!(host["Tmpfs"]["/tmp"].as_str().unwrap().contains("size=64m"));
    assert_eq!(
        inspected[0]["Config"]["User"], "65533:65533",
        "the container's own processes are not the programs' uid (65534)"
    );
    assert_eq!(inspected[0]["Config"]["Labels"][docker::LABEL_MANAGED], "1");
    settle(&pool, 0).await;
}

/// A hostile program: what it does, its deadline in seconds, its language, its code, and the
/// verdict it must get. Programs that must end by a limit other than time get a deadline they
/// cannot reach first however busy the machine; those that must be timed out, a short one.
type HostileCase = (
    &'static str,
    u32,
    Language,
    &'static str,
    fn(&ExecutionResult) -> bool,
);

#[tokio::test]
async fn hostile_programs_get_typed_statuses_and_nothing_escapes() {
    for runtime in RUNTIMES {
        let provider = provider(runtime, json!({ "timeout_secs": 30 }));
        let cases: [HostileCase; 9] = [
            (
                "ignores SIGTERM and sleeps",
                3,
                Language::Python,
                "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n",
                |r| r.status == ExecStatus::Timeout,
            ),
            (
                "busy loop",
                3,
                Language::Javascript,
                "while (true) {}",
                |r| r.status == ExecStatus::Timeout,
            ),
            (
                "writes outside the workspace",
                30,
                Language::Python,
                "def main():\n    out = []\n    for p in ['/etc/x', '/usr/x', '/x', '/proc/sys/kernel/hostname']:\n        try:\n            open(p, 'w').write('x')\n            out.append(p)\n        except OSError:\n            pass\n    return out\n",
                |r| r.status == ExecStatus::Success && r.result.value == json!([]),
            ),
            (
                "fills the workspace tmpfs",
                30,
                Language::Python,
                "def main():\n    with open('big', 'wb') as f:\n        for _ in range(200):\n            f.write(b'x' * (1 << 20))\n",
                |r| r.status == ExecStatus::ProgramError && r.stderr.contains("No space left on device"),
            ),
            (
                "fork bomb",
                3,
                Language::Python,
                "import os, time\nwhile True:\n    os.fork()\n",
                |r| matches!(r.status, ExecStatus::ProcessLimit | ExecStatus::MemoryLimit | ExecStatus::Timeout),
            ),
            (
                "memory hog",
                30,
                Language::Javascript,
                "const keep = []; while (true) keep.push(Buffer.alloc(16 << 20, 1));",
                |r| r.status == ExecStatus::MemoryLimit,
            ),
            (
                "snoops the environment and /proc",
                30,
                Language::Python,
                "import os\ndef main():\n    env = sorted(os.environ)\n    procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n    def environ(p):\n        try:\n            return open('/proc/%d/environ' % p, 'rb').read()\n        except PermissionError:\n            return b''\n    leaked = [p for p in procs if b'CANARY' in environ(p)]\n    return {'env': env, 'uid': os.getuid(), 'leaked': leaked, 'ifaces': os.listdir('/sys/class/net') if os.path.exists('/sys/class/net') else []}\n",
                |r| {
                    r.status == ExecStatus::Success
                        // Exactly the variables the engine sets (the three for packages are
                        // set with or without an environment): nothing of the host's.
                        && r.result.value["env"]
                            == json!(["HOME", "HOSTNAME", "LANG", "MPLBACKEND", "MPLCONFIGDIR", "PATH", "PYTHONUNBUFFERED"])
                        && r.result.value["uid"] == json!(65534)
                        && r.result.value["leaked"] == json!([])
                        && r.result.value["ifaces"].as_array().is_none_or(|i| i.iter().all(|n| n == "lo"))
                },
            ),
            (
                "reaches the network",
                30,
                Language::Javascript,
                "const net = require('net'); async function main() { return await new Promise((resolve) => { const s = net.connect(80, '172.17.0.1'); s.on('connect', () => resolve('connected')); s.on('error', (e) => resolve(e.code)); setTimeout(() => resolve('timeout'), 1500); }); }",
                |r| r.status == ExecStatus::Success && r.result.value != json!("connected"),
            ),
            (
                "floods stdout",
                30,
                Language::Python,
                "import sys\nwhile True:\n    sys.stdout.write('z' * 65536)\n",
                |r| r.status == ExecStatus::OutputLimit && r.stdout.len() <= 65536,
            ),
        ];
        std::env::set_var("SANDBOX_TEST_CANARY", "CANARY-secret");
        for (name, deadline, language, code, check) in cases {
            let result = try_run_for(&provider, language, code, Some(deadline))
                .await
                .unwrap_or_else(|error| {
                    panic!("{runtime}, {name}: the provider runs it: {error:?}")
                });
            assert!(
                check(&result),
                "{runtime}, {name}: status {:?}, result {}, stdout {:?}, stderr {:?}",
                result.status,
                result.result.value,
                result.stdout.chars().take(200).collect::<String>(),
                result.stderr.chars().take(400).collect::<String>()
            );
        }
        let after = run(
            &provider,
            Language::Python,
            "def main():\n    return 'still fine'\n",
        )
        .await;
        assert_eq!(
            after.result.value,
            json!("still fine"),
            "{runtime}: the pool recovered"
        );
        provider.shutdown().await;
        settle(&pool_id(&provider), 0).await;
    }
}

/// Run A of the cross-run test: leaves something in every place a run can write to or keep
/// alive in a container — files in the workspace, /tmp, /dev/shm and /dev/mqueue, System V
/// shared memory (with data), a semaphore set and a message queue, an abstract unix socket
/// held by a detached process, a timer (a detached process that writes a file later), and a
/// swarm that keeps forking writers (a process forked after the wipe's scan must not live on).
const PLANT: &str = r#"
import ctypes, os, socket, subprocess
def main():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    for place in ['/workspace', '/tmp', '/dev/shm']:
        open(place + '/left.txt', 'w').write('secret-from-run-A')
    if os.path.isdir('/dev/mqueue'):
        open('/dev/mqueue/leak', 'w').close()
    shmid = libc.shmget(0x4242, 4096, 0o1000 | 0o600)
    ctypes.memmove(libc.shmat(shmid, None, 0), b'sysv-secret-A', 13)
    private = libc.shmget(0, 4096, 0o1000 | 0o600)
    semid = libc.semget(0x4243, 1, 0o1000 | 0o600)
    msgid = libc.msgget(0x4244, 0o1000 | 0o600)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind('\0leak-A')
    listener.listen()
    subprocess.Popen(['sleep', '300'], start_new_session=True, pass_fds=[listener.fileno()])
    subprocess.Popen(['sh', '-c', 'sleep 1; echo late > /tmp/late.txt'], start_new_session=True)
    subprocess.Popen(['sh', '-c', 'while true; do (sleep 0.2; echo late > /workspace/late.txt) & sleep 0.01; done'],
                     start_new_session=True)
    return {'shm': shmid, 'private': private, 'sem': semid, 'msg': msgid,
            'container': os.uname().nodename}
"#;

/// Run B: reports whatever of run A it can still find.
const LOOK: &str = r#"
import ctypes, os, socket, time
def main():
    time.sleep(1.5)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    # This run's own files (its code, the runner) are in /workspace too: look for A's.
    files = []
    for place in ['/workspace', '/tmp', '/dev/shm', '/dev/mqueue']:
        if os.path.isdir(place):
            files += [place + '/' + name for name in os.listdir(place)
                      if name in ('left.txt', 'late.txt', 'leak')]
    shmid = libc.shmget(0x4242, 0, 0)
    shm = ctypes.string_at(libc.shmat(shmid, None, 0), 13).decode() if shmid >= 0 else None
    sysvipc = {}
    for kind in ['shm', 'sem', 'msg']:
        try:
            sysvipc[kind] = len(open('/proc/sysvipc/' + kind).read().splitlines()) - 1
        except OSError:
            pass
    try:
        probe = socket.socket(socket.AF_UNIX)
        probe.connect('\0leak-A')
        abstract = 'connected'
    except OSError as e:
        abstract = e.__class__.__name__
    procs = [open('/proc/%s/cmdline' % p).read() for p in os.listdir('/proc') if p.isdigit()]
    return {'files': sorted(files), 'shm': shm, 'sem': libc.semget(0x4243, 0, 0),
            'msg': libc.msgget(0x4244, 0, 0), 'sysvipc': sysvipc, 'abstract': abstract,
            'sleepers': [p for p in procs if p.startswith('sleep\x00300') or 'late.txt' in p]}
"#;

#[tokio::test]
async fn a_run_never_sees_what_an_earlier_run_left_strict_or_reused() {
    for (runtime, fresh) in [
        ("runc", true),
        ("runsc", true),
        ("runc", false),
        ("runsc", false),
    ] {
        let provider = provider(
            runtime,
            json!({ "pool_size": 1, "fresh_container_per_run": fresh }),
        );

        let planted = run(&provider, Language::Python, PLANT).await;
        let first = planted.metadata["container"].clone();
        // Run B takes what the pool parks next: A's container wiped, or a fresh one.
        wait_until("the pool to park a container again", || async {
            provider.idle_containers(Language::Python).len() == 1
        })
        .await;
        let seen = run(&provider, Language::Python, LOOK).await;
        provider.shutdown().await;

        let case = format!("{runtime}, fresh={fresh}");
        assert_eq!(
            planted.status,
            ExecStatus::Success,
            "{case}: {}",
            planted.stderr
        );
        for object in ["shm", "private", "sem", "msg"] {
            assert!(
                planted.result.value[object].as_i64().unwrap() >= 0,
                "{case}: run A made its {object}: {}",
                planted.result.value
            );
        }
        assert_eq!(seen.status, ExecStatus::Success, "{case}: {}", seen.stderr);
        let found = &seen.result.value;
        assert_eq!(found["files"], json!([]), "{case}: files of run A");
        assert_eq!(found["shm"], Value::Null, "{case}: System V shared memory");
        assert_eq!(found["sem"], json!(-1), "{case}: System V semaphores");
        assert_eq!(found["msg"], json!(-1), "{case}: System V message queue");
        for (kind, count) in found["sysvipc"].as_object().unwrap() {
            assert_eq!(count, &json!(0), "{case}: /proc/sysvipc/{kind}");
        }
        assert_ne!(found["abstract"], "connected", "{case}: abstract socket");
        assert_eq!(found["sleepers"], json!([]), "{case}: processes of run A");
        match (fresh, runtime) {
            (true, _) => assert_ne!(
                seen.metadata["container"], first,
                "{case}: strict never reuses"
            ),
            (false, "runc") => assert_eq!(
                seen.metadata["container"], first,
                "{case}: reuse mode reuses after a verified wipe"
            ),
            (false, _) => assert_ne!(
                seen.metadata["container"], first,
                "{case}: gVisor has no /proc/sysvipc, so the wipe cannot be verified and the \
                 container is replaced"
            ),
        }
        settle(&pool_id(&provider), 0).await;
    }
}

#[tokio::test]
async fn a_pooled_container_killed_from_outside_is_replaced() {
    let provider = provider(
        "runc",
        json!({ "pool_size": 1, "fresh_container_per_run": false }),
    );
    provider.warm_up();
    let pool = pool_id(&provider);
    let ids = warmed(&provider, 1).await;
    for id in &ids {
        docker_cli(&["kill", id]);
    }

    let result = run(&provider, Language::Python, "def main():\n    return 1\n").await;
    let health = provider.health().await;
    provider.shutdown().await;

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    assert_eq!(result.metadata["cold_start"], json!(true));
    assert!(health.healthy, "{}", health.message);
    settle(&pool, 0).await;
}

#[tokio::test]
async fn a_missing_image_or_runtime_is_a_clear_health_error() {
    let no_image = provider(
        "runc",
        json!({ "javascript_image": "sandbox-runtime:does-not-exist" }),
    );
    let no_runtime = provider("no-such-runtime", json!({}));

    let image_health = no_image.health().await;
    let runtime_health = no_runtime.health().await;
    let run_error = try_run(&no_image, Language::Javascript, "1")
        .await
        .unwrap_err();

    assert!(!image_health.healthy);
    assert!(
        image_health
            .message
            .contains("\"sandbox-runtime:does-not-exist\" is not on the Docker host"),
        "{}",
        image_health.message
    );
    assert!(!runtime_health.healthy);
    assert!(
        runtime_health
            .message
            .contains("runtime \"no-such-runtime\" is not registered")
            && runtime_health.message.contains("runc"),
        "{}",
        runtime_health.message
    );
    assert!(
        matches!(&run_error, Error::Provider { source, .. } if source.to_string().contains("sandbox-runtime:does-not-exist")),
        "{run_error}"
    );
}

#[tokio::test]
async fn an_unreachable_daemon_is_unhealthy_and_runs_fail_typed() {
    let provider = provider(
        "runc",
        json!({ "docker_host": "unix:///nonexistent/docker.sock" }),
    );

    let health = provider.health().await;
    let error = try_run(&provider, Language::Python, "1").await.unwrap_err();

    assert!(!health.healthy);
    assert!(
        health.message.contains("/nonexistent/docker.sock"),
        "{}",
        health.message
    );
    assert!(matches!(error, Error::Unreachable(_)), "{error}");
}

#[tokio::test]
async fn a_full_pool_answers_pool_busy_after_the_queue_wait() {
    let provider = provider("runc", json!({ "pool_size": 1, "queue_wait_secs": 0 }));
    let slow = {
        let provider = provider.clone();
        tokio::spawn(async move {
            run(&provider, Language::Python, "import time\ntime.sleep(4)\n").await
        })
    };
    wait_until("the slow run to hold the only container", || async {
        provider.pool_state().is_some_and(|pool| pool.busy == 1)
    })
    .await;

    let refused = try_run(&provider, Language::Python, "print(1)").await;
    let other_language = try_run(&provider, Language::Javascript, "console.log(1)").await;
    let slow = slow.await.unwrap();
    provider.shutdown().await;

    assert!(
        matches!(refused, Err(Error::PoolBusy { .. })),
        "{refused:?}"
    );
    assert_eq!(
        other_language.unwrap().status,
        ExecStatus::Success,
        "each language has its pool"
    );
    assert_eq!(slow.status, ExecStatus::Success);
    settle(&pool_id(&provider), 0).await;
}

/// On a dockerd of the test's own: restarting the machine's shared daemon would fail every
/// other console's runs too.
#[tokio::test]
async fn a_dockerd_restart_fails_the_run_in_flight_and_the_pool_rebuilds() {
    let mut daemon = OwnDockerd::start();
    daemon.load_image(IMAGE);
    let provider = provider(
        "runc",
        json!({ "pool_size": 1, "timeout_secs": 30, "docker_host": daemon.host() }),
    );
    let in_flight = {
        let provider = provider.clone();
        tokio::spawn(async move {
            try_run(&provider, Language::Python, "import time\ntime.sleep(20)\n").await
        })
    };
    // The idle container runs only tini and sleep: python is the run.
    wait_until("the program to run in its container", || {
        let running = daemon.runs("python");
        async move { running }
    })
    .await;

    daemon.restart();
    let failed = in_flight.await.unwrap();
    let back = "def main():\n    return 'back'\n";
    let mut after = try_run(&provider, Language::Python, back).await;
    let started = std::time::Instant::now();
    while after.is_err() && started.elapsed() < PATIENCE {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = try_run(&provider, Language::Python, back).await;
    }
    provider.shutdown().await;
    let left = Command::new("docker")
        .args(["--host", &daemon.host(), "ps", "-aq"])
        .output()
        .unwrap();

    assert!(
        matches!(failed, Err(Error::Unreachable(_) | Error::Provider { .. })),
        "the run in flight fails typed: {failed:?}"
    );
    assert_eq!(after.expect("runs work again").result.value, json!("back"));
    assert_eq!(
        String::from_utf8_lossy(&left.stdout).trim(),
        "",
        "the provider's shutdown leaves no container on its daemon"
    );
}

#[tokio::test]
async fn a_crashed_consoles_containers_are_swept_and_live_ones_kept() {
    let stale = docker_cli(&[
        "create",
        "--label",
        &format!("{}=1", docker::LABEL_MANAGED),
        "--label",
        &format!("{}=999999999:1", docker::LABEL_OWNER),
        IMAGE,
        "sleep",
        "1",
    ]);
    let stale = stale.trim();
    let live = provider("runc", json!({ "pool_size": 1 }));
    live.warm_up();
    let live_pool = pool_id(&live);
    warmed(&live, 1).await;

    let other = provider("runc", json!({ "pool_size": 1 }));
    let result = run(&other, Language::Python, "print('swept')").await;
    other.shutdown().await;
    let stale_left = docker_cli(&[
        "ps",
        "-aq",
        "--no-trunc",
        "--filter",
        &format!("id={stale}"),
    ]);

    assert_eq!(result.stdout, "swept\n");
    assert_eq!(
        stale_left.trim(),
        "",
        "the dead owner's container was removed"
    );
    assert_eq!(
        containers_of(&live_pool).len(),
        2,
        "a live owner's containers stay"
    );
    live.shutdown().await;
    settle(&live_pool, 0).await;
    settle(&pool_id(&other), 0).await;
}

#[test]
fn the_owner_label_tells_live_processes_from_gone_ones() {
    let me = format!("{}", std::process::id());
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_owned();

    assert!(docker::owner_alive(&format!("{me}:{start}")));
    assert!(
        !docker::owner_alive(&format!("{me}:1")),
        "a reused pid is not us"
    );
    assert!(!docker::owner_alive("999999999:1"));
    assert!(!docker::owner_alive("garbage"));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(docker::owner_alive(&format!(
        "{}/{me}:{start}",
        host.trim()
    )));
    assert!(!docker::owner_alive(&format!(
        "{}/999999999:1",
        host.trim()
    )));
    assert!(
        docker::owner_alive("some-other-host/999999999:1"),
        "a console on another host is not ours to judge"
    );
}
