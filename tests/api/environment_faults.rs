//! Environment builds under the 2026-12-06 probe's faults (R2-3, R2-5, R2-7, F-I1): a
//! command beside a running console, a console killed in the middle of a build, a full
//! store, and verification on a console that never set docker up.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    environments::built,
    helpers::{console_command, listening_address, spawn_app_with, TestApp, ADMIN, PASSWORD},
    package_index::PackageIndex,
};

async fn save(app: &TestApp, name: &str, python: &str) {
    let response = app
        .call(
            "save_environment",
            &[("name", name), ("python_requirements", python)],
        )
        .await;
    assert_eq!(
        response.status().as_u16(),
        200,
        "{}",
        response.text().await.unwrap()
    );
}

/// Waits until the index has been asked for `prefix`: the build is inside pip.
async fn asked(index: &PackageIndex, prefix: &str) {
    let started = Instant::now();
    while !index.requests().iter().any(|p| p.starts_with(prefix)) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{prefix} was asked for"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn latest(app: &TestApp, name: &str) -> Value {
    app.call_ok("get_environment", &[("name", name)]).await["environment"]["latest"].clone()
}

fn working_folders(store: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(store)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".building-"))
        .collect()
}

#[tokio::test]
async fn a_command_beside_a_running_console_leaves_its_build_alone() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let pip = index.pip_url();
    let app = spawn_app_with(move |config| config.package_index = Some(pip)).await;
    app.login().await;
    index.hold("/simple/tinypkg");
    save(&app, "busy", "tinypkg").await;
    asked(&index, "/simple/tinypkg").await;

    for command in [
        &["env", "list"][..],
        &["env", "show", "busy"],
        &["providers"],
    ] {
        let output = console_command(app.data_dir.path())
            .args(command)
            .output()
            .unwrap();
        assert!(output.status.success(), "{command:?}: {output:?}");
    }

    let during = latest(&app, "busy").await;
    assert_eq!(during["status"], "building", "{during}");
    index.release();
    let page = built(&app, "busy").await;
    assert_eq!(page["environment"]["ready"]["status"], "ready", "{page}");
}

#[tokio::test]
async fn a_build_killed_with_its_console_fails_at_once_and_leaves_no_folder() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let data_dir = tempfile::tempdir().unwrap();
    let mut console = console_command(data_dir.path());
    console
        .args([
            "--listen",
            "127.0.0.1:0",
            "--package-index",
            &index.pip_url(),
        ])
        .env("ADMIN_USERNAME", ADMIN)
        .env("ADMIN_PASSWORD", PASSWORD)
        .env("SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT", "false")
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = console.spawn().unwrap();
    let address = listening_address(&mut child);
    let pool = crate::helpers::open_database(data_dir.path()).await;
    let remote = TestApp::remote(&address, pool);
    remote.login().await;
    index.hold("/simple/tinypkg");
    save(&remote, "doomed", "tinypkg").await;
    asked(&index, "/simple/tinypkg").await;
    let store = data_dir.path().join("environments");
    assert_eq!(
        working_folders(&store).len(),
        1,
        "the build works in its folder"
    );

    child.kill().unwrap();
    child.wait().unwrap();
    index.release();
    let data = data_dir;
    let again =
        crate::helpers::spawn_app_in(data, |config| config.build_default_environment = false).await;
    again.login().await;

    let build = latest(&again, "doomed").await;
    assert_eq!(
        build["status"], "failed",
        "at once, not after a minute of silence: {build}"
    );
    assert!(
        build["stage"].as_str().unwrap().contains("interrupted"),
        "{build}"
    );
    assert_eq!(working_folders(&store), Vec::<String>::new());
}

#[tokio::test]
async fn a_full_store_says_so() {
    let disk = crate::faults::Tmpfs::mount("8m");
    let store = disk.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let (pip, at) = (index.pip_url(), store.clone());
    let app = spawn_app_with(move |config| {
        config.package_index = Some(pip);
        config.environment_store = Some(at);
    })
    .await;
    app.login().await;
    let _filler = disk.fill();

    save(&app, "full", "tinypkg").await;
    let page = built(&app, "full").await;

    let stage = page["environment"]["latest"]["stage"]
        .as_str()
        .unwrap_or_default();
    assert!(
        stage.starts_with("the environment store is full"),
        "{stage}\n{}",
        page["log"]["log"]
    );
    assert!(!stage.contains("Some("), "{stage}");
}

#[tokio::test]
async fn builds_are_verified_only_on_providers_set_up_here() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let pip = index.pip_url();
    let app = spawn_app_with(move |config| config.package_index = Some(pip)).await;
    app.login().await;

    save(&app, "checked", "tinypkg").await;
    let page = built(&app, "checked").await;

    let setups: Vec<String> = page["environment"]["ready"]["verification"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["provider"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(setups, ["local"], "docker was never set up here");
}
