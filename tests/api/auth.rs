use sandbox_console::server::auth::account;

use crate::helpers::{location, spawn_app, spawn_app_with, ADMIN, PASSWORD};

#[tokio::test]
async fn login_with_the_right_password_signs_in_and_shows_the_admin() {
    let app = spawn_app().await;

    let response = app.login().await;
    assert_eq!(location(&response), "/");
    let page = app.get("/").await;

    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains(r#"data-testid="admin-name""#),
        "the header names the signed-in admin"
    );
    assert!(html.contains(">admin<"));
    assert!(
        html.contains("This installation"),
        "the overview data is rendered on the server"
    );
}

#[tokio::test]
async fn login_with_a_wrong_password_or_unknown_user_fails_the_same_way() {
    let app = spawn_app().await;

    let wrong_password = app.login_as(ADMIN, "not the password", "/").await;
    let unknown_user = app.login_as("nobody", PASSWORD, "/").await;

    for response in [wrong_password, unknown_user] {
        assert_eq!(response.status().as_u16(), 303);
        assert_eq!(location(&response), "/login?error=invalid");
    }
    assert_eq!(
        app.session_id(),
        None,
        "a failed sign-in creates no session"
    );
    let page = app.get("/").await;
    assert_eq!(page.status().as_u16(), 303);
}

#[tokio::test]
async fn json_clients_get_a_401_for_bad_credentials() {
    let app = spawn_app().await;

    let response = app.login_json(ADMIN, "nope nope").await;

    assert_eq!(response.status().as_u16(), 401);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["kind"], "invalid");
}

#[tokio::test]
async fn usernames_are_case_insensitive() {
    let app = spawn_app().await;

    let response = app.login_as("ADMIN", PASSWORD, "/").await;

    assert_eq!(location(&response), "/");
}

#[tokio::test]
async fn session_cookie_is_http_only_same_site_strict_and_not_secure_without_tls() {
    let app = spawn_app().await;

    let response = app.login().await;

    let cookie = response
        .headers()
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with("sandbox_console_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    assert!(cookie.contains("Max-Age="), "the cookie expires: {cookie}");
    assert!(!cookie.contains("Secure"), "{cookie}");
}

#[tokio::test]
async fn session_cookie_is_secure_when_configured_for_tls() {
    let app = spawn_app_with(|config| config.secure_cookies = true).await;

    let response = app.login().await;

    let cookie = response
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.contains("Secure"), "{cookie}");
}

#[tokio::test]
async fn anonymous_page_visit_redirects_to_login_and_back_after_login() {
    let app = spawn_app().await;

    let response = app.get("/?tab=all").await;
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(location(&response), "/login?next=/%3Ftab%3Dall");

    let login_page = app.get("/login?next=/%3Ftab%3Dall").await;
    assert_eq!(login_page.status().as_u16(), 200);
    let html = login_page.text().await.unwrap();
    assert!(
        html.contains(r#"name="next" value="/?tab=all""#),
        "the form carries the target: {html}"
    );

    let response = app.login_as(ADMIN, PASSWORD, "/?tab=all").await;
    assert_eq!(location(&response), "/?tab=all");
}

#[tokio::test]
async fn login_never_redirects_off_site() {
    let app = spawn_app().await;

    let response = app.login_as(ADMIN, PASSWORD, "//evil.example/").await;

    assert_eq!(location(&response), "/");
}

#[tokio::test]
async fn anonymous_server_function_calls_get_401_and_signed_in_ones_succeed() {
    let app = spawn_app().await;

    for name in ["current_admin", "overview"] {
        let response = app.call_server_fn(name).await;
        assert_eq!(response.status().as_u16(), 401, "{name}");
    }

    app.login().await;
    let response = app.call_server_fn("current_admin").await;
    assert_eq!(response.status().as_u16(), 200);
    let admin: serde_json::Value = response.json().await.unwrap();
    assert_eq!(admin["username"], ADMIN);
    let overview: serde_json::Value = app.call_server_fn("overview").await.json().await.unwrap();
    assert_eq!(overview["admin_count"], 1);
    assert_eq!(overview["active_sessions"], 1);
}

#[tokio::test]
async fn failed_logins_lock_the_account_even_for_the_right_password() {
    let app = spawn_app_with(|config| config.login.max_failures = 3).await;
    for _ in 0..3 {
        let response = app.login_as(ADMIN, "wrong password", "/").await;
        assert_eq!(location(&response), "/login?error=invalid");
    }

    let response = app.login_as(ADMIN, PASSWORD, "/").await;

    assert_eq!(response.status().as_u16(), 303);
    let target = location(&response);
    assert!(
        target.starts_with("/login?error=rate_limited&retry_after="),
        "{target}"
    );
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 0 && retry <= 900, "{retry}");
    assert_eq!(app.session_id(), None);
    let page = app.get(&target).await.text().await.unwrap();
    assert!(
        page.contains("Too many failed sign-in attempts"),
        "the page explains the lock"
    );
}

