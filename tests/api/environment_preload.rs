//! An environment's preloaded modules (issue 30): a setting of the environment, checked on
//! save, that reaches the local provider's sandboxes started ahead, and a change to it
//! replaces them.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{
    environment_bases::{console, local_environment},
    environments::built,
    helpers::TestApp,
    package_index::PackageIndex,
    wait::PATIENCE,
};

/// What the program saw already imported before it ran, from a run in a sandbox started
/// ahead: a cold run sees neither module (runs until one finds a sandbox ready: the pool
/// refills after each).
async fn preloaded_in_a_run(app: &TestApp, key: &str) -> Value {
    let code = "import sys\nseen = [m for m in ('tinypkg', 'decimal') if m in sys.modules]\ndef main():\n    return seen\n";
    let started = Instant::now();
    loop {
        let response = app
            .post_json(
                "/api/v1/execute",
                key,
                &json!({ "language": "python", "code": code }),
            )
            .await;
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["status"], "success", "{answer}");
        if answer["result"]["value"] != json!([]) {
            return answer;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no run found a sandbox started ahead: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_preload_that_is_not_module_names_is_refused_with_the_reason() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console(&index).await;

    let response = app
        .call(
            "save_environment",
            &[
                ("name", "pre"),
                ("python_requirements", "tinypkg"),
                ("preload", "tinypkg; import os"),
            ],
        )
        .await;

    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("preload"), "{body}");
    assert!(body.contains("is not a module name"), "{body}");
}

#[tokio::test]
async fn the_preload_setting_reaches_sandboxes_started_ahead_and_a_change_replaces_them() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console(&index).await;
    app.call_ok(
        "save_environment",
        &[
            ("name", "pre"),
            ("python_requirements", "tinypkg"),
            ("preload", "tinypkg, decimal"),
        ],
    )
    .await;
    let page = built(&app, "pre").await;
    assert_eq!(page["environment"]["preload"], "tinypkg decimal", "{page}");
    local_environment(&app, "pre").await;
    let key = app.api_key("preload", &["execute"]).await;

    let before = preloaded_in_a_run(&app, &key).await;
    let version = page["environment"]["version"].as_i64().unwrap().to_string();
    app.call_ok(
        "save_environment",
        &[
            ("name", "pre"),
            ("python_requirements", "tinypkg"),
            ("preload", "decimal"),
            ("version", &version),
        ],
    )
    .await;
    built(&app, "pre").await;
    let started = Instant::now();
    let after = loop {
        let after = preloaded_in_a_run(&app, &key).await;
        if after["result"]["value"] == json!(["decimal"]) {
            break after;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the change did not reach the sandboxes: {after}"
        );
    };

    assert_eq!(
        before["result"]["value"],
        json!(["tinypkg", "decimal"]),
        "{before}"
    );
    assert_eq!(after["result"]["value"], json!(["decimal"]), "{after}");
}
