//! Regression tests for what an outside security and reliability probe found (issue 13), one
//! or more per finding, each in the layer where the defect lived: script injection and the
//! page policy, stored secrets sent to a new destination, unbounded metric series, endless
//! connections, the sign-in lockout, plaintext at rest, caching, `/run`'s upstream errors,
//! silently ignored settings, and the smaller ones (413/400 from `/rpc`, CSV formulas, the
//! Origin check). The docker wipe's test is in `docker_provider.rs`.

use std::{
    net::{IpAddr, Ipv4Addr},
    os::unix::fs::PermissionsExt,
    time::{Duration, Instant},
};

use axum::{http::StatusCode, Router};
use serde_json::{json, Value};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::{
    fakes::{self, executor_manager},
    helpers::{
        location, spawn_app, spawn_app_with, spawn_app_with_scripted, TestApp, ADMIN, PASSWORD,
    },
    wait::wait_until,
};

const HOSTILE: &str = "</textarea><script>alert(1)</script>";

/// Posts the trial form as a browser with JavaScript off does, and returns the page the
/// redirect leads to.
async fn trial_page(
    app: &TestApp,
    code: &str,
    arguments: &str,
) -> (reqwest::header::HeaderMap, String) {
    let posted = app
        .client
        .post(app.url("/rpc/run_trial"))
        .header("accept", "text/html")
        .form(&[
            ("language", "python"),
            ("code", code),
            ("arguments", arguments),
            ("timeout_secs", ""),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 302);
    let page = app.get(&location(&posted)).await;
    let headers = page.headers().clone();
    (headers, page.text().await.unwrap())
}

// 1. Script injection in the trial panel, and the page policy.

#[tokio::test]
async fn trial_code_and_arguments_come_back_as_text_never_as_markup() {
    let app = spawn_app().await;
    app.login().await;
    let code = format!("def main(x):\n    return '{HOSTILE}'\n");
    let arguments = format!("{{\"x\": \"{}\"}}", HOSTILE.replace('/', "\\/"));

    let (_, page) = trial_page(&app, &code, &arguments).await;

    assert!(!page.contains("<script>alert(1)"), "{page}");
    assert!(!page.contains("</textarea><script>"), "{page}");
    assert!(
        page.contains("&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the code shows as text"
    );
    // The program's own output and return value are escaped too (they were before).
    assert!(page.contains("&lt;/textarea&gt;&lt;script&gt;alert(1)"));
}

#[tokio::test]
async fn settings_multiline_fields_escape_what_was_typed() {
    let app = spawn_app_with_scripted(|_| {}).await;
    app.login().await;
    // A save that fails validation (no token) shows the typed values again, the notes in
    // the schema form's textarea.
    let response = app
        .client
        .post(app.url("/rpc/save_sandbox_settings"))
        .header("accept", "text/html")
        .form(&[
            ("kind", "scripted"),
            ("expected_version", ""),
            ("values[endpoint]", "http://fake"),
            ("values[notes]", HOSTILE),
        ])
        .send()
        .await
        .unwrap();
    let page = app.get(&location(&response)).await.text().await.unwrap();

    assert!(
        page.contains("This field is required."),
        "the save failed: {page}"
    );
    assert!(!page.contains("<script>alert(1)"), "{page}");
    assert!(
        page.contains("&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;</textarea>"),
        "{page}"
    );
}

#[tokio::test]
async fn every_html_page_carries_a_nonce_policy_that_its_own_scripts_match() {
    let app = spawn_app().await;
    let login = app.get("/login").await;
    app.login().await;

    for response in [
        login,
        app.get("/").await,
        app.get("/admin/sandbox-settings").await,
        app.get("/no/such/page").await,
    ] {
        let policy = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let page = response.text().await.unwrap();
        let nonce = policy
            .split("'nonce-")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .unwrap_or_else(|| panic!("a nonce in {policy}"));
        assert!(nonce.len() >= 16, "{nonce}");
        for directive in [
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ] {
            assert!(policy.contains(directive), "{directive} in {policy}");
        }
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        let scripts = page.matches("<script").count();
        assert!(scripts > 0, "the page has its hydration script");
        assert_eq!(
            page.matches(&format!("<script type=\"module\" nonce=\"{nonce}\""))
                .count()
                + page.matches(&format!("<script nonce=\"{nonce}\"")).count(),
            scripts,
            "every script carries this response's nonce: {page}"
        );
    }
    let again = app.get("/").await.headers()["content-security-policy"].clone();
    let first = app.get("/").await.headers()["content-security-policy"].clone();
    assert_ne!(again, first, "a fresh nonce per response");
}

#[tokio::test]
async fn artifacts_are_previewed_as_images_and_downloaded_as_sandboxed_attachments() {
    let app = spawn_app().await;
    app.login().await;
    let code = "def main():\n    import os\n    os.makedirs('artifacts', exist_ok=True)\n    open('artifacts/x.svg', 'w').write('<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>')\n    open('artifacts/page.html', 'w').write('<script>alert(2)</script>')\n    return 1\n";

    let (_, page) = trial_page(&app, code, "").await;

    let links: Vec<String> = page
        .match_indices("href=\"/admin/artifacts/")
        .map(|(at, _)| {
            let rest = &page[at + 6..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect();
    assert_eq!(links.len(), 2, "{page}");
    assert!(
        page.contains("<img src=\"data:image/svg+xml;base64,"),
        "svg previewed as an image"
    );
    assert!(
        !page.contains("data:text/html"),
        "html is never previewed or linked as data:"
    );
    for link in &links {
        let response = app.get(link).await;
        assert_eq!(response.status().as_u16(), 200);
        let headers = response.headers();
        assert_eq!(headers["content-type"], "application/octet-stream");
        assert!(headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename="));
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["content-security-policy"], "sandbox");
        assert_eq!(headers["cache-control"], "no-store");
        assert!(response.text().await.unwrap().contains("alert("));
    }
    let anonymous = app.sibling();
    let refused = anonymous.get(&links[0]).await;
    assert_eq!(
        refused.status().as_u16(),
        303,
        "anonymous callers are sent to sign in"
    );
    let other_admin = {
        sandbox_console::server::auth::account::create_admin(
            &app.pool,
            "bob",
            "another long password".into(),
        )
        .await
        .unwrap();
        let bob = app.sibling();
        bob.login_as("bob", "another long password", "/").await;
        bob
    };
    assert_eq!(
        other_admin.get(&links[0]).await.status().as_u16(),
        404,
        "another admin cannot fetch it"
    );
}

// 2. Stored secrets and their destination.

const TOKEN: &str = "executor-token-7f3a";

async fn self_managed_saved(app: &TestApp, endpoint: &str) {
    let saved = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "self_managed"),
                ("expected_version", ""),
                ("values[endpoint]", endpoint),
                ("values[api_token]", TOKEN),
            ],
        )
        .await;
    assert_eq!(saved["Saved"]["version"], 1, "{saved}");
}

fn hostile_peer() -> Router {
    Router::new().fallback(|| async { (StatusCode::OK, "{}") })
}

#[tokio::test]
async fn a_stored_secret_is_never_sent_to_an_endpoint_it_was_not_saved_for() {
    let executor = executor_manager::start(Some(TOKEN)).await;
    let hostile = fakes::serve(hostile_peer()).await;
    let app = spawn_app().await;
    app.login().await;
    self_managed_saved(&app, &executor.url()).await;

    let test = app
        .call_ok(
            "test_sandbox_connection",
            &[
                ("kind", "self_managed"),
                ("values[endpoint]", &hostile.url()),
            ],
        )
        .await;
    let save = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "self_managed"),
                ("expected_version", "1"),
                ("values[endpoint]", &hostile.url()),
            ],
        )
        .await;
    let same_place = app
        .call_ok(
            "test_sandbox_connection",
            &[
                ("kind", "self_managed"),
                ("values[endpoint]", &executor.url()),
            ],
        )
        .await;

    assert!(
        hostile.journal.all().is_empty(),
        "nothing reached the new endpoint: {:?}",
        hostile.journal.all()
    );
    let why = test["errors"]["api_token"].as_str().unwrap();
    assert!(why.contains("type it again"), "{test}");
    assert_eq!(test["passed"], false);
    assert!(
        save["Invalid"]["errors"]["api_token"]
            .as_str()
            .unwrap()
            .contains("type it again"),
        "{save}"
    );
    assert_eq!(
        same_place["passed"], true,
        "unchanged destination: the secret is reused {same_place}"
    );
    let page = app
        .get("/admin/sandbox-settings?provider=self_managed")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("only sent where it was saved for"),
        "the form says so next to the field"
    );
}

