//! RAGFlow's sandbox admin API (`/api/v1/admin/sandbox/*`): its envelope and messages, our
//! validation and secret handling.

use serde_json::{json, Value};

use crate::{
    helpers::{spawn_app_with_scripted, TestApp},
    scripted::GOOD_TOKEN,
};

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn setup() -> (TestApp, String) {
    let app = spawn_app_with_scripted(|_| {}).await;
    let key = app.api_key("ops", &["admin"]).await;
    (app, key)
}

async fn stored_version(app: &TestApp, name: &str) -> Option<i64> {
    sqlx::query_scalar("select version from system_setting where name = $1")
        .bind(name)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn providers_and_schemas_come_in_ragflows_envelope() {
    let (app, key) = setup().await;

    let (status, providers) = json_of(
        app.get_with_key("/api/v1/admin/sandbox/providers", &key)
            .await,
    )
    .await;
    let (_, schema) = json_of(
        app.get_with_key("/api/v1/admin/sandbox/providers/scripted/schema", &key)
            .await,
    )
    .await;
    let (unknown_status, unknown) = json_of(
        app.get_with_key("/api/v1/admin/sandbox/providers/nope/schema", &key)
            .await,
    )
    .await;

    assert_eq!(status, 200);
    assert_eq!(
        (providers["code"].as_i64(), providers["message"].as_str()),
        (Some(0), Some("Success"))
    );
    let ids: Vec<_> = providers["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "local",
            "docker",
            "self_managed",
            "ssh",
            "aliyun_codeinterpreter",
            "e2b",
            "tenki",
            "ucloud_agent_sandbox",
            "kubernetes",
            "scripted"
        ],
        "RAGFlow's own ids for the remote providers"
    );
    assert!(providers["data"][0]["tags"].is_array());
    assert_eq!(schema["data"]["endpoint"]["type"], "string");
    assert_eq!(schema["data"]["endpoint"]["required"], true);
    assert_eq!(schema["data"]["token"]["secret"], true);
    assert_eq!(
        (
            schema["data"]["timeout"]["min"].as_i64(),
            schema["data"]["timeout"]["max"].as_i64()
        ),
        (Some(5), Some(300))
    );
    assert_eq!(unknown_status, 400);
    assert_eq!(
        unknown,
        json!({"code": 400, "message": "Unknown provider: nope", "data": null})
    );
}

#[tokio::test]
async fn saving_a_config_activates_it_and_never_returns_the_secret() {
    let (app, key) = setup().await;
    let body = json!({"provider_type": "scripted", "config": {"endpoint": "http://fake:9385", "token": GOOD_TOKEN, "timeout": 60}});

    let (status, saved) = json_of(
        app.post_json("/api/v1/admin/sandbox/config", &key, &body)
            .await,
    )
    .await;
    let (_, config) = json_of(app.get_with_key("/api/v1/admin/sandbox/config", &key).await).await;

    assert_eq!(status, 200, "{saved}");
    let message = saved["message"].as_str().unwrap();
    assert!(
        message.starts_with("Sandbox configuration updated successfully.")
            && message.contains("replaced the saved one"),
        "RAGFlow's sentence, then what replacing means: {message}"
    );
    assert_eq!(config["data"]["provider_type"], "scripted");
    assert_eq!(
        config["data"]["config"],
        json!({"endpoint": "http://fake:9385", "timeout": 60})
    );
    assert_eq!(saved["data"]["active"], true, "{saved}");
    assert_eq!(saved["data"]["health"]["healthy"], true, "{saved}");
    assert!(!saved.to_string().contains(GOOD_TOKEN) && !config.to_string().contains(GOOD_TOKEN));
    let audit: String =
        sqlx::query_scalar("select actor from settings_audit order by id desc limit 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audit, "api-key:ops");
}

#[tokio::test]
async fn a_config_that_fails_its_health_check_is_still_saved_and_the_answer_says_so() {
    let (app, key) = setup().await;
    let body = json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": "wrong"}});

    let (status, saved) = json_of(
        app.post_json("/api/v1/admin/sandbox/config", &key, &body)
            .await,
    )
    .await;

    // RAGFlow's semantics (save, and activate) are kept; the answer carries the health.
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["data"]["active"], true, "{saved}");
    assert_eq!(saved["data"]["health"]["healthy"], false, "{saved}");
    assert!(saved["data"]["health"]["message"].is_string(), "{saved}");
    assert_eq!(stored_version(&app, "sandbox.scripted").await, Some(1));
}

