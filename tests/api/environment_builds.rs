//! An environment build is untrusted code: what a package can do during one (its `setup.py`,
//! its `postinstall`, options smuggled in a spec, `${VAR}` in a requirement), checked against
//! an index of the test's own that serves such packages, and the queue builds wait in.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{
    environments::built,
    helpers::{spawn_app_with, TestApp},
    package_index::PackageIndex,
};

async fn save(app: &TestApp, name: &str, python: &str, npm: &str, sdists: bool) -> (u16, Value) {
    let mut form = vec![
        ("name", name),
        ("python_requirements", python),
        ("npm_packages", npm),
    ];
    if sdists {
        form.push(("allow_sdists", "on"));
    }
    let response = app.call("save_environment", &form).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn console_on(index: &PackageIndex, max_builds: usize) -> TestApp {
    let (pip, npm) = (index.pip_url(), index.npm_url());
    let app = spawn_app_with(move |config| {
        config.package_index = Some(pip);
        config.npm_registry = Some(npm);
        config.max_concurrent_builds = max_builds;
    })
    .await;
    app.login().await;
    app
}

/// The JSON line `setup.py` printed into the build log.
fn setup_report(log: &str) -> Value {
    let line = log
        .lines()
        .find_map(|l| l.split_once("EVILPKG-REPORT ").map(|(_, json)| json))
        .unwrap_or_else(|| panic!("setup.py ran and reported: {log}"));
    serde_json::from_str(line.trim()).unwrap()
}

#[tokio::test]
async fn a_source_distribution_runs_as_nobody_with_nothing_of_the_consoles_and_no_way_out() {
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("SDIST_RAN");
    let index = PackageIndex::start(&marker).await;
    let app = console_on(&index, 2).await;

    let (status, body) = save(&app, "sdist", "evilpkg>=0", "", true).await;
    assert_eq!(status, 200, "{body}");
    let page = built(&app, "sdist").await;

    let log = page["log"]["log"].as_str().unwrap_or_default();
    let report = setup_report(log);
    assert_eq!(report["uid"], 65534, "setup.py ran as nobody: {report}");
    assert_eq!(report["euid"], 65534, "{report}");
    let env: Vec<&str> = report["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Built from nothing: the console's own variables (this test process's: CARGO_*,
    // PIP_CERT, RUST_BACKTRACE, …) never reach a build. pip passes its own two on.
    assert_eq!(
        env,
        [
            "HOME",
            "LANG",
            "PATH",
            "PIP_BUILD_TRACKER",
            "PIP_NO_INPUT",
            "TMPDIR"
        ],
        "the variables setup.py saw"
    );
    assert_ne!(report["host_write"], "wrote", "{report}");
    assert!(!marker.exists(), "setup.py wrote on the host");
    assert_eq!(
        report["other_name"], "gaierror",
        "only the index resolves: {report}"
    );
    assert_eq!(report["shadow"], "PermissionError", "{report}");
    assert_eq!(
        page["environment"]["latest"]["status"], "failed",
        "setup.py stopped its own build: {page}"
    );
}

#[tokio::test]
async fn options_and_variables_smuggled_into_a_spec_are_refused_and_npm_scripts_never_run() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console_on(&index, 2).await;

    // The 2026-12-06 probe's spellings: each is refused before anything is stored.
    for (python, npm) in [
        ("evilpkg>=0 --no-binary=:all:", ""),
        ("pkg>=1 -r /etc/passwd", ""),
        ("pkg>=1 --config-settings=x=y", ""),
        ("iniconfig==${SANDBOX_CONSOLE_SECRET_KEY}", ""),
        ("", "evil-postinstall --no-ignore-scripts"),
        ("", "-g"),
        ("", "--foreground-scripts"),
        ("", "--registry"),
    ] {
        let (status, body) = save(&app, "smuggled", python, npm, false).await;
        assert_eq!(status, 400, "{python:?} {npm:?} was accepted: {body}");
    }
    let listed = app.call_ok("list_environments", &[]).await;
    assert!(
        !listed.to_string().contains("smuggled"),
        "a refused spec is not stored: {listed}"
    );

    // A package with a postinstall, and a wheel, from an index given by address.
    let (status, body) = save(&app, "scripts", "tinypkg==1.0", "evil-postinstall", false).await;
    assert_eq!(status, 200, "{body}");
    let page = built(&app, "scripts").await;
    let env = &page["environment"];
    let log = page["log"]["log"].as_str().unwrap_or_default();
    assert_eq!(env["ready"]["status"], "ready", "{log}");
    assert!(
        log.contains("npm install --ignore-scripts -- evil-postinstall"),
        "{log}"
    );
    let lock = env["ready"]["lock"].to_string();
    assert!(
        lock.contains("\"tinypkg\"") && lock.contains("\"evil-postinstall\""),
        "{lock}"
    );
    let store = app.data_dir.path().join("environments");
    let ran = walk(&store)
        .into_iter()
        .find(|path| path.ends_with("POSTINSTALL_RAN"));
    assert_eq!(ran, None, "npm ran the package's postinstall");
    let asked = index.requests();
    assert!(
        asked
            .iter()
            .any(|p| p == "/files/tinypkg-1.0-py3-none-any.whl")
            && asked
                .iter()
                .any(|p| p == "/npm/-/evil-postinstall-1.0.0.tgz"),
        "both came from the configured index: {asked:?}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[tokio::test]
async fn builds_past_the_cap_wait_in_a_queue_that_says_so() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console_on(&index, 1).await;
    index.hold("/simple/tinypkg");

    let (first, _) = save(&app, "first", "tinypkg", "", false).await;
    let (second, _) = save(&app, "second", "tinypkg==1.0", "", false).await;
    assert_eq!((first, second), (200, 200));

    // The first build is in pip (it asked the index); the second waits for its slot.
    let started = Instant::now();
    while !index
        .requests()
        .iter()
        .any(|p| p.starts_with("/simple/tinypkg"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the first build reached the index"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stage = loop {
        let page = app.call_ok("get_environment", &[("name", "second")]).await;
        let stage = page["environment"]["latest"]["stage"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if stage.starts_with("queued: ") {
            break stage;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the second build says it waits: {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(stage, "queued: next, once a running build ends");
    let asked = index.requests();
    assert_eq!(
        asked
            .iter()
            .filter(|p| p.starts_with("/simple/tinypkg"))
            .count(),
        1,
        "one build at a time reaches the index: {asked:?}"
    );

    index.release();
    for name in ["first", "second"] {
        let page = built(&app, name).await;
        assert_eq!(page["environment"]["ready"]["status"], "ready", "{page}");
    }
}
