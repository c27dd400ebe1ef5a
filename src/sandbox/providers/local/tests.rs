//! The local provider on this host: the behaviours that matter, including hostile programs.

use serde_json::{json, Map, Value};

use super::*;
use crate::model::execution::ExecStatus;

fn provider(overrides: Value) -> Arc<dyn SandboxProvider> {
    build(overrides.as_object().unwrap()).expect("the local provider builds")
}

async fn exec(
    provider: &Arc<dyn SandboxProvider>,
    language: Language,
    code: &str,
    arguments: Value,
) -> ExecutionResult {
    let instance = provider.create_instance(language).await.unwrap();
    let request = ExecRequest {
        language,
        code: code.into(),
        arguments: arguments.as_object().cloned().unwrap_or_else(Map::new),
        timeout_secs: None,
    };
    let result = provider
        .execute(&instance, &request)
        .await
        .expect("the provider runs the code");
    provider.destroy_instance(instance).await.unwrap();
    result
}

/// Small limits, so limit cases end quickly.
fn strict() -> Arc<dyn SandboxProvider> {
    provider(
        json!({ "timeout_secs": 2, "memory_mb": 128, "max_processes": 32, "max_output_bytes": 65536 }),
    )
}

#[tokio::test]
async fn health_check_proves_isolation() {
    let report = provider(json!({})).health().await;

    assert!(report.healthy, "{}", report.message);
}

#[tokio::test]
async fn a_timed_out_run_leaves_no_process_behind() {
    let p = strict();
    let code = "import subprocess, time\nsubprocess.Popen(['sleep', '7771'])\ntime.sleep(1000)\n";

    let result = exec(&p, Language::Python, code, json!({})).await;

    assert_eq!(result.status, ExecStatus::Timeout, "{}", result.stderr);
    let left = std::process::Command::new("pgrep")
        .args(["-f", "sleep 7771"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left behind: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[tokio::test]
async fn a_fork_bomb_hits_the_process_limit_and_ends() {
    let p = strict();

    let result = exec(
        &p,
        Language::Python,
        "import os\nwhile True:\n    os.fork()\n",
        json!({}),
    )
    .await;

    assert_eq!(result.status, ExecStatus::ProcessLimit, "{}", result.stderr);
    assert!(result.wall_time_ms < 4000, "{} ms", result.wall_time_ms);
}

#[tokio::test]
async fn the_host_stays_out_of_reach() {
    let p = strict();
    let probe = "import os, socket\n\
                 def attempt(f):\n    try:\n        f()\n        return 'allowed'\n    except OSError as e:\n        return type(e).__name__\n\
                 def main():\n    return {\n\
                 'write_root': attempt(lambda: open('/evil', 'w')),\n\
                 'write_usr': attempt(lambda: open('/usr/evil', 'w')),\n\
                 'shadow': attempt(lambda: open('/etc/shadow').read()),\n\
                 'host_files': os.path.exists('/work') or os.path.exists('/root/.cargo'),\n\
                 'tcp': attempt(lambda: socket.create_connection(('1.1.1.1', 80), timeout=1)),\n\
                 'loopback': attempt(lambda: socket.create_connection(('127.0.0.1', 22), timeout=1)),\n\
                 'interfaces': [name for _, name in socket.if_nameindex()],\n\
                 'pid': os.getpid(),\n\
                 'workspace': [line.split()[2] for line in open('/proc/mounts') if line.split()[1] == '/workspace'],\n    }\n";

    let result = exec(&p, Language::Python, probe, json!({})).await;

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    let seen = &result.result.value;
    for key in ["write_root", "write_usr", "shadow", "tcp", "loopback"] {
        assert_ne!(seen[key], "allowed", "{key}: {seen}");
    }
    assert_eq!(seen["host_files"], false, "{seen}");
    assert_eq!(seen["interfaces"], json!(["lo"]));
    assert_eq!(seen["pid"], 1);
    assert_eq!(seen["workspace"], json!(["tmpfs"]), "a fresh tmpfs per run");
}

#[tokio::test]
async fn the_local_provider_passes_the_conformance_suite() {
    let p = strict();

    let failures = crate::sandbox::testkit::run_all(p.as_ref()).await;

    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn a_javascript_memory_hog_is_a_memory_limit_too() {
    // Alone this is killed in ~0.2 s; once, right after a release build filled the page
    // cache, reclaim took past strict()'s 2 s deadline and it came back as a timeout. The
    // deadline is not what this test is about, so it gets room; the verdict must still be
    // memory_limit.
    let p = provider(json!({ "timeout_secs": 10, "memory_mb": 128, "max_processes": 32 }));
    let code = "function main() { const keep = []; for (;;) keep.push(Buffer.alloc(16 * 1024 * 1024, 1)); }";

    let result = exec(&p, Language::Javascript, code, json!({})).await;

    assert_eq!(result.status, ExecStatus::MemoryLimit, "{}", result.stderr);
}
