//! "An environment with one extra package replaced the default" (2026-12-06 UX review, P2):
//! an environment is based on another (the default by default, on the form), a change that
//! takes packages away from the providers using one says which, and the settings' Environment
//! and Container runtime fields offer what exists here.

use serde_json::Value;

use crate::{
    environments::built,
    helpers::{location, spawn_app_with, TestApp},
    package_index::PackageIndex,
};

/// A console whose environment builds use the test's own package index, signed in.
pub async fn console(index: &PackageIndex) -> TestApp {
    let (pip, npm) = (index.pip_url(), index.npm_url());
    let app = spawn_app_with(move |config| {
        config.package_index = Some(pip);
        config.npm_registry = Some(npm);
    })
    .await;
    app.login().await;
    app
}

async fn save(app: &TestApp, form: &[(&str, &str)]) -> Value {
    let response = app.call("save_environment", form).await;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(status, 200, "{form:?}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// Makes the local provider run in environment `name`, active.
pub async fn local_environment(app: &TestApp, name: &str) -> Value {
    let card = app.call_ok("sandbox_settings", &[]).await["providers"][0].clone();
    let version = card["version"].as_i64().unwrap_or(0).to_string();
    app.call_ok(
        "save_sandbox_settings",
        &[
            ("kind", "local"),
            ("expected_version", &version),
            ("values[environment]", name),
            ("make_active", "on"),
        ],
    )
    .await
}

#[tokio::test]
async fn an_environment_based_on_another_installs_its_packages_too() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console(&index).await;
    save(
        &app,
        &[("name", "science"), ("python_requirements", "tinypkg")],
    )
    .await;

    save(
        &app,
        &[
            ("name", "reports"),
            ("base", "science"),
            ("npm_packages", "evil-postinstall"),
        ],
    )
    .await;
    let page = built(&app, "reports").await;

    let env = &page["environment"];
    assert_eq!(env["base"], "science");
    let lock = env["ready"]["lock"].to_string();
    assert!(
        lock.contains("\"tinypkg\"") && lock.contains("\"evil-postinstall\""),
        "the base's packages and its own: {lock}"
    );
    // A base in use is not deleted from under the environments based on it.
    let refused = app.call("delete_environment", &[("name", "science")]).await;
    assert_eq!(refused.status().as_u16(), 400);
    assert!(refused
        .text()
        .await
        .unwrap()
        .contains("environment reports"));
    // Nor can an environment be based on itself, or on one based on it.
    let circle = app
        .call(
            "save_environment",
            &[
                ("name", "science"),
                ("version", "1"),
                ("base", "reports"),
                ("python_requirements", "tinypkg"),
            ],
        )
        .await;
    assert_eq!(circle.status().as_u16(), 400);
    // The create form offers the default as the base.
    let form = app.text_of("/admin/environments").await;
    assert!(form.contains("name=\"base\""), "{form}");
}

#[tokio::test]
async fn saves_that_take_packages_from_a_provider_say_which() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console(&index).await;
    save(
        &app,
        &[("name", "science"), ("python_requirements", "tinypkg")],
    )
    .await;
    save(
        &app,
        &[("name", "plain"), ("npm_packages", "evil-postinstall")],
    )
    .await;
    for name in ["science", "plain"] {
        built(&app, name).await;
    }
    // The review's case: from the default to an environment without its packages.
    let saved = local_environment(&app, "science").await;
    let warning = saved["Saved"]["warning"].as_str().unwrap_or_default();
    assert!(
        warning.starts_with("Its runs no longer have axios, matplotlib, numpy, pandas, requests")
            && warning.contains("Base 'science' on it"),
        "{saved}"
    );

    // The provider moves to an environment without tinypkg: the save says so.
    let saved = local_environment(&app, "plain").await;
    let warning = saved["Saved"]["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("no longer have tinypkg") && warning.contains("'science' has them"),
        "{saved}"
    );

    // An environment in use whose change drops a package says so too.
    local_environment(&app, "science").await;
    let posted = app
        .client
        .post(app.url("/rpc/save_environment"))
        .header("accept", "text/html")
        .form(&[
            ("name", "science"),
            ("version", "1"),
            ("npm_packages", "evil-postinstall"),
        ])
        .send()
        .await
        .unwrap();
    let page = app.text_of(&location(&posted)).await;
    assert!(
        page.contains("It no longer has tinypkg, which local had from it."),
        "{page}"
    );
}

#[tokio::test]
async fn environment_and_runtime_fields_offer_what_exists() {
    let outside = tempfile::tempdir().unwrap();
    let index = PackageIndex::start(&outside.path().join("marker")).await;
    let app = console(&index).await;
    save(
        &app,
        &[("name", "science"), ("python_requirements", "tinypkg")],
    )
    .await;

    let cards = app.call_ok("sandbox_settings", &[]).await["providers"].clone();
    let field = |kind: &str, key: &str| -> Value {
        let card = cards
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["info"]["kind"] == kind)
            .unwrap();
        card["schema"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["key"] == key)
            .unwrap()["kind"]
            .clone()
    };
    let values = |kind: Value| -> Vec<String> {
        kind["options"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|o| o["value"].as_str().unwrap().to_owned())
            .collect()
    };

    let environment = field("local", "environment");
    assert_eq!(environment["type"], "select", "{environment}");
    assert_eq!(values(environment), ["", "default", "science", "none"]);
    let runtime = field("docker", "runtime");
    assert_eq!(runtime["type"], "select", "{runtime}");
    let runtimes = values(runtime.clone());
    assert!(
        runtimes.contains(&"runc".to_owned()) && runtimes.contains(&"runsc".to_owned()),
        "what dockerd has registered: {runtime}"
    );
    assert!(runtime.to_string().contains("gVisor"), "{runtime}");
}