#[tokio::test]
async fn set_active_false_saves_without_switching() {
    let (app, key) = setup().await;
    let body = json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": "t"}, "set_active": false});

    let (status, _) = json_of(
        app.post_json("/api/v1/admin/sandbox/config", &key, &body)
            .await,
    )
    .await;
    let (_, config) = json_of(app.get_with_key("/api/v1/admin/sandbox/config", &key).await).await;

    assert_eq!(status, 200);
    assert_eq!(config["data"]["provider_type"], "local");
    assert_eq!(stored_version(&app, "sandbox.scripted").await, Some(1));
}

#[tokio::test]
async fn invalid_configs_get_ragflow_messages_and_nothing_is_saved() {
    let (app, key) = setup().await;
    let cases = [
        (json!({}), "provider_type is required"),
        (json!({"config": {}}), "provider_type is required"),
        (
            json!({"provider_type": "nope"}),
            "Unknown provider type: nope",
        ),
        (
            json!({"provider_type": "scripted", "config": {"endpoint": "ftp://x", "token": "t"}}),
            "Provider validation failed: Field 'endpoint': Must start with http:// or https://",
        ),
        (
            json!({"provider_type": "scripted", "config": {"endpoint": "http://x", "token": "t", "timeout": 1}}),
            "Provider validation failed: Field 'timeout': Enter a number from 5 to 300.",
        ),
        (
            json!({"provider_type": "scripted", "config": {"endpoint": "http://x"}}),
            "Provider validation failed: Field 'token': This field is required.",
        ),
    ];

    for (body, message) in cases {
        let (status, answer) = json_of(
            app.post_json("/api/v1/admin/sandbox/config", &key, &body)
                .await,
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(
            answer,
            json!({"code": 400, "message": message, "data": null}),
            "{body}"
        );
    }
    let empty = app
        .client
        .post(app.url("/api/v1/admin/sandbox/config"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    let (_, answer) = json_of(empty).await;
    assert_eq!(answer["message"], "Request body is required");
    assert_eq!(
        stored_version(&app, "sandbox.scripted").await,
        None,
        "nothing saved"
    );
    let (_, config) = json_of(app.get_with_key("/api/v1/admin/sandbox/config", &key).await).await;
    assert_eq!(config["data"]["provider_type"], "local");
}

#[tokio::test]
async fn test_runs_on_the_unsaved_config() {
    let (app, key) = setup().await;

    let (status, passed) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/test",
            &key,
            &json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": GOOD_TOKEN}}),
        )
        .await,
    )
    .await;
    let (refused_status, refused) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/test",
            &key,
            &json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": "wrong"}}),
        )
        .await,
    )
    .await;
    let (_, local) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/test",
            &key,
            &json!({"provider_type": "local", "config": {}}),
        )
        .await,
    )
    .await;

    assert_eq!(status, 200, "{passed}");
    assert_eq!(passed["data"]["success"], true, "{passed}");
    let message = passed["data"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Test PASSED | Exit code: 0 | Execution time: "),
        "{message}"
    );
    assert_eq!(refused_status, 400);
    assert_eq!(
        refused["message"],
        "Failed to initialize provider 'scripted': the token was refused"
    );
    assert_eq!(local["data"]["success"], true, "{local}");
    assert_eq!(local["data"]["details"]["exit_code"], 0);
    assert!(local["data"]["details"]["stdout"]
        .as_str()
        .unwrap()
        .contains("test connection"));
    assert_eq!(
        stored_version(&app, "sandbox.scripted").await,
        None,
        "a test saves nothing"
    );
}

