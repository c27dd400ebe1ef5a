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

    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(page.status().as_u16(), 303);
}
