//! Safe activation: a save that would put a provider failing its health check in charge of
//! every run saves nothing until the admin says so; every saved version is kept, and Restore
//! brings an old one back (audited). On a real SQLite file, with the real local provider.

use serde_json::Value;

use crate::helpers::{spawn_app, TestApp};

/// A save as the settings form posts it, with extra form fields (`make_active`, `anyway`).
async fn save(
    app: &TestApp,
    kind: &str,
    expected_version: &str,
    values: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> Value {
    let mut form = vec![
        ("kind".to_owned(), kind.to_owned()),
        ("expected_version".to_owned(), expected_version.to_owned()),
    ];
    form.extend(
        values
            .iter()
            .map(|(key, value)| (format!("values[{key}]"), (*value).to_owned())),
    );
    form.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    app.call_ok("save_sandbox_settings", &form).await
}

async fn card(app: &TestApp, kind: &str) -> Value {
    let settings = app.call_ok("sandbox_settings", &[]).await;
    settings["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["info"]["kind"] == kind)
        .cloned()
        .unwrap()
}

async fn active_kind(app: &TestApp) -> Value {
    app.call_ok("sandbox_settings", &[]).await["active_kind"].clone()
}

async fn versions(app: &TestApp, kind: &str) -> Vec<Value> {
    app.call_ok("sandbox_setting_versions", &[("kind", kind)])
        .await
        .as_array()
        .unwrap()
        .clone()
}

async fn trial(app: &TestApp, kind: &str) -> Value {
    app.call_ok(
        "run_trial",
        &[
            ("kind", kind),
            ("language", "python"),
            ("code", "def main():\n    return 42\n"),
        ],
    )
    .await
}

async fn audit_actions(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("select action from settings_audit order by id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_save_that_breaks_the_active_provider_goes_live_only_when_asked_and_restore_brings_the_old_version_back(
) {
    let app = spawn_app().await;
    app.login().await;
    assert_eq!(trial(&app, "local").await["result"]["value"], 42);

    // /bin/false is an executable, so the settings are valid; the probe cannot run with it.
    let refused = save(&app, "local", "1", &[("python_path", "/bin/false")], &[]).await;

    let unhealthy = &refused["Unhealthy"];
    assert_eq!(unhealthy["active"], true, "{refused}");
    assert_eq!(unhealthy["health"]["healthy"], false, "{refused}");
    assert!(!unhealthy["health"]["message"].as_str().unwrap().is_empty());
    let local = card(&app, "local").await;
    assert_eq!(local["version"], 1, "nothing was saved");
    assert_eq!(local["values"]["python_path"], "/usr/bin/python3.11");
    assert_eq!(
        trial(&app, "local").await["result"]["value"],
        42,
        "runs go on"
    );

    // Second step, first choice: keep the values as a version without applying them.
    let kept = save(
        &app,
        "local",
        "1",
        &[("python_path", "/bin/false")],
        &[("anyway", "inactive")],
    )
    .await;
    let kept_id = kept["Kept"]["id"].as_i64().expect("kept as a version");
    assert_eq!(card(&app, "local").await["version"], 1, "not applied");
    assert_eq!(trial(&app, "local").await["result"]["value"], 42);
    let listed = versions(&app, "local").await;
    assert_eq!(listed[0]["id"], kept_id);
    assert_eq!(listed[0]["action"], "kept");
    assert_eq!(listed[0]["version"], Value::Null);
    assert_eq!(listed[0]["current"], false);
    assert_eq!(
        listed[0]["changes"],
        serde_json::json!([{
            "key": "python_path", "label": "Python interpreter",
            "before": "/usr/bin/python3.11", "after": "/bin/false", "secret": false
        }])
    );
    assert_eq!(listed[1]["version"], 1);
    assert_eq!(listed[1]["current"], true);
    assert_eq!(listed[1]["first"], true);

    // Second choice: apply anyway. Runs now fail, as the health check said.
    let applied = save(
        &app,
        "local",
        "1",
        &[("python_path", "/bin/false")],
        &[("anyway", "activate")],
    )
    .await;
    assert_eq!(applied["Saved"]["version"], 2, "{applied}");
    assert_eq!(applied["Saved"]["active"], true);
    let broken = trial(&app, "local").await;
    assert_ne!(broken["status"], "success", "{broken}");

    // Restore version 1: it becomes version 3, and runs work again.
    let first = versions(&app, "local")
        .await
        .into_iter()
        .find(|v| v["version"] == 1)
        .unwrap();
    let restored = app
        .call_ok(
            "restore_sandbox_settings",
            &[
                ("kind", "local"),
                ("id", &first["id"].to_string()),
                ("expected_version", "2"),
            ],
        )
        .await;
    assert_eq!(restored["Saved"]["version"], 3, "{restored}");
    assert_eq!(restored["Saved"]["restored_from"], first["id"]);
    assert_eq!(trial(&app, "local").await["result"]["value"], 42);
    let local = card(&app, "local").await;
    assert_eq!(local["values"]["python_path"], "/usr/bin/python3.11");
    let listed = versions(&app, "local").await;
    assert_eq!(
        (
            &listed[0]["action"],
            &listed[0]["version"],
            listed[0]["current"].as_bool()
        ),
        (&Value::from("restore"), &Value::from(3), Some(true))
    );
    assert_eq!(listed[0]["restored_from"], first["id"]);
    let actions = audit_actions(&app).await;
    assert_eq!(
        actions
            .iter()
            .filter(|a| ["keep", "save", "restore"].contains(&a.as_str()))
            .collect::<Vec<_>>(),
        ["keep", "save", "restore"],
        "{actions:?}"
    );

    // A stale restore (the page showed version 2) loses to the save in between.
    let stale = app
        .call_ok(
            "restore_sandbox_settings",
            &[
                ("kind", "local"),
                ("id", &kept_id.to_string()),
                ("expected_version", "2"),
            ],
        )
        .await;
    assert!(stale["Conflict"]["message"].is_string(), "{stale}");
    // Restoring the kept version of the active provider meets the health check too.
    let gated = app
        .call_ok(
            "restore_sandbox_settings",
            &[
                ("kind", "local"),
                ("id", &kept_id.to_string()),
                ("expected_version", "3"),
            ],
        )
        .await;
    assert_eq!(gated["Unhealthy"]["active"], true, "{gated}");
    assert_eq!(card(&app, "local").await["version"], 3);
    // Another provider's version, or none, is refused by name.
    let unknown = app
        .call_ok(
            "restore_sandbox_settings",
            &[("kind", "self_managed"), ("id", &kept_id.to_string())],
        )
        .await;
    assert!(
        unknown["Invalid"]["errors"]["_form"]
            .as_str()
            .unwrap()
            .contains("has no saved version"),
        "{unknown}"
    );
}

#[tokio::test]
async fn making_a_provider_active_that_fails_its_health_check_needs_an_explicit_second_step() {
    let app = spawn_app().await;
    app.login().await;
    // Nothing listens on port 9.
    let values = [("endpoint", "http://127.0.0.1:9")];

    let refused = save(&app, "self_managed", "", &values, &[("make_active", "on")]).await;

    assert_eq!(refused["Unhealthy"]["active"], false, "{refused}");
    assert_eq!(refused["Unhealthy"]["make_active"], true, "{refused}");
    assert_eq!(card(&app, "self_managed").await["version"], Value::Null);
    assert_eq!(active_kind(&app).await, "local");

    let inactive = save(
        &app,
        "self_managed",
        "",
        &values,
        &[("make_active", "on"), ("anyway", "inactive")],
    )
    .await;
    assert_eq!(inactive["Saved"]["version"], 1, "{inactive}");
    assert_eq!(inactive["Saved"]["active"], false);
    assert_eq!(active_kind(&app).await, "local");

    // A save that does not go live needs no health check.
    let plain = save(
        &app,
        "self_managed",
        "1",
        &[("endpoint", "http://127.0.0.1:10")],
        &[],
    )
    .await;
    assert_eq!(plain["Saved"]["version"], 2, "{plain}");

    let activated = save(
        &app,
        "self_managed",
        "2",
        &values,
        &[("anyway", "activate")],
    )
    .await;
    assert_eq!(activated["Saved"]["active"], true, "{activated}");
    assert_eq!(active_kind(&app).await, "self_managed");

    let bad = app
        .call(
            "save_sandbox_settings",
            &[("kind", "local"), ("anyway", "maybe")],
        )
        .await;
    assert_eq!(bad.status().as_u16(), 400);
}

#[tokio::test]
async fn a_trial_runs_on_the_selected_provider_from_its_saved_settings() {
    let app = spawn_app().await;
    app.login().await;
    save(
        &app,
        "self_managed",
        "",
        &[("endpoint", "http://127.0.0.1:9")],
        &[],
    )
    .await;

    let response = app
        .call(
            "run_trial",
            &[
                ("kind", "self_managed"),
                ("language", "python"),
                ("code", "def main():\n    return 1\n"),
            ],
        )
        .await;

    // It went to the saved (unreachable) executor, not to the active local provider.
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_ne!(status, 200, "{body}");
    assert!(body.contains("127.0.0.1:9"), "{body}");
    let provider: String =
        sqlx::query_scalar("select provider from execution order by id desc limit 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(provider, "self_managed");
    assert_eq!(active_kind(&app).await, "local");
    // The active provider runs as before, named or not.
    assert_eq!(trial(&app, "local").await["result"]["value"], 42);
    let run = trial(&app, "").await;
    assert_eq!(run["result"]["value"], 42, "{run}");
}
