//! A save reaches every run that arrives after it (2026-12-06 findings, item 8): runs that
//! arrive while another run is rebuilding the provider from the new settings wait for that
//! rebuild instead of running on the provider before it. Two consoles on one database (the
//! suite's pass decides which), a provider whose build takes a while, and a burst of runs at
//! the moment a save on the other console is answered; then a save by the command line
//! beside a running console.

use serde_json::{json, Value};

use crate::helpers::{
    console_command, on_postgres, postgres_url_for, spawn_app_with_scripted, TestApp,
    TEST_SECRET_KEY,
};

async fn save_notes(app: &TestApp, notes: &str) {
    let card = app.call_ok("sandbox_settings", &[]).await["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["info"]["kind"] == "scripted")
        .cloned()
        .unwrap();
    let version = card["version"]
        .as_i64()
        .map(|v| v.to_string())
        .unwrap_or_default();
    let saved = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "scripted"),
                ("expected_version", &version),
                ("values[endpoint]", "http://fake"),
                ("values[token]", crate::scripted::GOOD_TOKEN),
                ("values[notes]", notes),
                ("make_active", "on"),
            ],
        )
        .await;
    assert!(saved.get("Saved").is_some(), "{saved}");
}

/// `count` runs on `app` at once; the notes each one ran with.
async fn burst(app: &TestApp, key: &str, count: usize) -> Vec<String> {
    let mut runs = Vec::new();
    for _ in 0..count {
        let (app, key) = (app.sibling(), key.to_owned());
        runs.push(tokio::spawn(async move {
            let response = app
                .post_json(
                    "/api/v1/execute",
                    &key,
                    &json!({"language": "python", "code": "SHOW_NOTES"}),
                )
                .await;
            let body: Value = response.json().await.unwrap();
            body["stdout"]
                .as_str()
                .and_then(|out| out.lines().find_map(|l| l.strip_prefix("notes: ")))
                .unwrap_or("(no run)")
                .to_owned()
        }));
    }
    let mut notes = Vec::new();
    for run in runs {
        notes.push(run.await.unwrap());
    }
    notes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_arriving_while_another_rebuilds_run_on_the_new_settings() {
    let first = spawn_app_with_scripted(|config| {
        config.secret_key = Some(TEST_SECRET_KEY.into());
    })
    .await;
    let database = if on_postgres() {
        postgres_url_for(first.data_dir.path())
    } else {
        Some(format!(
            "sqlite://{}",
            first.data_dir.path().join("sandbox-console.db").display()
        ))
    };
    let second = spawn_app_with_scripted(move |config| {
        config.database_url = database;
        config.secret_key = Some(TEST_SECRET_KEY.into());
    })
    .await;
    first.login().await;
    save_notes(&first, "v1 SLOW_BUILD").await;
    let key = first.api_key("agent", &["execute"]).await;
    assert_eq!(burst(&second, &key, 1).await, ["v1 SLOW_BUILD"]);

    for round in 2..5 {
        let notes = format!("v{round} SLOW_BUILD");
        save_notes(&first, &notes).await;
        // Every run here arrives after the save was answered: none may run on the old one.
        let ran = burst(&second, &key, 8).await;
        assert!(ran.iter().all(|n| *n == notes), "round {round}: {ran:?}");
    }

    // A save by the command line beside the two running consoles reaches both: the next
    // runs on either are the local provider's.
    let done = console_command(first.data_dir.path())
        .env("SANDBOX_CONSOLE_SECRET_KEY", TEST_SECRET_KEY)
        .args([
            "configure",
            "--provider",
            "local",
            "--set",
            "timeout_secs=9",
            "--activate",
        ])
        .output()
        .unwrap();
    assert!(done.status.success(), "{done:?}");
    for app in [&first, &second] {
        let providers = providers_of(app, &key, 4).await;
        assert!(providers.iter().all(|p| p == "local"), "{providers:?}");
    }
}

/// `count` runs on `app` at once; the provider each one ran on.
async fn providers_of(app: &TestApp, key: &str, count: usize) -> Vec<String> {
    let mut runs = Vec::new();
    for _ in 0..count {
        let (app, key) = (app.sibling(), key.to_owned());
        runs.push(tokio::spawn(async move {
            let body: Value = app
                .post_json(
                    "/api/v1/execute",
                    &key,
                    &json!({"language": "python", "code": "def main():\n    return 1\n"}),
                )
                .await
                .json()
                .await
                .unwrap();
            body["provider"].as_str().unwrap_or("(none)").to_owned()
        }));
    }
    let mut out = Vec::new();
    for run in runs {
        out.push(run.await.unwrap());
    }
    out
}
