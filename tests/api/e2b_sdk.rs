//! E2B's own SDK (`e2b-code-interpreter` 2.11 and `e2b` 2.63 from PyPI, unmodified) against a
//! console on the local provider: `tests/clients/e2b_sdk.py` creates sandboxes, runs cells
//! with state kept, draws a matplotlib figure, writes and reads files, runs commands, times a
//! cell out, lists, kills, and tries a wrong key.

use std::process::Command;

use crate::{helpers::spawn_app_with, pyclients};

const STEPS: [&str; 13] = [
    "create",
    "state kept",
    "output and errors",
    "matplotlib png",
    "files",
    "commands",
    "timeout then the next cell",
    "isolated",
    "list",
    "info and timeout",
    "kill",
    "wrong key",
    "",
];

#[tokio::test]
async fn the_e2b_sdk_runs_its_sandbox_calls_against_the_console() {
    // The default package environment (matplotlib among its packages), from the store the
    // suite shares: built once per machine.
    let app = spawn_app_with(|config| {
        config.environment_store = Some(crate::environments::shared_store())
    })
    .await;
    app.login().await;
    app.call_ok("build_environment", &[("name", "default")])
        .await;
    let built = crate::environments::built(&app, "default").await;
    assert_eq!(
        built["environment"]["ready"]["status"], "ready",
        "{}",
        built["log"]["log"]
    );
    // A save builds the provider again, now with the environment mounted.
    let admin = app.api_key("ops", &["admin"]).await;
    let saved = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &serde_json::json!({"provider_type": "local", "config": {"timeout_secs": 30}}),
        )
        .await;
    assert_eq!(saved.status(), 200);
    let key = app.api_key("e2b", &["execute"]).await;
    let base = app.address.clone();

    let output = tokio::task::spawn_blocking(move || {
        Command::new(pyclients::python())
            .arg(pyclients::script("e2b_sdk.py"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", std::env::temp_dir())
            .env("E2B_API_KEY", key)
            .env("E2B_API_URL", format!("{base}/e2b"))
            .env("E2B_SANDBOX_URL", format!("{base}/e2b/sandbox"))
            .output()
            .unwrap()
    })
    .await
    .unwrap();

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for step in STEPS.iter().filter(|s| !s.is_empty()) {
        assert!(
            stdout.lines().any(|line| line == format!("ok {step}")),
            "step {step:?} did not pass:\n{stdout}\n{stderr}"
        );
    }
    // Every sandbox the script made is gone.
    let left = crate::wait::descendants_with("sandbox-console session driver");
    assert_eq!(left, 0, "sessions left running");
}
