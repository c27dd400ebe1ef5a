//! The settings-audit page's server function: newest first, key names only, paginated.

use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with_scripted};

#[tokio::test]
async fn changes_from_the_console_and_the_api_are_listed_newest_first_without_values() {
    let app = spawn_app_with_scripted(|_| {}).await;
    let key = app.api_key("ops", &["admin"]).await;
    app.post_json(
        "/api/v1/admin/sandbox/config",
        &key,
        &json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": "s3cr3t-value"}}),
    )
    .await;
    app.login().await;

    let audit = app.call_ok("settings_audit", &[("page", "1")]).await;

    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(entries[0]["action"], "activate");
    assert_eq!(entries[1]["actor"], "api-key:ops");
    assert_eq!(entries[1]["provider"], "scripted");
    assert_eq!(
        entries[1]["changed_keys"],
        json!(["endpoint", "timeout", "token"])
    );
    assert!(!audit.to_string().contains("s3cr3t-value"));
    assert_eq!(
        (audit["page"].as_u64(), audit["pages"].as_u64()),
        (Some(1), Some(1))
    );
}

#[tokio::test]
async fn the_audit_is_paginated_and_clamps_pages_past_the_end() {
    let app = spawn_app().await;
    for i in 0..30 {
        sandbox_console::server::db::settings_audit::record(
            &app.pool,
            &format!("admin{i}"),
            "sandbox.local",
            Some("local"),
            "save",
            &["timeout_secs".to_owned()],
        )
        .await
        .unwrap();
    }
    app.login().await;

    let second = app.call_ok("settings_audit", &[("page", "2")]).await;
    let beyond = app.call_ok("settings_audit", &[("page", "99")]).await;

    assert_eq!(second["total"], 30);
    assert_eq!(second["pages"], 2);
    assert_eq!(second["entries"].as_array().unwrap().len(), 5);
    assert_eq!(second["entries"][0]["actor"], "admin4", "newest first");
    assert_eq!(beyond["page"], 2);
    let html = app.get("/admin/audit?page=2").await.text().await.unwrap();
    assert!(
        html.contains("Page 2 of 2") && html.contains("admin0"),
        "the page renders server-side"
    );
}

#[tokio::test]
async fn anonymous_callers_cannot_read_the_audit() {
    let app = spawn_app().await;

    let response = app.call("settings_audit", &[]).await;
    let page = app.get("/admin/audit").await;
    let export = app.get("/admin/audit/export.csv").await;

    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(page.status().as_u16(), 303);
    assert_eq!(export.status().as_u16(), 303);
}

#[tokio::test]
async fn the_audit_filters_by_actor_and_exports_what_it_shows_as_csv() {
    let app = spawn_app().await;
    app.login().await;
    let key = app.api_key("ops", &["admin"]).await;
    app.post_json(
        "/api/v1/admin/sandbox/config",
        &key,
        &serde_json::json!({"provider_type": "local", "config": {"timeout_secs": 5}}),
    )
    .await;
    app.call_ok(
        "save_sandbox_settings",
        &[
            ("kind", "local"),
            ("expected_version", "2"),
            ("values[timeout_secs]", "6"),
        ],
    )
    .await;

    let everyone = app.call_ok("settings_audit", &[]).await;
    let by_key = app
        .call_ok("settings_audit", &[("actor", "API-KEY:o")])
        .await;
    let csv = app
        .text_of("/admin/audit/export.csv?view=changes&actor=api-key")
        .await;

    assert!(everyone["total"].as_i64().unwrap() >= 2, "{everyone}");
    let actors: Vec<&str> = by_key["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["actor"].as_str().unwrap())
        .collect();
    assert!(
        !actors.is_empty() && actors.iter().all(|a| *a == "api-key:ops"),
        "{actors:?}"
    );
    assert_eq!(by_key["actor"], "API-KEY:o");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "id,created_at,actor,setting,provider,action,changed_keys,detail"
    );
    assert_eq!(lines.len(), actors.len() + 1, "{csv}");
    assert!(
        lines[1..].iter().all(|l| l.contains(",api-key:ops,")),
        "{csv}"
    );
    assert!(lines[1].contains("timeout_secs"), "{csv}");
}

#[tokio::test]
async fn sign_ins_and_connection_tests_have_views_of_their_own() {
    let app = spawn_app().await;
    app.login_as("admin", "wrong password", "/").await;
    app.login().await;
    app.call_ok(
        "test_sandbox_connection",
        &[("kind", "local"), ("values[timeout_secs]", "5")],
    )
    .await;

    let changes = app.call_ok("settings_audit", &[("page", "1")]).await;
    let tests = app
        .call_ok("settings_audit", &[("page", "1"), ("view", "tests")])
        .await;
    let sign_ins = app
        .call_ok("settings_audit", &[("page", "1"), ("view", "sign_ins")])
        .await;

    assert_eq!(changes["total"], 0, "sign-ins and tests change nothing");
    assert_eq!(tests["total"], 1);
    assert_eq!(tests["entries"][0]["provider"], "local");
    assert_eq!(
        tests["entries"][0]["detail"],
        json!([["destination", "this host"], ["outcome", "passed"]])
    );
    let actions: Vec<&str> = sign_ins["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["sign_in", "sign_in_failed"], "newest first");
    assert_eq!(
        sign_ins["entries"][0]["detail"],
        json!([["address", "127.0.0.1"]])
    );
    let html = app
        .get("/admin/audit?view=sign_ins")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("address: 127.0.0.1") && html.contains("sign_in_failed"),
        "the page renders the view server-side"
    );
}

