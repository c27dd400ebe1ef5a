//! Sessions on the local provider, on this host: state kept, deadlines, files, commands, and
//! nothing left behind.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::{
    model::execution::ExecStatus,
    sandbox::session::{CellEvent, CommandSpec, FileError, Session, SessionSpec},
};

async fn open(overrides: Value) -> Arc<dyn Session> {
    open_in(Language::Python, overrides).await
}

async fn open_in(language: Language, overrides: Value) -> Arc<dyn Session> {
    let provider = build(overrides.as_object().unwrap()).expect("the local provider builds");
    provider
        .open_session(&SessionSpec {
            language,
            lifetime: Duration::from_secs(120),
        })
        .await
        .expect("a session opens")
}

/// Processes below this test process whose command line holds `token`.
pub(super) fn descendants_with(token: &str) -> Vec<u32> {
    let me = std::process::id();
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(token) {
            continue;
        }
        let mut at = pid;
        while let Some(parent) = parent_of(at) {
            if parent == me {
                found.push(pid);
                break;
            }
            if parent <= 1 {
                break;
            }
            at = parent;
        }
    }
    found
}

#[tokio::test]
async fn cells_share_their_globals_and_imports() {
    let session = open(json!({})).await;
    let deadline = Duration::from_secs(20);

    let first = session
        .run_cell(
            "default",
            "import math\nx = 41\nprint('set')",
            deadline,
            None,
        )
        .await
        .unwrap();
    let second = session
        .run_cell("default", "x + 1", deadline, None)
        .await
        .unwrap();
    let third = session
        .run_cell("default", "math.floor(2.5)", deadline, None)
        .await
        .unwrap();

    assert_eq!(first.status, ExecStatus::Success, "{first:?}");
    assert_eq!(first.text(false), "set\n");
    assert_eq!(first.main_text(), None);
    assert_eq!(second.main_text(), Some("42"), "{second:?}");
    assert_eq!(third.main_text(), Some("2"));
    assert_eq!(
        (
            first.execution_count,
            second.execution_count,
            third.execution_count
        ),
        (1, 2, 3)
    );
    let failed = session
        .run_cell("default", "1 / 0", deadline, None)
        .await
        .unwrap();
    assert_eq!(failed.status, ExecStatus::ProgramError);
    assert!(failed.events.iter().any(|e| matches!(e,
        CellEvent::Error { name, .. } if name == "ZeroDivisionError")));
    session.close().await;
    assert!(!session.alive());
}

#[tokio::test]
async fn a_runaway_cell_is_interrupted_and_the_session_answers_again() {
    let session = open(json!({})).await;

    let runaway = session
        .run_cell(
            "default",
            "n = 0\nwhile True:\n    n += 1",
            Duration::from_secs(1),
            None,
        )
        .await
        .unwrap();
    let after = session
        .run_cell("default", "n > 0", Duration::from_secs(20), None)
        .await
        .unwrap();

    assert_eq!(runaway.status, ExecStatus::Timeout, "{runaway:?}");
    assert!(!runaway.session_ended);
    assert!(session.alive());
    assert_eq!(after.main_text(), Some("True"), "{after:?}");
    session.close().await;
}

#[tokio::test]
async fn files_and_commands_work_in_the_session_workspace() {
    let session = open(json!({})).await;
    let deadline = Duration::from_secs(20);

    let written = session
        .write_file("data/blob.bin", &[0, 1, 2, 255])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(written.path, "/home/user/data/blob.bin");
    assert_eq!(
        session.read_file("/home/user/data/blob.bin").await.unwrap(),
        Ok(vec![0, 1, 2, 255])
    );
    let read = session
        .run_cell(
            "default",
            "open('data/blob.bin', 'rb').read()",
            deadline,
            None,
        )
        .await
        .unwrap();
    assert_eq!(read.main_text(), Some("b'\\x00\\x01\\x02\\xff'"));
    session
        .run_cell(
            "default",
            "open('made.txt', 'w').write('hi')",
            deadline,
            None,
        )
        .await
        .unwrap();
    let names: Vec<String> = session
        .list(".", 1)
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    assert_eq!(names, ["data", "made.txt"]);
    assert_eq!(
        session.read_file("nope.txt").await.unwrap().map(|_| ()),
        Err(FileError::NotFound(
            "[Errno 2] No such file or directory: '/home/user/nope.txt'".into()
        ))
    );
    session.remove("made.txt").await.unwrap().unwrap();
    assert!(session.stat("made.txt").await.unwrap().is_err());

    let command = CommandSpec {
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            "cat data/blob.bin | wc -c; echo err >&2; exit 3".into(),
        ],
        cwd: None,
        env: Default::default(),
        timeout_secs: None,
    };
    let done = session.command(&command, deadline).await.unwrap();
    assert_eq!(done.exit_code, 3);
    assert_eq!(String::from_utf8_lossy(&done.stdout).trim(), "4");
    assert_eq!(done.stderr, b"err\n");
    let slow = CommandSpec {
        argv: vec!["sleep".into(), "30".into()],
        ..command
    };
    let stopped = session
        .command(&slow, Duration::from_secs(1))
        .await
        .unwrap();
    assert!(stopped.timed_out, "{stopped:?}");
    assert!(session.alive());
    session.close().await;
}

