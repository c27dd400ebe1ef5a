//! The docker provider's Python interpreters started ahead, under runc and gVisor: each run
//! takes a container whose interpreter already waits, serves one run in it, and the next run
//! sees nothing of it; the run's deadline starts when its program arrives; a run that
//! arrives while the imports go on does not wait for them.

use std::{os::unix::fs::PermissionsExt, path::PathBuf, sync::Arc, time::Duration};

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    sandbox::{
        environment::{BuildContext, Catalog, Lease, Mount, Resolved},
        providers::docker,
        SandboxProvider,
    },
};
use serde_json::{json, Map, Value};

use crate::{
    docker_provider::{our_containers, provider, settings, RUNTIMES},
    wait::wait_until,
};

/// Waits until the pool has an interpreter started ahead.
async fn ready(provider: &dyn SandboxProvider) {
    wait_until("an interpreter started ahead", || async {
        provider
            .pool_state()
            .and_then(|p| p.ahead)
            .is_some_and(|a| a.ready >= 1)
    })
    .await;
}

/// Waits until the pool has an interpreter started ahead, then runs `code` there.
async fn run_ahead(
    provider: &dyn SandboxProvider,
    code: &str,
    timeout_secs: Option<u32>,
) -> ExecutionResult {
    ready(provider).await;
    let request = ExecRequest {
        language: Language::Python,
        code: code.into(),
        arguments: Map::new(),
        timeout_secs,
    };
    let result = crate::helpers::run_once(provider, &request)
        .await
        .expect("the provider runs the code");
    assert_eq!(
        result.metadata["started_ahead"],
        json!(true),
        "the run took an interpreter started ahead: {:?}",
        result.metadata
    );
    result
}

const LOOK: &str = r#"
import builtins, ctypes, os
def main():
    # A System V shared memory segment outlives the process that made it, in its container's
    # IPC namespace: found by a later run only if it shares the container's kernel state.
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x5C0DE
    seen = {
        "ipc_mark": libc.shmget(key, 0, 0) != -1,
        # A pid namespace's inode may be reused once it is gone; with its first process's
        # start time it names one namespace.
        "pid_namespace": os.readlink("/proc/self/ns/pid") + " " + open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19],
        "mark": os.path.exists("/tmp/mark"),
        "workspace_mark": os.path.exists("/workspace/mark"),
        "state": getattr(builtins, "left_behind", None),
        "pid": os.getpid(),
    }
    libc.shmget(key, 4096, 0o1600)
    open("/tmp/mark", "w").write("1")
    open("/workspace/mark", "w").write("1")
    builtins.left_behind = "from an earlier run"
    return seen
"#;

#[tokio::test]
async fn two_runs_in_a_row_never_share_a_container_or_an_interpreter() {
    for runtime in RUNTIMES {
        let provider = provider(runtime, json!({ "pool_size": 1 }));
        provider.warm_up();

        let first = run_ahead(provider.as_ref(), LOOK, None).await;
        let second = run_ahead(provider.as_ref(), LOOK, None).await;
        provider.shutdown().await;

        assert_eq!(
            first.status,
            ExecStatus::Success,
            "{runtime}: {}",
            first.stderr
        );
        assert_eq!(
            second.status,
            ExecStatus::Success,
            "{runtime}: {}",
            second.stderr
        );
        assert_ne!(
            first.metadata["container"], second.metadata["container"],
            "{runtime}"
        );
        for seen in [&first.result.value, &second.result.value] {
            assert_eq!(seen["ipc_mark"], json!(false), "{runtime}: {seen}");
            assert_eq!(seen["mark"], json!(false), "{runtime}: {seen}");
            assert_eq!(seen["workspace_mark"], json!(false), "{runtime}: {seen}");
            assert_eq!(seen["state"], Value::Null, "{runtime}: {seen}");
        }
        // Under runc a pid namespace is the host kernel's, its inode and its first process's
        // start time unique between containers. gVisor's are its own kernel's: the same inode
        // and a start time counted from the sandbox's own boot, so two sandboxes booted alike
        // show the same (pid:[158] 9 in both, seen in CI31); the IPC mark above tells them apart.
        if runtime == "runc" {
            assert_ne!(
                first.result.value["pid_namespace"], second.result.value["pid_namespace"],
                "{runtime}"
            );
        }
    }
}

