//! Sessions on the docker provider, under runc and gVisor: state kept between cells, a
//! runaway cell interrupted with the session answering again, files and commands in the
//! container, and the container gone after close.

use std::time::Duration;

use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::{
        session::{CommandSpec, SessionSpec},
        SandboxProvider,
    },
};
use serde_json::json;

use crate::{
    docker_provider::{our_containers, provider, RUNTIMES},
    wait::wait_until,
};

#[tokio::test]
async fn docker_sessions_keep_state_interrupt_and_leave_no_container() {
    for runtime in RUNTIMES {
        let provider = provider(runtime, json!({ "pool_size": 1 }));
        let before = our_containers().len();
        let session = provider
            .open_session(&SessionSpec {
                language: Language::Python,
                lifetime: Duration::from_secs(120),
            })
            .await
            .unwrap_or_else(|e| panic!("{runtime}: a session opens: {e}"));
        let deadline = Duration::from_secs(30);

        let set = session
            .run_cell("default", "x = 41", deadline, None)
            .await
            .unwrap();
        let got = session
            .run_cell("default", "x + 1", deadline, None)
            .await
            .unwrap();
        assert_eq!(set.status, ExecStatus::Success, "{runtime}: {set:?}");
        assert_eq!(got.main_text(), Some("42"), "{runtime}: {got:?}");

        let runaway = session
            .run_cell(
                "default",
                "while True:\n    x += 1",
                Duration::from_secs(2),
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            runaway.status,
            ExecStatus::Timeout,
            "{runtime}: {runaway:?}"
        );
        let after = session
            .run_cell("default", "x > 41", deadline, None)
            .await
            .unwrap();
        assert_eq!(after.main_text(), Some("True"), "{runtime}: {after:?}");

        let written = session
            .write_file("notes.txt", b"hi\n")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(written.path, "/home/user/notes.txt");
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
            "{runtime}: {}",
            String::from_utf8_lossy(&done.stderr)
        );

        session.close().await;
        wait_until(
            &format!("the {runtime} session's container to be removed"),
            || async { our_containers().len() <= before },
        )
        .await;
        provider.shutdown().await;
    }
}

#[tokio::test]
async fn docker_javascript_sessions_keep_state() {
    let provider = provider("runc", json!({ "pool_size": 1 }));
    let session = provider
        .open_session(&SessionSpec {
            language: Language::Javascript,
            lifetime: Duration::from_secs(120),
        })
        .await
        .expect("a JavaScript session opens");
    let deadline = Duration::from_secs(30);
    session
        .run_cell("default", "var n = 41;", deadline, None)
        .await
        .unwrap();
    let got = session
        .run_cell("default", "n + 1", deadline, None)
        .await
        .unwrap();
    assert_eq!(got.main_text(), Some("42"), "{got:?}");
    let runaway = session
        .run_cell(
            "default",
            "while (true) { n++; }",
            Duration::from_secs(2),
            None,
        )
        .await
        .unwrap();
    assert_eq!(runaway.status, ExecStatus::Timeout, "{runaway:?}");
    let after = session
        .run_cell("default", "n > 42", deadline, None)
        .await
        .unwrap();
    assert_eq!(after.main_text(), Some("true"), "{after:?}");
    session.close().await;
    provider.shutdown().await;
}