#[tokio::test]
async fn typing_the_secret_again_sends_it_to_the_new_endpoint() {
    let old = executor_manager::start(Some(TOKEN)).await;
    let new = executor_manager::start(Some(TOKEN)).await;
    let app = spawn_app().await;
    app.login().await;
    self_managed_saved(&app, &old.url()).await;

    let test = app
        .call_ok(
            "test_sandbox_connection",
            &[
                ("kind", "self_managed"),
                ("values[endpoint]", &new.url()),
                ("values[api_token]", TOKEN),
            ],
        )
        .await;

    assert_eq!(test["passed"], true, "{test}");
}

#[tokio::test]
async fn a_provider_that_redirects_never_takes_the_secret_elsewhere() {
    let hostile = fakes::serve(hostile_peer()).await;
    let target = hostile.url();
    let redirecting = fakes::serve(Router::new().fallback(move |uri: axum::http::Uri| {
        let to = format!("{target}{}", uri.path());
        async move { axum::response::Redirect::temporary(&to) }
    }))
    .await;
    let app = spawn_app().await;
    app.login().await;

    let test = app
        .call_ok(
            "test_sandbox_connection",
            &[
                ("kind", "self_managed"),
                ("values[endpoint]", &redirecting.url()),
                ("values[api_token]", TOKEN),
            ],
        )
        .await;

    assert_eq!(test["passed"], false, "{test}");
    assert!(
        !redirecting.journal.all().is_empty(),
        "the endpoint was asked"
    );
    assert!(
        hostile.journal.all().is_empty(),
        "the redirect was not followed: {:?}",
        hostile.journal.all()
    );
}