#[tokio::test]
async fn sign_in_events_are_trimmed_to_the_newest_and_nothing_else_is() {
    use sandbox_console::server::db::settings_audit;
    let app = spawn_app().await;
    let pool = &app.pool;
    for n in 0..10 {
        let detail = serde_json::Map::from_iter([("address".to_owned(), json!(n.to_string()))]);
        settings_audit::record_event(
            pool,
            "x",
            settings_audit::SIGN_IN,
            None,
            "sign_in_failed",
            &detail,
        )
        .await
        .unwrap();
        if n % 4 == 0 {
            settings_audit::record(pool, "admin", "sandbox.local", Some("local"), "save", &[])
                .await
                .unwrap();
        }
    }

    let trimmed = settings_audit::trim_sign_ins(pool, 4).await.unwrap();

    assert_eq!(trimmed, 6);
    let left: Vec<(String, String)> =
        sqlx::query_as("select setting, detail from settings_audit order by id")
            .fetch_all(pool)
            .await
            .unwrap();
    let sign_ins: Vec<&str> = left
        .iter()
        .filter(|(setting, _)| setting == settings_audit::SIGN_IN)
        .map(|(_, detail)| detail.as_str())
        .collect();
    assert_eq!(
        sign_ins,
        [
            r#"{"address":"6"}"#,
            r#"{"address":"7"}"#,
            r#"{"address":"8"}"#,
            r#"{"address":"9"}"#
        ]
    );
    assert_eq!(
        left.len() - sign_ins.len(),
        3,
        "settings changes are never trimmed"
    );
}

#[tokio::test]
async fn environment_events_have_a_view_and_activate_anyway_is_marked() {
    let app = spawn_app_with_scripted(|_| {}).await;
    app.login().await;
    app.call_ok(
        "save_environment",
        &[
            ("name", "reports"),
            ("python_requirements", "no-such-package-4711"),
        ],
    )
    .await;
    app.call_ok("delete_environment", &[("name", "reports")])
        .await;

    let view = app
        .call_ok("settings_audit", &[("page", "1"), ("view", "environments")])
        .await;
    let actions: Vec<&str> = view["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "environment_delete",
            "environment_build",
            "environment_create"
        ],
        "{view}"
    );
    let page = app.text_of("/admin/audit?view=environments").await;
    assert!(page.contains("environment_delete"), "{page}");

    // "Activate anyway" after a failed health check (a refused token) is told apart.
    let unhealthy = [
        ("kind", "scripted"),
        ("expected_version", ""),
        ("values[endpoint]", "http://fake"),
        ("values[token]", "not-the-good-one"),
        ("make_active", "on"),
    ];
    let refused = app.call_ok("save_sandbox_settings", &unhealthy).await;
    assert!(refused.get("Unhealthy").is_some(), "{refused}");
    let mut anyway = unhealthy.to_vec();
    anyway.push(("anyway", "activate"));
    let saved = app.call_ok("save_sandbox_settings", &anyway).await;
    assert!(saved.get("Saved").is_some(), "{saved}");
    let changes = app.call_ok("settings_audit", &[("page", "1")]).await;
    let marked: Vec<String> = changes["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["detail"].to_string().contains("failed; applied anyway"))
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(marked, ["activate", "save"], "{changes}");
}

#[tokio::test]
async fn restore_delete_and_disable_ask_first() {
    let app = spawn_app().await;
    app.login().await;
    app.call_ok(
        "save_environment",
        &[("name", "gone"), ("npm_packages", "no-such-package-4711")],
    )
    .await;
    app.call_ok("add_administrator", &[("username", "second")])
        .await;
    let admins = app.call_ok("administrators", &[]).await;
    let second = admins
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["username"] == "second")
        .unwrap()["id"]
        .as_i64()
        .unwrap();

    for (page, direct, link, confirm) in [
        (
            "/admin/environments/gone".to_owned(),
            "action=\"/rpc/delete_environment\"",
            "href=\"/admin/environments/gone?delete=1\"".to_owned(),
            "/admin/environments/gone?delete=1".to_owned(),
        ),
        (
            "/admin/administrators".to_owned(),
            "action=\"/rpc/set_administrator_disabled\"",
            format!("href=\"/admin/administrators?disable={second}\""),
            format!("/admin/administrators?disable={second}"),
        ),
    ] {
        let first = app.text_of(&page).await;
        assert!(
            !first.contains(direct),
            "{page} acts on one click:\n{first}"
        );
        assert!(
            first.contains(&link),
            "{page} links to its question:\n{first}"
        );
        let asking = app.text_of(&confirm).await;
        assert!(
            asking.contains("role=\"alertdialog\"") && asking.contains(direct),
            "{asking}"
        );
    }
    // Restore: the history tab links to the question; the question posts the restore.
    let card = app.call_ok("sandbox_settings", &[]).await["providers"][0].clone();
    let version = card["version"].as_i64().unwrap_or(0).to_string();
    app.call_ok(
        "save_sandbox_settings",
        &[
            ("kind", "local"),
            ("expected_version", &version),
            ("values[timeout_secs]", "11"),
        ],
    )
    .await;
    let versions = app
        .call_ok("sandbox_setting_versions", &[("kind", "local")])
        .await;
    let older = versions[1]["id"].as_i64().unwrap();
    let tab = app
        .text_of("/admin/sandbox-settings?provider=local&tab=history")
        .await;
    assert!(
        !tab.contains("action=\"/rpc/restore_sandbox_settings\""),
        "{tab}"
    );
    let asking = app
        .text_of(&format!(
            "/admin/sandbox-settings?provider=local&tab=history&restore={older}"
        ))
        .await;
    assert!(
        asking.contains("action=\"/rpc/restore_sandbox_settings\""),
        "{asking}"
    );
    assert!(
        asking.contains("applied at once if the provider is active"),
        "{asking}"
    );
}