#[tokio::test]
async fn failed_logins_from_one_address_are_limited_across_accounts() {
    let app = spawn_app_with(|config| config.login.max_failures_per_address = 4).await;
    for n in 0..4 {
        app.login_as(&format!("guess{n}"), "wrong password", "/")
            .await;
    }

    let response = app.login_json(ADMIN, PASSWORD).await;

    assert_eq!(response.status().as_u16(), 429);
    assert!(response.headers().contains_key("retry-after"));
}

#[tokio::test]
async fn login_rotates_the_session_id_and_voids_the_old_one() {
    let app = spawn_app().await;
    app.login().await;
    let first = app.session_id().expect("signed in");

    app.login().await;
    let second = app.session_id().expect("still signed in");

    assert_ne!(first, second);
    let replay = app.get_with_session(&first, "/").await;
    assert_eq!(
        replay.status().as_u16(),
        303,
        "the pre-login session id no longer works"
    );
    let current = app.get_with_session(&second, "/").await;
    assert_eq!(current.status().as_u16(), 200);
}

#[tokio::test]
async fn logout_ends_the_session_for_good() {
    let app = spawn_app().await;
    app.login().await;
    let id = app.session_id().unwrap();

    let response = app
        .client
        .post(app.url("/auth/logout"))
        .send()
        .await
        .unwrap();

    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(location(&response), "/login?error=signed_out");
    assert_eq!(app.get("/").await.status().as_u16(), 303);
    let replay = app.get_with_session(&id, "/").await;
    assert_eq!(
        replay.status().as_u16(),
        303,
        "the old cookie is worthless after sign-out"
    );
}

#[tokio::test]
async fn resetting_the_password_signs_the_admin_out_everywhere() {
    let app = spawn_app().await;
    app.login().await;

    account::reset_password(&app.pool, ADMIN, "a brand new password".into())
        .await
        .unwrap();

    assert_eq!(app.get("/").await.status().as_u16(), 303);
    assert_eq!(
        location(&app.login_as(ADMIN, PASSWORD, "/").await),
        "/login?error=invalid"
    );
    assert_eq!(
        location(&app.login_as(ADMIN, "a brand new password", "/").await),
        "/"
    );
}

#[tokio::test]
async fn cross_origin_form_posts_are_refused() {
    let app = spawn_app().await;

    let response = app
        .client
        .post(app.url("/auth/login"))
        .header("origin", "https://evil.example")
        .form(&[("username", ADMIN), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();

    assert_eq!(response.status().as_u16(), 403);
    assert_eq!(app.session_id(), None);
}

#[tokio::test]
async fn signed_in_admins_skip_the_login_page() {
    let app = spawn_app().await;
    app.login().await;

    let response = app.get("/login").await;

    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(location(&response), "/");
}
