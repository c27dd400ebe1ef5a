//! Runs in Python sandboxes started ahead: each run gets a sandbox of its own, its limits
//! start when its program arrives, and the environment's modules are already imported.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::*;
use crate::{
    model::execution::ExecStatus,
    sandbox::environment::{Lease, Mount},
};

fn provider(overrides: Value, environment: Resolved) -> LocalProvider {
    let mut config: LocalConfig =
        serde_json::from_value(overrides).expect("the overrides are settings");
    config.ahead_min = config.ahead_min.max(1);
    LocalProvider::new(config, environment)
}

/// Waits until a sandbox started ahead is ready, as the pool counts them.
async fn ready(provider: &LocalProvider) {
    let began = Instant::now();
    while provider.ahead.counts().ready == 0 {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no sandbox became ready: {:?}",
            provider.ahead.counts()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `code` in a sandbox started ahead (it waits for one first).
async fn run_ahead(provider: &LocalProvider, code: &str, timeout: Option<u32>) -> ExecutionResult {
    ready(provider).await;
    let instance = provider.create_instance(Language::Python).await.unwrap();
    let request = ExecRequest {
        language: Language::Python,
        code: code.into(),
        arguments: Map::new(),
        timeout_secs: timeout,
    };
    let result = provider.execute(&instance, &request).await.unwrap();
    assert_eq!(
        result.metadata["started_ahead"],
        json!(true),
        "the run had a sandbox started ahead"
    );
    result
}

const LOOK: &str = r#"
import builtins, os
def main():
    seen = {
        # A pid namespace's inode may be reused once it is gone; with its first process's
        # start time it names one namespace.
        "pid_namespace": os.readlink("/proc/self/ns/pid") + " " + open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19],
        "mark": os.path.exists("/tmp/mark"),
        "workspace_mark": os.path.exists("/workspace/mark"),
        "state": getattr(builtins, "left_behind", None),
    }
    open("/tmp/mark", "w").write("1")
    open("/workspace/mark", "w").write("1")
    builtins.left_behind = "from an earlier run"
    return seen
"#;

#[tokio::test]
async fn two_runs_in_a_row_never_share_a_sandbox() {
    let p = provider(json!({}), Resolved::Bare);
    p.warm_up();

    let first = run_ahead(&p, LOOK, None).await;
    let second = run_ahead(&p, LOOK, None).await;

    assert_eq!(first.status, ExecStatus::Success, "{}", first.stderr);
    assert_eq!(second.status, ExecStatus::Success, "{}", second.stderr);
    let (a, b) = (&first.result.value, &second.result.value);
    assert_ne!(a["pid_namespace"], b["pid_namespace"]);
    for seen in [a, b] {
        assert_eq!(seen["mark"], json!(false), "{seen}");
        assert_eq!(seen["workspace_mark"], json!(false), "{seen}");
        assert_eq!(seen["state"], Value::Null, "{seen}");
    }
    p.shutdown().await;
}

#[tokio::test]
async fn the_deadline_starts_when_the_program_arrives() {
    let p = provider(json!({ "timeout_secs": 2 }), Resolved::Bare);
    p.warm_up();
    ready(&p).await;
    // The sandbox has waited longer than a run may take; its run still has its whole time.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let slow = run_ahead(
        &p,
        "import time\ndef main():\n    time.sleep(1)\n    return 1\n",
        None,
    )
    .await;
    let endless = run_ahead(&p, "import time\ndef main():\n    time.sleep(60)\n", None).await;

    assert_eq!(slow.status, ExecStatus::Success, "{}", slow.stderr);
    assert_eq!(endless.status, ExecStatus::Timeout, "{}", endless.stderr);
    assert!(endless.wall_time_ms >= 2000, "{}", endless.wall_time_ms);
    p.shutdown().await;
}

#[tokio::test]
async fn limits_hold_in_a_sandbox_started_ahead() {
    let p = provider(
        json!({ "timeout_secs": 5, "memory_mb": 128, "max_output_bytes": 65536 }),
        Resolved::Bare,
    );
    p.warm_up();

    let memory = run_ahead(
        &p,
        "def main():\n    x = bytearray(1 << 30)\n    return len(x)\n",
        None,
    )
    .await;
    let output = run_ahead(&p, "def main():\n    print('x' * 200000)\n", None).await;
    let cpu = run_ahead(&p, "def main():\n    while True:\n        pass\n", Some(1)).await;
    let artifacts = run_ahead(
        &p,
        "def main():\n    open('artifacts/out.txt', 'w').write('made ahead')\n    return 1\n",
        None,
    )
    .await;

    assert_eq!(memory.status, ExecStatus::MemoryLimit, "{}", memory.stderr);
    assert_eq!(output.status, ExecStatus::OutputLimit, "{}", output.stderr);
    assert_eq!(cpu.status, ExecStatus::Timeout, "{}", cpu.stderr);
    assert_eq!(
        artifacts.status,
        ExecStatus::Success,
        "{}",
        artifacts.stderr
    );
    assert_eq!(artifacts.artifacts.len(), 1);
    assert_eq!(artifacts.artifacts[0].name, "out.txt");
    assert!(
        !artifacts.stderr.contains("artifacts"),
        "{}",
        artifacts.stderr
    );
    p.shutdown().await;
}