#[tokio::test]
async fn the_deadline_starts_when_the_program_arrives_and_limits_hold() {
    for runtime in RUNTIMES {
        let provider = provider(runtime, json!({ "pool_size": 1, "timeout_secs": 3 }));
        provider.warm_up();
        ready(provider.as_ref()).await;
        // It has waited longer than a run may take; its run still has its whole time.
        tokio::time::sleep(Duration::from_millis(3500)).await;

        let slow = run_ahead(
            provider.as_ref(),
            "import time\ndef main():\n    time.sleep(1)\n    return 1\n",
            None,
        )
        .await;
        let endless = run_ahead(
            provider.as_ref(),
            "import time\ndef main():\n    time.sleep(60)\n",
            None,
        )
        .await;
        let output = run_ahead(
            provider.as_ref(),
            "def main():\n    print('x' * 200000)\n",
            None,
        )
        .await;
        let artifacts = run_ahead(
            provider.as_ref(),
            "def main():\n    open('artifacts/out.txt', 'w').write('made ahead')\n    return 1\n",
            None,
        )
        .await;
        provider.shutdown().await;

        assert_eq!(
            slow.status,
            ExecStatus::Success,
            "{runtime}: {}",
            slow.stderr
        );
        assert_eq!(
            endless.status,
            ExecStatus::Timeout,
            "{runtime}: {}",
            endless.stderr
        );
        assert_eq!(output.status, ExecStatus::OutputLimit, "{runtime}");
        assert_eq!(
            artifacts.status,
            ExecStatus::Success,
            "{runtime}: {}",
            artifacts.stderr
        );
        assert_eq!(artifacts.artifacts.len(), 1, "{runtime}");
        assert!(
            !artifacts.stderr.contains("artifacts"),
            "{runtime}: {}",
            artifacts.stderr
        );
    }
}

/// Every environment name resolves to one folder whose `hang` module is preloaded: its import
/// marks the container (`/tmp/importing-ahead`) and never ends.
#[derive(Debug)]
struct Hanging(PathBuf);

impl Catalog for Hanging {
    fn resolve(&self, name: &str) -> Result<Resolved, String> {
        Ok(Resolved::Ready(Mount {
            name: name.into(),
            build: "hanging".into(),
            dir: self.0.clone(),
            preload: vec!["hang".into()],
            lease: Lease::new(Arc::new(())),
        }))
    }
}

#[tokio::test]
async fn a_run_that_arrives_during_the_imports_gets_the_container_without_waiting_for_them() {
    let folder = tempfile::tempdir().unwrap();
    let packages = folder.path().join("python");
    std::fs::create_dir(&packages).unwrap();
    std::fs::write(
        packages.join("hang.py"),
        "open('/tmp/importing-ahead', 'w').close()\nimport time\nwhile True:\n    time.sleep(1)\n",
    )
    .unwrap();
    for dir in [folder.path(), packages.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let context = BuildContext {
        environments: Arc::new(Hanging(folder.path().to_owned())),
        ..BuildContext::default()
    };
    // Whose processes does the program see? Any other than its own interpreter's would be
    // the boot, still importing beside it.
    let code = "import os\ndef main():\n    seen = []\n    for p in os.listdir('/proc'):\n        if p.isdigit() and int(p) != os.getpid():\n            try:\n                seen.append(open('/proc/' + p + '/cmdline', 'rb').read().decode(errors='replace'))\n            except OSError:\n                pass\n    return [c for c in seen if 'started-ahead boot' in c]\n";
    for runtime in RUNTIMES {
        let provider = Arc::new(
            docker::build_provider_with(
                &settings(runtime, json!({ "pool_size": 1, "environment": "hanging" })),
                &context,
            )
            .expect("the docker provider builds"),
        );
        provider.warm_up();
        wait_until("the pool's container importing ahead", || async {
            our_containers().iter().any(|id| {
                std::process::Command::new("docker")
                    .args(["exec", id, "python3", "-c"])
                    .arg("import os, sys; sys.exit(not os.path.exists('/tmp/importing-ahead'))")
                    .status()
                    .is_ok_and(|s| s.success())
            })
        })
        .await;
        // The import never ends: a run waiting for it would wait its whole queue limit (30 s)
        // and come back pool_busy.
        let request = ExecRequest {
            language: Language::Python,
            code: code.into(),
            arguments: Map::new(),
            timeout_secs: None,
        };
        let result = crate::helpers::run_once(provider.as_ref(), &request).await;
        // The pool starts the next container ahead, whose import never ends either: closing
        // the pool ends it rather than waiting for it.
        provider.shutdown().await;
        let result = result.unwrap_or_else(|e| panic!("{runtime}: {e}"));
        assert_eq!(
            result.status,
            ExecStatus::Success,
            "{runtime}: {}",
            result.stderr
        );
        assert_eq!(result.metadata["started_ahead"], json!(false), "{runtime}");
        assert_eq!(result.result.value, json!([]), "{runtime}");
        assert_eq!(our_containers(), Vec::<String>::new(), "{runtime}");
    }
}