#[tokio::test]
async fn ragflows_test_endpoint_keeps_secrets_at_their_destination_too() {
    let e2b = fakes::e2b::start().await;
    let hostile = fakes::serve(hostile_peer()).await;
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let saved = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "e2b", "set_active": false, "config": {"api_key": fakes::e2b::API_KEY, "api_url": e2b.url(), "sandbox_url": e2b.url()}}),
        )
        .await;
    assert_eq!(
        saved.status().as_u16(),
        200,
        "{}",
        saved.text().await.unwrap()
    );

    let answer = app
        .post_json(
            "/api/v1/admin/sandbox/test",
            &admin,
            &json!({"provider_type": "e2b", "config": {"api_url": hostile.url(), "sandbox_url": e2b.url()}}),
        )
        .await;
    let status = answer.status().as_u16();
    let body: Value = answer.json().await.unwrap();

    assert!(
        hostile.journal.all().is_empty(),
        "{:?}",
        hostile.journal.all()
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("type it again"),
        "{body}"
    );
}

#[tokio::test]
async fn every_connection_test_is_in_the_audit_with_its_destination_and_outcome() {
    let executor = executor_manager::start(Some(TOKEN)).await;
    let app = spawn_app().await;
    app.login().await;
    self_managed_saved(&app, &executor.url()).await;

    app.call_ok(
        "test_sandbox_connection",
        &[
            ("kind", "self_managed"),
            ("values[endpoint]", &executor.url()),
        ],
    )
    .await;
    app.call_ok(
        "test_sandbox_connection",
        &[
            ("kind", "self_managed"),
            ("values[endpoint]", "http://127.0.0.1:9"),
        ],
    )
    .await;

    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "select actor, provider, detail from settings_audit where action = 'test_connection' order by id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let first: Value = serde_json::from_str(&rows[0].2).unwrap();
    let second: Value = serde_json::from_str(&rows[1].2).unwrap();
    assert_eq!(
        (rows[0].0.as_str(), rows[0].1.as_str()),
        (ADMIN, "self_managed")
    );
    assert_eq!(first["destination"], format!("endpoint={}", executor.url()));
    assert_eq!(first["outcome"], "passed");
    assert_eq!(second["destination"], "endpoint=http://127.0.0.1:9");
    assert_eq!(
        second["outcome"], "invalid settings",
        "the token had to be typed again"
    );
    assert!(
        !rows.iter().any(|r| r.2.contains(TOKEN)),
        "no value of a secret in the audit"
    );
}

