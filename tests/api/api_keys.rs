//! The API-keys page's server functions: create (shown once, stored as a hash), list, revoke.

use serde_json::Value;

use crate::helpers::{location, spawn_app, spawn_app_with, utc_text};

#[tokio::test]
async fn a_created_key_is_shown_once_and_only_its_hash_is_stored() {
    let app = spawn_app().await;
    app.login().await;

    let created = app
        .call_ok(
            "create_api_key",
            &[("name", "ragflow prod"), ("execute", "on")],
        )
        .await;
    let listed = app.call_ok("list_api_keys", &[]).await;

    let key = created["key"].as_str().unwrap();
    assert!(key.starts_with("sck_") && key.len() == 44, "{key}");
    assert_eq!(listed[0]["name"], "ragflow prod");
    assert_eq!(listed[0]["scopes"], serde_json::json!(["execute"]));
    assert_eq!(listed[0]["prefix"].as_str().unwrap(), &key[..12]);
    assert!(
        !listed.to_string().contains(key),
        "the list never holds the key"
    );
    let stored: String =
        sqlx::query_scalar("select key_hash || prefix || name || scopes from api_key")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(!stored.contains(key));
}

#[tokio::test]
async fn bad_names_missing_scopes_and_duplicates_are_refused_with_400() {
    let app = spawn_app().await;
    app.login().await;
    app.call_ok("create_api_key", &[("name", "agent"), ("execute", "on")])
        .await;

    for form in [
        vec![("name", "  ")],
        vec![("name", "a/b"), ("execute", "on")],
        vec![("name", "no-scope")],
        vec![("name", "agent"), ("admin", "on")],
    ] {
        let response = app.call("create_api_key", &form).await;
        assert_eq!(response.status().as_u16(), 400, "{form:?}");
    }
}

#[tokio::test]
async fn a_revoked_key_is_refused_and_its_name_can_be_reused() {
    let app = spawn_app().await;
    app.login().await;
    let created = app
        .call_ok("create_api_key", &[("name", "agent"), ("execute", "on")])
        .await;
    let id = created["info"]["id"].to_string();
    let key = created["key"].as_str().unwrap().to_owned();

    let revoked = app.call_ok("revoke_api_key", &[("id", &id)]).await;
    let again = app.call("revoke_api_key", &[("id", &id)]).await;

    assert!(revoked["revoked_at"].is_string());
    assert_eq!(again.status().as_u16(), 400);
    let providers = app.get_with_key("/api/v1/providers", &key).await;
    assert_eq!(providers.status().as_u16(), 401);
    app.call_ok("create_api_key", &[("name", "agent"), ("execute", "on")])
        .await;
}

#[tokio::test]
async fn with_javascript_off_the_new_key_shows_on_the_next_page_only() {
    let app = spawn_app().await;
    app.login().await;

    let response = app
        .client
        .post(app.url("/rpc/create_api_key"))
        .header("accept", "text/html")
        .form(&[("name", "form-key"), ("execute", "on"), ("admin", "on")])
        .send()
        .await
        .unwrap();

    assert!(response.status().is_redirection());
    assert_eq!(location(&response), "/admin/api-keys");
    let listed: Value = app.call_ok("list_api_keys", &[]).await;
    let prefix = listed[0]["prefix"].as_str().unwrap().to_owned();
    let first = app.get("/admin/api-keys").await.text().await.unwrap();
    let second = app.get("/admin/api-keys").await.text().await.unwrap();
    assert!(
        first.contains("data-testid=\"new-key\"") && first.contains(&prefix),
        "the key is shown"
    );
    assert!(!second.contains("data-testid=\"new-key\""), "and only once");
    assert!(second.contains("form-key"));
}