#[tokio::test]
async fn the_environment_s_modules_are_imported_before_the_program_arrives() {
    // A stand-in numpy that remembers when it was imported.
    let (_dir, mount) = mount_with_numpy("import time\nIMPORTED_AT = time.monotonic()\n");
    let p = provider(json!({}), Resolved::Ready(mount));
    p.warm_up();

    let code = "import sys, time\nloaded = 'numpy' in sys.modules\ndef main():\n    import numpy\n    return [loaded, time.monotonic() - numpy.IMPORTED_AT]\n";
    let result = run_ahead(&p, code, None).await;

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    let value = &result.result.value;
    assert_eq!(value[0], json!(true), "numpy was there before the program");
    assert_eq!(result.metadata["preloaded"], json!(["numpy"]));
    p.shutdown().await;
}

fn mount_with_numpy(init: &str) -> (tempfile::TempDir, Mount) {
    let dir = tempfile::tempdir().unwrap();
    let numpy = dir.path().join("python/numpy");
    std::fs::create_dir_all(&numpy).unwrap();
    std::fs::write(numpy.join("__init__.py"), init).unwrap();
    let mount = Mount {
        name: "test".into(),
        build: "b".into(),
        dir: dir.path().to_owned(),
        preload: vec!["numpy".into()],
        lease: Lease::default(),
    };
    (dir, mount)
}

/// Waits for the pool to say what is wrong with it.
async fn problem(provider: &LocalProvider) -> String {
    let began = Instant::now();
    loop {
        if let Some(problem) = provider.ahead.counts().problem {
            return problem;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "no reason given");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_pool_that_cannot_start_says_why() {
    let p = provider(json!({ "memory_mb": 1 }), Resolved::Bare);
    p.warm_up();

    let problem = problem(&p).await;

    assert!(
        problem.starts_with("sandboxes cannot be started ahead:"),
        "{problem}"
    );
    assert_eq!(p.ahead.counts().ready, 0);
    p.shutdown().await;
}

#[tokio::test]
async fn a_module_that_cannot_be_preloaded_is_named_on_the_health_card() {
    let (_dir, mount) = mount_with_numpy("raise ImportError('broken on purpose')\n");
    let p = provider(json!({}), Resolved::Ready(mount));
    p.warm_up();

    let problem = problem(&p).await;
    let health = p.health().await;
    let run = run_ahead(&p, "def main():\n    return 2\n", None).await;

    assert_eq!(
        problem,
        "started-ahead sandboxes run, but could not preload numpy (ImportError: broken on purpose)"
    );
    assert!(health.message.contains(&problem), "{}", health.message);
    assert_eq!(run.status, ExecStatus::Success, "{}", run.stderr);
    p.shutdown().await;
}

#[tokio::test]
async fn the_memory_limit_starts_when_the_program_arrives() {
    // A preloaded module that holds 80 MiB: the run still has its whole 128 MiB on top.
    let (_dir, mount) =
        mount_with_numpy("HELD = bytearray(80 << 20)\nHELD[::4096] = b'x' * len(HELD[::4096])\n");
    let p = provider(json!({ "memory_mb": 128 }), Resolved::Ready(mount));
    p.warm_up();

    let fits = run_ahead(
        &p,
        "def main():\n    x = bytearray(100 << 20)\n    x[::4096] = b'y' * len(x[::4096])\n    return len(x)\n",
        None,
    )
    .await;
    let too_much = run_ahead(&p, "def main():\n    x = bytearray(200 << 20)\n    x[::4096] = b'y' * len(x[::4096])\n    return len(x)\n", None).await;

    assert_eq!(fits.status, ExecStatus::Success, "{}", fits.stderr);
    assert_eq!(
        too_much.status,
        ExecStatus::MemoryLimit,
        "{}",
        too_much.stderr
    );
    p.shutdown().await;
}

#[tokio::test]
async fn shutting_the_provider_down_ends_its_sandboxes_started_ahead() {
    let p = provider(json!({ "ahead_min": 2 }), Resolved::Bare);
    p.warm_up();
    let began = Instant::now();
    while p.ahead.counts().ready < 2 {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "{:?}",
            p.ahead.counts()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = super::session_tests::descendants_with("sandbox-console started-ahead boot");
    assert_eq!(waiting.len(), 2, "two interpreters wait: {waiting:?}");

    p.shutdown().await;

    let began = Instant::now();
    while !super::session_tests::descendants_with("sandbox-console started-ahead boot").is_empty() {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the sandboxes started ahead are still there"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(p.ahead.counts().ready, 0);
}