// 3. Metric labels come from bounded sets.

#[tokio::test]
async fn made_up_http_methods_never_create_metric_series() {
    let app = spawn_app().await;
    for n in 0..300 {
        let method = reqwest::Method::from_bytes(format!("M{n}X").as_bytes()).unwrap();
        app.client
            .request(method, app.url("/healthz"))
            .send()
            .await
            .unwrap();
    }
    app.login().await;

    let text = app.get("/metrics").await.text().await.unwrap();

    assert!(!text.contains("M17X"), "no series per made-up method");
    let series = text
        .lines()
        .filter(|l| l.starts_with("http_requests_total{"))
        .count();
    assert!(series < 30, "{series} series:\n{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("http_requests_total{") && l.contains("method=\"other\"")),
        "{text}"
    );
}

// 4. Connections that never end.

async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + within;
    loop {
        let mut buf = [0u8; 4096];
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(seen),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
}

/// `/proc/net/tcp`'s code for an established connection.
const TCP_ESTABLISHED: u8 = 0x01;

/// The state of the server's end of the loopback connection from `client` to `server` (ports),
/// as the kernel lists it; `None` once it is gone.
fn server_side_state(server: u16, client: u16) -> Option<u8> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let port = |address: &str| u16::from_str_radix(address.rsplit(':').next()?, 16).ok();
        (port(fields[1])? == server && port(fields[2])? == client)
            .then(|| u8::from_str_radix(fields[3], 16).ok())
            .flatten()
    })
}

fn host_of(app: &TestApp) -> String {
    app.address.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn half_sent_headers_and_idle_keep_alive_connections_are_closed() {
    let app = spawn_app_with(|config| {
        config.header_read_timeout_secs = 1;
        config.idle_timeout_secs = 2;
    })
    .await;

    let mut silent = TcpStream::connect(host_of(&app)).await.unwrap();
    let mut half = TcpStream::connect(host_of(&app)).await.unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut idle = TcpStream::connect(host_of(&app)).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();

    assert!(
        read_until_closed(&mut silent, Duration::from_secs(10))
            .await
            .is_some(),
        "a silent connection is closed"
    );
    assert!(
        read_until_closed(&mut half, Duration::from_secs(10))
            .await
            .is_some(),
        "half-sent headers are closed"
    );
    let answered = read_until_closed(&mut idle, Duration::from_secs(10))
        .await
        .expect("an idle keep-alive connection is closed");
    assert!(
        String::from_utf8_lossy(&answered).starts_with("HTTP/1.1 200"),
        "it was answered first"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the idle one was kept for its idle time first"
    );
}

#[tokio::test]
async fn connections_over_the_cap_are_answered_503_at_once_and_the_server_recovers() {
    let app = spawn_app_with(|config| {
        config.max_connections = 20;
        // The held connections send nothing: they must not time out while the test runs.
        config.header_read_timeout_secs = 60;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(TcpStream::connect(host_of(&app)).await.unwrap());
    }

    // Accepted after the 20 before it (the listen queue is first come, first served), so
    // it finds every slot taken.
    let mut over = TcpStream::connect(host_of(&app)).await.unwrap();
    // "At once": long before the 60 s a held connection may take to send its headers.
    let answer = read_until_closed(&mut over, Duration::from_secs(5))
        .await
        .expect("the connection over the cap is answered and closed at once");
    drop(held);
    wait_until("freed slots to serve again", || async {
        app.get("/healthz").await.status().as_u16() == 200
    })
    .await;

    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("retry-after: 1"), "{text}");
}

#[tokio::test]
async fn a_request_body_that_trickles_in_is_cut_off_at_the_body_deadline() {
    let app = spawn_app_with(|config| {
        config.stall_timeout_secs = 1;
        config.body_timeout_secs = 2;
    })
    .await;
    let mut trickle = TcpStream::connect(host_of(&app)).await.unwrap();
    trickle
        .write_all(
            b"POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nu",
        )
        .await
        .unwrap();
    let started = Instant::now();
    let feeder = tokio::spawn(async move {
        // A byte every half second: never a stall, never done.
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if trickle.write_all(b"x").await.is_err() {
                break;
            }
        }
        trickle
    });

    let mut trickle = tokio::time::timeout(Duration::from_secs(30), feeder)
        .await
        .expect("the feeder ends")
        .unwrap();
    let answer = read_until_closed(&mut trickle, Duration::from_secs(5)).await;

    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the body was refused at its deadline, not after all 1000 bytes: {:?}",
        started.elapsed()
    );
    let text = String::from_utf8_lossy(answer.as_deref().unwrap_or_default()).into_owned();
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");
}