#[tokio::test]
async fn the_admin_api_needs_an_admin_key() {
    let app = spawn_app_with_scripted(|_| {}).await;
    let execute_only = app.api_key("agent", &["execute"]).await;

    let (anonymous, body) =
        json_of(app.get_with_key("/api/v1/admin/sandbox/config", "").await).await;
    let (forbidden, _) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/config",
            &execute_only,
            &json!({"provider_type": "local"}),
        )
        .await,
    )
    .await;

    assert_eq!(anonymous, 401);
    assert_eq!(body["code"], 401);
    assert_eq!(forbidden, 403);
}

#[tokio::test]
async fn every_admin_endpoint_refuses_anonymous_callers() {
    let app = spawn_app_with_scripted(|_| {}).await;

    let gets = [
        "/api/v1/admin/sandbox/providers",
        "/api/v1/admin/sandbox/providers/local/schema",
        "/api/v1/admin/sandbox/config",
    ];
    let posts = ["/api/v1/admin/sandbox/config", "/api/v1/admin/sandbox/test"];

    for path in gets {
        let (status, body) = json_of(app.get_with_key(path, "").await).await;
        assert_eq!(
            (status, body["code"].as_i64()),
            (401, Some(401)),
            "GET {path}"
        );
    }
    for path in posts {
        let body = json!({"provider_type": "local", "config": {}});
        let (status, _) = json_of(app.post_json(path, "", &body).await).await;
        assert_eq!(status, 401, "POST {path}");
    }
    let audit: i64 = sqlx::query_scalar("select count(*) from settings_audit")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(audit, 0, "nothing was saved");
}

/// RAGFlow's admin page configures the ssh provider through this API with RAGFlow's own key
/// names (`timeout`), against the real test sshd: its schema offers the key as a secret on
/// several lines, Test runs on the host, and the answer to a save never holds the password.
#[tokio::test]
async fn ragflows_admin_page_configures_ssh_with_its_own_key_names() {
    let (app, key) = setup().await;
    let sshd = crate::ssh_provider::Sshd::get();
    let work = sshd.work_dir();
    let mut config = sshd.settings(&work, json!({}));
    config
        .as_object_mut()
        .unwrap()
        .insert("timeout".into(), json!(20));
    let password = sshd.read("password");

    let (_, schema) = json_of(
        app.get_with_key("/api/v1/admin/sandbox/providers/ssh/schema", &key)
            .await,
    )
    .await;
    let (status, tested) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/test",
            &key,
            &json!({"provider_type": "ssh", "config": config}),
        )
        .await,
    )
    .await;
    let (saved_status, saved) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/config",
            &key,
            &json!({"provider_type": "ssh", "config": config, "set_active": false}),
        )
        .await,
    )
    .await;

    // Elsewhere ("localhost"), signing in with the key: the saved password is the other
    // tab's, so it is dropped rather than asked for again, and never sent there.
    let mut elsewhere = sshd.settings(
        &work,
        json!({ "host": "localhost", "password": "", "private_key": sshd.read("client_ed25519") }),
    );
    elsewhere["known_hosts"] = json!(sshd
        .read("known_hosts")
        .replace("[127.0.0.1]", "[localhost]"));
    let (moved_status, moved) = json_of(
        app.post_json(
            "/api/v1/admin/sandbox/test",
            &key,
            &json!({"provider_type": "ssh", "config": elsewhere}),
        )
        .await,
    )
    .await;

    let fields = &schema["data"];
    assert_eq!(fields["private_key"]["secret"], true, "{schema}");
    assert_eq!(fields["private_key"]["multiline"], true, "{schema}");
    assert_eq!(fields["host"]["required"], true);
    assert_eq!(status, 200, "{tested}");
    assert_eq!(tested["data"]["success"], true, "{tested}");
    assert_eq!(saved_status, 200, "{saved}");
    assert!(!saved.to_string().contains(&password), "{saved}");
    assert_eq!(moved_status, 200, "{moved}");
    assert_eq!(moved["data"]["success"], true, "{moved}");
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        0,
        "the test run's folder went"
    );
}