#[tokio::test]
async fn a_closed_session_leaves_no_process_behind() {
    let session = open(json!({})).await;
    let token = format!("{}", 7_000_000 + rand::random::<u32>() % 1_000_000);
    session
        .run_cell(
            "default",
            &format!("import subprocess\nchild = subprocess.Popen(['sleep', '{token}'])"),
            Duration::from_secs(20),
            None,
        )
        .await
        .unwrap();
    assert_eq!(descendants_with(&token).len(), 1, "the cell's child runs");

    session.close().await;

    // The watchdog kills the jail at once; its processes go with it.
    let gone = async {
        while !descendants_with(&token).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), gone)
        .await
        .expect("the session's processes are gone after close");
}

#[tokio::test]
async fn a_memory_bomb_in_a_cell_is_a_memory_limit() {
    let session = open(json!({"memory_mb": 128})).await;

    let bomb = session
        .run_cell(
            "default",
            "b = bytearray(1024 * 1024 * 1024)",
            Duration::from_secs(20),
            None,
        )
        .await
        .unwrap();

    // Either Python's MemoryError (the session lives on) or the OOM killer (it ends).
    if bomb.session_ended {
        assert_eq!(bomb.status, ExecStatus::MemoryLimit, "{bomb:?}");
        assert!(!session.alive());
    } else {
        assert!(
            bomb.events.iter().any(|e| matches!(e,
            CellEvent::Error { name, .. } if name == "MemoryError")),
            "{bomb:?}"
        );
    }
}

#[tokio::test]
async fn javascript_cells_share_their_globals_and_a_runaway_is_interrupted() {
    let session = open_in(Language::Javascript, json!({})).await;
    let deadline = Duration::from_secs(20);

    let first = session
        .run_cell("default", "var x = 41; console.log('set');", deadline, None)
        .await
        .unwrap();
    let second = session
        .run_cell("default", "x + 1", deadline, None)
        .await
        .unwrap();
    let runaway = session
        .run_cell(
            "default",
            "while (true) { x++; }",
            Duration::from_secs(1),
            None,
        )
        .await
        .unwrap();
    let after = session
        .run_cell("default", "x > 42", deadline, None)
        .await
        .unwrap();
    let other = session
        .run_cell("other", "typeof x", deadline, None)
        .await
        .unwrap();
    let thrown = session
        .run_cell("default", "throw new TypeError('nope')", deadline, None)
        .await
        .unwrap();

    assert_eq!(first.text(false), "set\n", "{first:?}");
    assert_eq!(second.main_text(), Some("42"), "{second:?}");
    assert_eq!(runaway.status, ExecStatus::Timeout, "{runaway:?}");
    assert!(!runaway.session_ended, "{runaway:?}");
    assert_eq!(after.main_text(), Some("true"), "{after:?}");
    assert_eq!(other.main_text(), Some("'undefined'"), "contexts are apart");
    assert!(
        thrown.events.iter().any(|e| matches!(e,
        CellEvent::Error { name, .. } if name == "TypeError")),
        "{thrown:?}"
    );
    let written = session.write_file("a.txt", b"js").await.unwrap().unwrap();
    assert_eq!(written.path, "/home/user/a.txt");
    let read = session
        .run_cell(
            "default",
            "require('fs').readFileSync('a.txt', 'utf8')",
            deadline,
            None,
        )
        .await
        .unwrap();
    assert_eq!(read.main_text(), Some("'js'"), "{read:?}");
    session.close().await;
}