#[tokio::test]
async fn a_client_that_stops_reading_its_answer_is_cut_off() {
    let app = spawn_app_with(|config| config.stall_timeout_secs = 1).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = socket
        .connect(host_of(&app).parse().unwrap())
        .await
        .unwrap();
    // The site's wasm (8 MB in a debug build) is larger than what the kernel buffers.
    slow.write_all(b"GET /pkg/sandbox-console.wasm HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();

    // Not a byte is read until the server has given up on the connection: its end of it
    // leaves the established state (closed by the server, the rest of the answer unsent).
    let (server, client) = (
        slow.peer_addr().unwrap().port(),
        slow.local_addr().unwrap().port(),
    );
    wait_until("the server to close its end", || {
        let closed = server_side_state(server, client) != Some(TCP_ESTABLISHED);
        async move { closed }
    })
    .await;
    let received = read_until_closed(&mut slow, Duration::from_secs(20))
        .await
        .expect("the server closed the connection");

    let text = String::from_utf8_lossy(&received[..received.len().min(400)]).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .expect("a length")
        .trim()
        .parse()
        .unwrap();
    assert!(
        received.len() < length,
        "cut off before the end: {} of {length} bytes",
        received.len()
    );
}

#[tokio::test]
async fn the_open_files_limit_is_raised_to_the_hard_limit_at_start() {
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    rlimit::setrlimit(rlimit::Resource::NOFILE, 256.min(hard), hard).unwrap();

    let _app = spawn_app().await;

    let (raised, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    assert_eq!(raised, hard);
    assert!(raised >= soft);
}

// 5. The sign-in lockout cannot be turned against the admin.

fn client_from(address: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address)
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

async fn sign_in(app: &TestApp, client: &reqwest::Client, password: &str) -> u16 {
    client
        .post(app.url("/auth/login"))
        .header("accept", "application/json")
        .form(&[("username", ADMIN), ("password", password)])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn wrong_passwords_from_a_stranger_never_lock_the_admin_out_of_another_address() {
    let app = spawn_app().await;
    let stranger = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    let admin = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)));

    for _ in 0..5 {
        assert_eq!(sign_in(&app, &stranger, "wrong password").await, 401);
    }
    let stranger_again = sign_in(&app, &stranger, PASSWORD).await;
    let real_admin = sign_in(&app, &admin, PASSWORD).await;

    assert_eq!(
        stranger_again, 429,
        "the guessing address is locked out of the account"
    );
    assert_eq!(real_admin, 200, "the admin elsewhere signs in");
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "select actor, action, detail from settings_audit where setting = 'auth.sign_in' order by id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 6, "five failures and one success: {rows:?}");
    assert!(rows[..5]
        .iter()
        .all(|r| r.0 == ADMIN && r.1 == "sign_in_failed" && r.2.contains("127.0.0.2")));
    assert_eq!((rows[5].0.as_str(), rows[5].1.as_str()), (ADMIN, "sign_in"));
    assert!(rows[5].2.contains("\"127.0.0.1\""), "{rows:?}");
}

