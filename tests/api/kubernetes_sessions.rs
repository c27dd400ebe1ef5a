//! Sessions on the kubernetes provider, in pods made as deploy/kubernetes makes them (real
//! containers serving the deployment's runtime, `kubernetes_pods.rs`) behind the Kubernetes
//! API fake: one claim held for the session, state kept between cells, a runaway cell
//! interrupted with the session answering again, files and commands in the pod, and the claim
//! and its pod gone after close and after the session's lifetime.

use std::time::Duration;

use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::{
        providers::kubernetes::{self, KubernetesProvider},
        session::{CommandSpec, SessionSpec},
        SandboxProvider,
    },
};
use serde_json::json;

use crate::{
    fakes::kubernetes::{self as fake, Options},
    kubernetes_pods::{Containers, PORT},
    kubernetes_provider::settings,
    wait::wait_until,
};

fn provider(cluster: &fake::Kubernetes) -> KubernetesProvider {
    kubernetes::build_provider(&settings(cluster, json!({ "runtime_port": PORT }))).unwrap()
}

#[tokio::test]
async fn kubernetes_sessions_in_docker_pods_keep_state_interrupt_and_leave_no_claim() {
    let containers = Containers::new(300).await;
    let cluster = fake::start(Options {
        pods: Some(containers.pods()),
        ..Options::default()
    })
    .await;
    let provider = provider(&cluster);
    let deadline = Duration::from_secs(30);

    let session = provider
        .open_session(&SessionSpec {
            language: Language::Python,
            lifetime: Duration::from_secs(300),
        })
        .await
        .expect("a session opens");
    assert_eq!(cluster.live_claims(), 1, "one claim held for the session");

    let set = session
        .run_cell("default", "x = 41\nprint('set')", deadline, None)
        .await
        .unwrap();
    let got = session
        .run_cell("default", "x + 1", deadline, None)
        .await
        .unwrap();
    assert_eq!(set.status, ExecStatus::Success, "{set:?}");
    assert_eq!(set.text(false), "set\n");
    assert_eq!(got.main_text(), Some("42"), "{got:?}");
    assert_eq!(got.execution_count, 2);

    let runaway = session
        .run_cell(
            "default",
            "while True:\n    x += 1",
            Duration::from_secs(2),
            None,
        )
        .await
        .unwrap();
    assert_eq!(runaway.status, ExecStatus::Timeout, "{runaway:?}");
    let after = session
        .run_cell("default", "x > 41", deadline, None)
        .await
        .unwrap();
    assert_eq!(after.main_text(), Some("True"), "{after:?}");
    let failed = session
        .run_cell("default", "1 / 0", deadline, None)
        .await
        .unwrap();
    assert_eq!(failed.status, ExecStatus::ProgramError, "{failed:?}");

    // Files in the session's home (the runtime's folder in the pod, /home/user), and commands beside them.
    let written = session
        .write_file("notes.txt", b"hi\n")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(written.path, "/home/user/notes.txt");
    let read = session.read_file("notes.txt").await.unwrap().unwrap();
    assert_eq!(read, b"hi\n");
    // An absolute path under /home/user, as E2B's SDK sends them, is the same folder.
    let absolute = session
        .write_file("/home/user/data.csv", b"a,b\n1,2\n")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(absolute.path, "/home/user/data.csv");
    let seen = session
        .run_cell("default", "open('data.csv').read()", deadline, None)
        .await
        .unwrap();
    assert_eq!(seen.main_text(), Some("'a,b\\n1,2\\n'"), "{seen:?}");
    let command = CommandSpec {
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            "python3 -c \"print(open('notes.txt').read(), end='')\"; exit 2".into(),
        ],
        cwd: None,
        env: Default::default(),
        timeout_secs: None,
    };
    let done = session.command(&command, deadline).await.unwrap();
    assert_eq!(
        (done.exit_code, done.stdout.as_slice()),
        (2, &b"hi\n"[..]),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    // More output than one answer of the session host carries (4 MiB) comes whole.
    let big = session
        .run_cell("default", "print('z' * (6 << 20))", deadline, None)
        .await
        .unwrap();
    assert_eq!(big.status, ExecStatus::Success);
    assert_eq!(big.text(false).len(), (6 << 20) + 1);

    session.close().await;
    wait_until("the session's claim and pod to be deleted", || async {
        cluster.live_claims() == 0 && containers.live() == 0
    })
    .await;

    // A session past its lifetime ends, and its claim goes with it.
    let short = provider
        .open_session(&SessionSpec {
            language: Language::Javascript,
            lifetime: Duration::from_secs(3),
        })
        .await
        .expect("a JavaScript session opens");
    let n = short
        .run_cell("default", "var n = 41; n + 1", deadline, None)
        .await
        .unwrap();
    assert_eq!(n.main_text(), Some("42"), "{n:?}");
    wait_until("the short session to end at its lifetime", || async {
        !short.alive() && cluster.live_claims() == 0 && containers.live() == 0
    })
    .await;
    provider.shutdown().await;
}
