//! The 2026-12-06 probe's smaller security findings: guessing a signed-in account's current
//! password, telling real account names from made-up ones by the lockout, a replica whose
//! key cannot open the stored secrets reporting ready, an all-zero key, and a session that
//! must still change its generated password reading `/metrics` and the API document.

use serde_json::{json, Value};

use crate::helpers::{location, spawn_app, test_config, TestApp, ADMIN, PASSWORD};

async fn change(app: &TestApp, current: &str) -> u16 {
    app.call(
        "change_password",
        &[
            ("current", current),
            ("new", "a-brand-new-pass"),
            ("confirm", "a-brand-new-pass"),
        ],
    )
    .await
    .status()
    .as_u16()
}

#[tokio::test]
async fn the_current_password_is_guessed_no_faster_than_a_sign_in() {
    let app = spawn_app().await;
    app.login().await;
    let other = app.sibling();
    other.login().await;

    let wrong: Vec<u16> = {
        let mut answers = Vec::new();
        for n in 0..6 {
            answers.push(change(&app, &format!("wrong-guess-{n}")).await);
        }
        answers
    };

    assert_eq!(
        wrong,
        [400, 400, 400, 400, 400, 429],
        "five guesses, then the limit"
    );
    // Even the right one waits now, and nothing changed: the other session still works.
    assert_eq!(change(&app, PASSWORD).await, 429);
    assert_eq!(other.call("account", &[]).await.status().as_u16(), 200);
    let fresh = app.sibling();
    assert_eq!(
        fresh.login_as(ADMIN, PASSWORD, "/").await.status().as_u16(),
        303
    );
}

#[tokio::test]
async fn existing_and_made_up_names_are_refused_alike() {
    let app = spawn_app().await;
    let mut answers = Vec::new();
    for name in [ADMIN, "nobody-by-this-name"] {
        let mut statuses = Vec::new();
        for _ in 0..6 {
            statuses.push(
                app.login_json(name, "wrong password")
                    .await
                    .status()
                    .as_u16(),
            );
        }
        answers.push(statuses);
    }

    assert_eq!(answers[0], [401, 401, 401, 401, 401, 429]);
    assert_eq!(
        answers[1], answers[0],
        "the answers do not tell the names apart"
    );
}

#[tokio::test]
async fn a_console_whose_key_cannot_open_the_stored_secrets_is_not_ready() {
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let saved = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "e2b", "config": {"api_key": "e2b_a_stored_secret"}}),
        )
        .await;
    assert_eq!(
        saved.status().as_u16(),
        200,
        "{}",
        saved.text().await.unwrap()
    );
    let ready: Value = app.get("/readyz").await.json().await.unwrap();
    assert_eq!(ready["secret_key"], "ok", "{ready}");

    // The same row as another replica with another key would have written it.
    let stored: String =
        sqlx::query_scalar("select value from system_setting where name = 'sandbox.e2b'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let mut value: Value = serde_json::from_str(&stored).unwrap();
    let other = sandbox_console::server::secrets::SecretBox::from_key(&[
        7, 1, 4, 9, 2, 8, 3, 6, 5, 0, 11, 13, 12, 15, 14, 10, 21, 23, 22, 25, 24, 20, 31, 33, 32,
        35, 34, 30, 41, 43, 42, 45,
    ]);
    value["api_key"] = json!(other.seal("e2b_a_stored_secret"));
    sqlx::query("update system_setting set value = $1 where name = 'sandbox.e2b'")
        .bind(value.to_string())
        .execute(&app.pool)
        .await
        .unwrap();

    let response = app.get("/readyz").await;
    assert_eq!(response.status().as_u16(), 503);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["secret_key"]
            .as_str()
            .unwrap()
            .contains("does not open the stored secret sandbox.e2b.api_key"),
        "{body}"
    );
}

#[tokio::test]
async fn an_all_zero_secret_key_is_refused_at_start() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&data_dir);
    config.secret_key = Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into());

    let refused = sandbox_console::server::startup::Application::build(config).await;

    let error = format!("{:#}", refused.err().expect("the console refuses to start"));
    assert!(error.contains("not a usable key"), "{error}");
}

#[tokio::test]
async fn a_session_that_must_change_its_password_reads_neither_metrics_nor_the_api_document() {
    let app = spawn_app().await;
    app.login().await;
    let generated = app
        .call_ok("add_administrator", &[("username", "second")])
        .await
        .as_str()
        .unwrap()
        .to_owned();
    let second = app.sibling();
    assert_eq!(
        location(&second.login_as("second", &generated, "/").await),
        "/"
    );

    for path in ["/metrics", "/api/v1/openapi.json", "/api/v1/providers"] {
        let status = second.get(path).await.status().as_u16();
        assert_eq!(status, 401, "{path}: a key is needed, not this session");
    }
    // The signed-in admin who chose a password reads both.
    assert_eq!(app.get("/metrics").await.status().as_u16(), 200);
}