#[tokio::test]
async fn many_addresses_guessing_one_account_are_slowed_but_its_known_address_is_not() {
    // A backoff no request on a loaded machine outlasts (1 s by default: CI saw sign-ins take
    // two seconds each, and the next address came after the wait was over).
    let app = spawn_app_with(|config| {
        config.login.max_failures_per_account = 4;
        config.login.account_backoff_secs = 600;
    })
    .await;
    let admin = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)));
    assert_eq!(sign_in(&app, &admin, PASSWORD).await, 200);
    for n in 10..16 {
        let guesser = client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)));
        let _ = sign_in(&app, &guesser, "wrong password").await;
    }

    let newcomer = sign_in(
        &app,
        &client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 99))),
        PASSWORD,
    )
    .await;
    let known = sign_in(
        &app,
        &client_from(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))),
        PASSWORD,
    )
    .await;

    assert_eq!(
        newcomer, 429,
        "past the account's ceiling, a new address waits"
    );
    assert_eq!(
        known, 200,
        "the address the admin signed in from is not slowed"
    );
}

// 6. Nothing in clear at rest.

/// Everything the database holds, as bytes: the SQLite files, or a dump of the app's
/// PostgreSQL schema (its rows, as PostgreSQL writes them out).
fn database_bytes(app: &TestApp) -> Vec<u8> {
    if crate::helpers::on_postgres() {
        let server = std::env::var(crate::helpers::POSTGRES_ENV).unwrap();
        let dump = std::process::Command::new("/usr/lib/postgresql/15/bin/pg_dump")
            .args(["--data-only", "--schema"])
            .arg(crate::helpers::postgres_schema_for(app.data_dir.path()))
            .arg(&server)
            .output()
            .unwrap();
        assert!(
            dump.status.success(),
            "{}",
            String::from_utf8_lossy(&dump.stderr)
        );
        assert!(!dump.stdout.is_empty());
        return dump.stdout;
    }
    std::fs::read_dir(app.data_dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("sandbox-console.db")
        })
        .flat_map(|e| std::fs::read(e.path()).unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_key_created_without_javascript_is_never_in_the_database_in_clear() {
    let app = spawn_app().await;
    app.login().await;

    let posted = app
        .client
        .post(app.url("/rpc/create_api_key"))
        .header("accept", "text/html")
        .form(&[("name", "agent"), ("execute", "on")])
        .send()
        .await
        .unwrap();
    let stored_meanwhile = database_bytes(&app);
    let page = app.get(&location(&posted)).await.text().await.unwrap();
    let key_at = page.find("sck_").expect("the page shows the key once");
    let key = &page[key_at..key_at + 44];
    let second_view = app.get("/admin/api-keys").await.text().await.unwrap();

    assert!(
        !stored_meanwhile
            .windows(key.len())
            .any(|w| w == key.as_bytes()),
        "the key waited for its page view sealed"
    );
    assert!(
        !database_bytes(&app)
            .windows(key.len())
            .any(|w| w == key.as_bytes()),
        "and is not in the database or its log afterwards"
    );
    assert!(!second_view.contains(key), "shown once");
    let works = app
        .post_json(
            "/api/v1/execute",
            key,
            &json!({"language": "python", "code": "def main():\n    return 1\n"}),
        )
        .await;
    assert_eq!(
        works.status().as_u16(),
        200,
        "the key shown is the real key"
    );
}

#[tokio::test]
async fn the_data_directory_and_database_files_are_private() {
    if crate::helpers::sqlite_only("the files' modes") {
        return;
    }
    let app = spawn_app_in_fresh_dir().await;
    app.login().await;

    let dir = app.data_dir.path().join("state");
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for name in [
        "sandbox-console.db",
        "sandbox-console.db-wal",
        "sandbox-console.db-shm",
        "secret.key",
    ] {
        assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
    }
}

async fn spawn_app_in_fresh_dir() -> TestApp {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("state");
    crate::helpers::spawn_app_in(parent, move |config| config.data_dir = dir).await
}

// 7. Nothing an admin sees is cached.

#[tokio::test]
async fn authenticated_pages_rpc_api_answers_and_exports_are_never_stored() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;
    app.login().await;

    let answers = [
        app.get("/").await,
        app.get("/admin/sandbox-settings").await,
        app.get("/admin/history/export.csv").await,
        app.get("/admin/history/export.json").await,
        app.call("sandbox_settings", &[]).await,
        app.get_with_key("/api/v1/providers", &key).await,
        app.get("/api/v1/openapi.json").await,
    ];

    for answer in answers {
        assert_eq!(
            answer
                .headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{}",
            answer.url()
        );
    }
}