#[tokio::test]
async fn anonymous_callers_get_401_from_the_key_endpoints() {
    let app = spawn_app().await;

    for name in [
        "list_api_keys",
        "create_api_key",
        "revoke_api_key",
        "take_api_key_flash",
    ] {
        let response = app
            .call(name, &[("name", "x"), ("execute", "on"), ("id", "1")])
            .await;
        assert_eq!(response.status().as_u16(), 401, "{name}");
    }
    let rows: i64 = sqlx::query_scalar("select count(*) from api_key")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn a_key_records_when_it_was_last_used() {
    let app = spawn_app().await;
    app.login().await;
    let created = app
        .call_ok("create_api_key", &[("name", "agent"), ("execute", "on")])
        .await;
    let key = created["key"].as_str().unwrap().to_owned();
    assert_eq!(created["info"]["last_used_at"], Value::Null);

    let response = app.get_with_key("/api/v1/providers", &key).await;

    assert_eq!(response.status().as_u16(), 200);
    let listed = app.call_ok("list_api_keys", &[]).await;
    assert!(listed[0]["last_used_at"].is_string(), "{listed}");
    assert_eq!(listed[0]["last_used_address"], "127.0.0.1", "{listed}");
}

/// Behind a trusted proxy the key's last address is the client's from X-Forwarded-For; from
/// anyone else the header is ignored (a client cannot choose the address it is recorded as).
#[tokio::test]
async fn x_forwarded_for_names_the_client_only_when_the_peer_is_a_trusted_proxy() {
    for (trusted, expected) in [(false, "127.0.0.1"), (true, "203.0.113.7")] {
        let app = spawn_app_with(|config| {
            if trusted {
                config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            }
        })
        .await;
        app.login().await;
        let created = app
            .call_ok("create_api_key", &[("name", "agent"), ("execute", "on")])
            .await;
        let key = created["key"].as_str().unwrap();
        let response = app
            .client
            .get(format!("{}/api/v1/providers", app.address))
            .bearer_auth(key)
            .header("x-forwarded-for", "198.51.100.1, 203.0.113.7")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let listed = app.call_ok("list_api_keys", &[]).await;
        assert_eq!(listed[0]["last_used_address"], expected, "{listed}");
    }
}

#[tokio::test]
async fn a_key_can_expire_and_is_refused_once_it_has() {
    let app = spawn_app().await;
    app.login().await;
    for bad in ["0", "3651", "soon"] {
        let refused = app
            .call(
                "create_api_key",
                &[("name", "agent"), ("execute", "on"), ("expires_days", bad)],
            )
            .await;
        assert_eq!(refused.status().as_u16(), 400, "{bad}");
        assert!(refused.text().await.unwrap().contains("from 1 to 3650"));
    }
    let created = app
        .call_ok(
            "create_api_key",
            &[("name", "agent"), ("execute", "on"), ("expires_days", "30")],
        )
        .await;
    let key = created["key"].as_str().unwrap().to_owned();
    let expires = created["info"]["expires_at"].as_str().unwrap().to_owned();
    let in_30_days = utc_text(30 * 86_400)[..10].to_owned();
    assert!(expires.starts_with(&in_30_days), "{expires}");
    assert_eq!(
        app.get_with_key("/api/v1/providers", &key)
            .await
            .status()
            .as_u16(),
        200
    );

    // Time passes: the stored expiry is now behind us.
    sqlx::query("update api_key set expires_at = $1")
        .bind(utc_text(-1))
        .execute(&app.pool)
        .await
        .unwrap();

    assert_eq!(
        app.get_with_key("/api/v1/providers", &key)
            .await
            .status()
            .as_u16(),
        401
    );
    let never = app
        .call_ok("create_api_key", &[("name", "forever"), ("execute", "on")])
        .await;
    assert_eq!(never["info"]["expires_at"], Value::Null);
}

#[tokio::test]
async fn creating_and_revoking_keys_is_in_the_audit() {
    let app = spawn_app().await;
    app.login().await;
    let created = app
        .call_ok(
            "create_api_key",
            &[("name", "ragflow"), ("execute", "on"), ("admin", "on")],
        )
        .await;
    app.call_ok(
        "revoke_api_key",
        &[("id", &created["info"]["id"].to_string())],
    )
    .await;

    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "select actor, action, detail from settings_audit where setting = 'account' order by id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();

    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0].0.as_str(), rows[0].1.as_str()),
        ("admin", "key_create")
    );
    assert!(
        rows[0].2.contains("ragflow") && rows[0].2.contains("execute, admin"),
        "{rows:?}"
    );
    assert_eq!(
        (rows[1].0.as_str(), rows[1].1.as_str()),
        ("admin", "key_revoke")
    );
    let key = created["key"].as_str().unwrap();
    assert!(
        !rows.iter().any(|r| r.2.contains(key)),
        "the key itself is never recorded"
    );
    let audit = app.call_ok("settings_audit", &[("view", "accounts")]).await;
    assert_eq!(audit["total"], 2, "{audit}");
}