// 8. `/run` keeps upstream errors to itself.

#[tokio::test]
async fn run_answers_provider_failures_without_the_upstream_text() {
    let executor = executor_manager::start(Some("right-token")).await;
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let runner = app.api_key("ragflow", &["execute"]).await;
    app.post_json(
        "/api/v1/admin/sandbox/config",
        &admin,
        &json!({"provider_type": "self_managed", "config": {"endpoint": executor.url(), "api_token": "wrong-token"}}),
    )
    .await;

    let answer: Value = app
        .post_json(
            "/run",
            &runner,
            &json!({"code_b64": "ZGVmIG1haW4oKTogcmV0dXJuIDEK", "language": "python"}),
        )
        .await
        .json()
        .await
        .unwrap();
    let recorded: String =
        sqlx::query_scalar("select error from execution order by id desc limit 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();

    assert_eq!(answer["exit_code"], -3, "{answer}");
    let stderr = answer["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("refused the console's credentials"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("401") && !stderr.contains("127.0.0.1"),
        "{stderr}"
    );
    assert!(
        recorded.contains("401") || recorded.contains("refused"),
        "the history keeps the detail: {recorded}"
    );
}

// 10. No setting is silently ignored.

async fn ragflow_config(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let response = app
        .post_json("/api/v1/admin/sandbox/config", key, &body)
        .await;
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn local_version(app: &TestApp) -> i64 {
    sqlx::query_scalar("select version from system_setting where name = 'sandbox.local'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn ragflows_admin_api_refuses_unknown_keys_and_accepts_ragflows_names() {
    let app = spawn_app().await;
    let key = app.api_key("ops", &["admin"]).await;
    let before = local_version(&app).await;

    let (too_long, out_of_range) = ragflow_config(
        &app,
        &key,
        json!({"provider_type": "local", "config": {"timeout": 99999}}),
    )
    .await;
    let (unknown, unknown_body) = ragflow_config(
        &app,
        &key,
        json!({"provider_type": "local", "config": {"work_dir": "/tmp/x", "timeout_secs": 20}}),
    )
    .await;
    let unchanged = local_version(&app).await;
    let (saved, saved_body) = ragflow_config(
        &app,
        &key,
        json!({"provider_type": "local", "config": {"timeout": 20, "max_memory_mb": 300, "python_bin": "/usr/bin/python3.11"}}),
    )
    .await;

    assert_eq!(too_long, 400, "{out_of_range}");
    assert!(
        out_of_range["message"]
            .as_str()
            .unwrap()
            .contains("timeout_secs"),
        "RAGFlow's timeout is our timeout_secs, and 99999 is out of its range: {out_of_range}"
    );
    assert_eq!(unknown, 400);
    let message = unknown_body["message"].as_str().unwrap();
    assert!(message.contains("Unknown settings: work_dir"), "{message}");
    assert!(
        message.contains("timeout_secs (also timeout)"),
        "names the known ones: {message}"
    );
    assert_eq!(unchanged, before, "nothing saved");
    let (typo, typo_body) = ragflow_config(
        &app,
        &key,
        json!({"provider_type": "local", "configs": {"timeout": 20}, "set_activ": false}),
    )
    .await;
    assert_eq!(typo, 400, "{typo_body}");
    assert!(
        typo_body["message"]
            .as_str()
            .unwrap()
            .contains("Unknown fields in the request body: configs, set_activ"),
        "{typo_body}"
    );
    assert_eq!(saved, 200, "{saved_body}");
    assert_eq!(saved_body["data"]["config"]["timeout_secs"], 20);
    assert_eq!(saved_body["data"]["config"]["memory_mb"], 300);
    assert_eq!(
        saved_body["data"]["config"]["python_path"],
        "/usr/bin/python3.11"
    );
    let (pool, pool_body) = ragflow_config(
        &app,
        &key,
        json!({"provider_type": "self_managed", "set_active": false, "config": {"endpoint": "http://executor:9385", "executor_manager_pool_size": 3}}),
    )
    .await;
    assert_eq!(pool, 200, "{pool_body}");
    assert_eq!(
        pool_body["data"]["config"]["pool_size"], 3,
        "RAGFlow's executor pool size caps the runs sent at once"
    );
}

#[tokio::test]
async fn the_console_form_refuses_keys_it_does_not_have() {
    let app = spawn_app().await;
    app.login().await;

    let answer = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "local"),
                ("expected_version", "1"),
                ("values[timeout_secs]", "20"),
                ("values[bogus]", "1"),
            ],
        )
        .await;

    assert!(
        answer["Invalid"]["errors"]["_form"]
            .as_str()
            .unwrap()
            .contains("Unknown settings: bogus"),
        "{answer}"
    );
    assert_eq!(local_version(&app).await, 1);
}

// 11. The smaller ones.

#[tokio::test]
async fn server_functions_answer_413_for_huge_bodies_and_400_for_bad_arguments() {
    let app = spawn_app().await;
    app.login().await;
    let huge = "a".repeat(5 * 1024 * 1024);

    let too_large = app
        .call("run_trial", &[("language", "python"), ("code", &huge)])
        .await;
    let big_page = app
        .call("execution_history", &[("page", "99999999999")])
        .await;
    let negative = app.call("settings_audit", &[("page", "-1")]).await;

    assert_eq!(too_large.status().as_u16(), 413);
    assert_eq!(big_page.status().as_u16(), 400);
    assert_eq!(negative.status().as_u16(), 400);
}

#[tokio::test]
async fn csv_exports_neutralise_formula_cells() {
    let app = spawn_app().await;
    app.login().await;
    sqlx::query(
        "insert into execution (caller, caller_kind, source, provider, language, status, duration_ms, code_sha256, input_bytes, output_bytes) \
         values ('=HYPERLINK(\"http://evil.example\")', 'cli', 'cli', 'local', 'python', 'success', 1, 'x', 1, 1)",
    )
    .execute(&app.pool)
    .await
    .unwrap();

    let csv = app
        .get("/admin/history/export.csv")
        .await
        .text()
        .await
        .unwrap();

    assert!(csv.contains("\"'=HYPERLINK("), "{csv}");
    assert!(
        !csv.contains(",=HYPERLINK") && !csv.contains(",\"=HYPERLINK"),
        "{csv}"
    );
}

#[tokio::test]
async fn the_origin_must_be_the_public_url_not_whatever_the_host_header_says() {
    let app =
        spawn_app_with(|config| config.public_url = Some("https://console.example".into())).await;
    let post = |origin: &'static str, host: &'static str| {
        app.client
            .post(app.url("/auth/login"))
            .header("origin", origin)
            .header("host", host)
            .header("accept", "application/json")
            .form(&[("username", ADMIN), ("password", PASSWORD)])
            .send()
    };

    let spoofed = post("http://evil.example", "evil.example").await.unwrap();
    let wrong_scheme = post("http://console.example", "console.example")
        .await
        .unwrap();
    let right = post("https://console.example", "console.example")
        .await
        .unwrap();

    assert_eq!(
        spoofed.status().as_u16(),
        403,
        "Origin and Host agreeing is not enough"
    );
    assert_eq!(wrong_scheme.status().as_u16(), 403);
    assert_eq!(right.status().as_u16(), 200);
}
