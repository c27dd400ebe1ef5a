//! Sandbox sessions over our REST API, on the local provider: state kept, streaming, files and
//! commands, caps, ownership, idle reaping, history rows, and nothing left after close or stop.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::Row;

use crate::{
    helpers::{spawn_app, spawn_app_stoppable, spawn_app_with, TestApp},
    wait::{descendants_with, wait_until},
};

/// The first words of the session driver, which its command line carries.
const DRIVER: &str = "sandbox-console session driver";

async fn open(app: &TestApp, key: &str) -> String {
    let response = app.post_json("/api/v1/sessions", key, &json!({})).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["provider"], "local");
    body["id"].as_str().unwrap().to_owned()
}

async fn cell(app: &TestApp, key: &str, id: &str, code: &str) -> Value {
    let response = app
        .post_json(
            &format!("/api/v1/sessions/{id}/execute"),
            key,
            &json!({ "code": code }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

#[tokio::test]
async fn cells_keep_state_and_stream_their_output() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;
    let id = open(&app, &key).await;

    let first = cell(&app, &key, &id, "x = 41\nprint('hello')").await;
    let second = cell(&app, &key, &id, "x + 1").await;

    assert_eq!(first["status"], "success", "{first}");
    assert_eq!(first["stdout"], "hello\n");
    assert_eq!(second["results"][0]["text"], "42", "{second}");
    assert_eq!(second["results"][0]["is_main_result"], true);
    assert_eq!(second["execution_count"], 2);

    let streamed = app
        .client
        .post(app.url(&format!("/api/v1/sessions/{id}/execute")))
        .bearer_auth(&key)
        .header("Accept", "application/x-ndjson")
        .json(&json!({"code": "import sys\nprint('out')\nprint('err', file=sys.stderr)\nx * 2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.headers()["content-type"], "application/x-ndjson");
    let text = streamed.text().await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Each stream in order (the two streams are read apart, so they may interleave either
    // way); the result after everything printed; the end last.
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let joined = |kind: &str| -> String {
        lines
            .iter()
            .filter(|l| l["type"] == kind)
            .map(|l| l["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(joined("stdout"), "out\n", "{text}");
    assert_eq!(joined("stderr"), "err\n", "{text}");
    assert_eq!(types[types.len() - 2..], ["result", "end"], "{text}");
    let end = lines.last().unwrap();
    assert_eq!(lines[lines.len() - 2]["text"], "82");
    assert_eq!(end["status"], "success");
    assert_eq!(end["execution_count"], 3);
    assert_eq!(end["stdout"], "out\n");

    let error = cell(&app, &key, &id, "raise KeyError('k')").await;
    assert_eq!(error["status"], "program_error");
    assert_eq!(error["error"]["name"], "KeyError");

    let listed: Value = app
        .get_with_key("/api/v1/sessions", &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["sessions"][0]["id"], id.as_str());
    assert_eq!(listed["sessions"][0]["cells"], 4);

    // Every cell is a history row tied to the session.
    let rows =
        sqlx::query("select source, status from execution where session_id = $1 order by id")
            .bind(&id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let rows: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
        .collect();
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(rows.iter().all(|(source, _)| source == "session"));
    assert_eq!(rows[3].1, "program_error");

    let closed = app
        .client
        .delete(app.url(&format!("/api/v1/sessions/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), StatusCode::NO_CONTENT);
    let gone = app
        .get_with_key(&format!("/api/v1/sessions/{id}"), &key)
        .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn files_and_commands_go_through_the_session() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;
    let id = open(&app, &key).await;
    let bytes: Vec<u8> = (0..=255).collect();

    let put = app
        .client
        .put(app.url(&format!("/api/v1/sessions/{id}/files?path=in/all.bin")))
        .bearer_auth(&key)
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::OK);
    let seen = cell(&app, &key, &id, "len(open('in/all.bin','rb').read())").await;
    assert_eq!(seen["results"][0]["text"], "256");
    let got = app
        .get_with_key(
            &format!("/api/v1/sessions/{id}/files?path=/home/user/in/all.bin"),
            &key,
        )
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(got.to_vec(), bytes);
    let listed: Value = app
        .get_with_key(&format!("/api/v1/sessions/{id}/files/list?path=in"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["entries"][0]["name"], "all.bin", "{listed}");
    assert_eq!(listed["entries"][0]["size"], 256);

    let ran: Value = app
        .post_json(
            &format!("/api/v1/sessions/{id}/commands"),
            &key,
            &json!({"shell": "wc -c < in/all.bin; echo oops >&2; exit 4"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ran["exit_code"], 4, "{ran}");
    assert_eq!(ran["stdout"].as_str().unwrap().trim(), "256");
    assert_eq!(ran["stderr"], "oops\n");
    let refused = app
        .post_json(&format!("/api/v1/sessions/{id}/commands"), &key, &json!({}))
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);

    let removed = app
        .client
        .delete(app.url(&format!("/api/v1/sessions/{id}/files?path=in/all.bin")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let missing = app
        .get_with_key(
            &format!("/api/v1/sessions/{id}/files?path=in/all.bin"),
            &key,
        )
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn sessions_are_their_keys_alone_and_capped() {
    let app = spawn_app_with(|config| {
        config.sandbox_sessions.max_per_key = 1;
        config.sandbox_sessions.max_total = 2;
    })
    .await;
    let alice = app.api_key("alice", &["execute"]).await;
    let bob = app.api_key("bob", &["execute"]).await;
    let carol = app.api_key("carol", &["execute"]).await;
    let id = open(&app, &alice).await;
    cell(&app, &alice, &id, "secret = 'alice'").await;

    let second = app.post_json("/api/v1/sessions", &alice, &json!({})).await;
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(second.headers().contains_key("retry-after"));
    let bobs = open(&app, &bob).await;
    let full = app.post_json("/api/v1/sessions", &carol, &json!({})).await;
    assert_eq!(full.status(), StatusCode::TOO_MANY_REQUESTS);

    for (method, path) in [
        ("get", format!("/api/v1/sessions/{id}")),
        ("post", format!("/api/v1/sessions/{id}/execute")),
        ("get", format!("/api/v1/sessions/{id}/files?path=x")),
        ("delete", format!("/api/v1/sessions/{id}")),
    ] {
        let request = match method {
            "get" => app.client.get(app.url(&path)),
            "delete" => app.client.delete(app.url(&path)),
            _ => app
                .client
                .post(app.url(&path))
                .json(&json!({"code": "secret"})),
        };
        let answer = request.bearer_auth(&bob).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{method} {path}");
    }
    let theirs: Value = app
        .get_with_key("/api/v1/sessions", &bob)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(theirs["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(theirs["sessions"][0]["id"], bobs.as_str());
    let own = cell(&app, &bob, &bobs, "'secret' in globals()").await;
    assert_eq!(own["results"][0]["text"], "False");
}

#[tokio::test]
async fn anonymous_callers_get_401_from_every_session_endpoint() {
    let app = spawn_app().await;
    let paths = [
        ("post", "/api/v1/sessions"),
        ("get", "/api/v1/sessions"),
        ("get", "/api/v1/sessions/x"),
        ("delete", "/api/v1/sessions/x"),
        ("post", "/api/v1/sessions/x/execute"),
        ("post", "/api/v1/sessions/x/interrupt"),
        ("post", "/api/v1/sessions/x/commands"),
        ("get", "/api/v1/sessions/x/files?path=a"),
        ("put", "/api/v1/sessions/x/files?path=a"),
        ("delete", "/api/v1/sessions/x/files?path=a"),
        ("get", "/api/v1/sessions/x/files/list?path=a"),
    ];
    for (method, path) in paths {
        let url = app.url(path);
        let request = match method {
            "get" => app.client.get(url),
            "delete" => app.client.delete(url),
            "put" => app.client.put(url).body("x"),
            _ => app.client.post(url).json(&json!({"code": "1"})),
        };
        let status = request.send().await.unwrap().status();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
}

#[tokio::test]
async fn an_idle_session_is_reaped_and_a_stop_closes_the_rest() {
    let data_dir = tempfile::tempdir().unwrap();
    let (app, stop, stopped) = spawn_app_stoppable(data_dir, |config| {
        config.sandbox_sessions.idle_secs = 1;
    })
    .await;
    let key = app.api_key("agent", &["execute"]).await;
    let idle = open(&app, &key).await;
    let token = format!("{}", 8_000_000 + rand::random::<u32>() % 1_000_000);
    cell(
        &app,
        &key,
        &idle,
        &format!("import subprocess\nchild = subprocess.Popen(['sleep', '{token}'])"),
    )
    .await;

    // The reaper closes it about a second after its last use: wait for that, not a sleep.
    let reaped = async {
        loop {
            let status = app
                .get_with_key(&format!("/api/v1/sessions/{idle}"), &key)
                .await
                .status();
            if status == StatusCode::NOT_FOUND {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(crate::wait::PATIENCE, reaped)
        .await
        .expect("the idle session is reaped");
    wait_until("the reaped session's processes to be gone", || async {
        descendants_with(&token) == 0
    })
    .await;

    // A session in the middle of a cell ends when the console stops, and its cell answers.
    let busy = open(&app, &key).await;
    let runner = {
        let (client, url, key) = (
            app.client.clone(),
            app.url(&format!("/api/v1/sessions/{busy}/execute")),
            key.clone(),
        );
        tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(key)
                .json(&json!({"code": "import time\nwhile True: time.sleep(0.05)", "timeout": 600}))
                .send()
                .await
        })
    };
    wait_until("the session's driver", || async {
        descendants_with(DRIVER) == 1
    })
    .await;
    stop.send(()).unwrap();
    stopped.await.unwrap().unwrap();
    let answered = runner.await.unwrap();
    if let Ok(answer) = answered {
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        assert_ne!(body["status"], "success", "{body}");
    }
    wait_until("no session driver after the stop", || async {
        descendants_with(DRIVER) == 0
    })
    .await;
}

#[tokio::test]
async fn the_sessions_page_lists_open_sessions_and_closes_one_without_javascript() {
    let app = spawn_app().await;
    let key = app.api_key("notebook-agent", &["execute"]).await;
    let id = open(&app, &key).await;
    cell(&app, &key, &id, "y = 1").await;

    let anonymous = app.get("/admin/sessions").await;
    assert_ne!(
        anonymous.status(),
        StatusCode::OK,
        "the page needs a signed-in admin"
    );
    let refused = app.call("list_sandbox_sessions", &[]).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    app.login().await;
    let page = app.text_of("/admin/sessions").await;
    assert!(
        page.contains(&format!("data-testid=\"session-{id}\"")),
        "{page}"
    );
    assert!(page.contains("notebook-agent"));
    let listed = app.call_ok("list_sandbox_sessions", &[]).await;
    assert_eq!(listed[0]["cells"], 1);
    assert_eq!(listed[0]["provider"], "local");
    let dashboard = app.text_of("/").await;
    assert!(
        dashboard.contains("data-testid=\"sandbox-sessions\">1<"),
        "the dashboard counts it"
    );
    let chinese = app
        .get_in("/admin/sessions", "zh-CN")
        .await
        .text()
        .await
        .unwrap();
    assert!(chinese.contains("会话"), "the page speaks Chinese too");

    // The session's cells on the history, and the session on each cell's page.
    let stranger = app.api_key("someone-else", &["execute"]).await;
    let other = open(&app, &stranger).await;
    assert_ne!(other, id);
    let history = app.text_of(&format!("/admin/history?session={id}")).await;
    assert_eq!(
        history.matches("data-testid=\"history-row\"").count(),
        1,
        "{history}"
    );
    let row: i64 = sqlx::query("select id from execution where session_id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
        .get(0);
    let detail = app.text_of(&format!("/admin/history/{row}")).await;
    assert!(detail.contains("data-testid=\"run-session\""), "{detail}");
    assert!(detail.contains(&id));

    // JavaScript off: the link asks to confirm, the form closes it and comes back.
    let confirm = app.text_of(&format!("/admin/sessions?close={id}")).await;
    assert!(confirm.contains("data-testid=\"confirm-close\""));
    let closed = app
        .client
        .post(app.url("/rpc/close_sandbox_session"))
        .header("accept", "text/html")
        .form(&[("id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_redirection() || closed.status().is_success());
    let gone = app
        .get_with_key(&format!("/api/v1/sessions/{id}"), &key)
        .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    let page = app.text_of("/admin/sessions").await;
    assert!(!page.contains(&format!("session-{id}")), "{page}");
    assert!(
        page.contains(&format!("session-{other}")),
        "the other stays open"
    );
    let audited = sqlx::query("select count(*) from settings_audit where action = 'session_close'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
        .get::<i64, _>(0);
    assert_eq!(audited, 1);
}

/// Processes anywhere on the machine whose command line holds `token` (a number this test
/// drew: only its own sessions can have it).
fn processes_with(token: &str) -> usize {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| {
                    let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                    String::from_utf8_lossy(&cmdline).contains(token)
                })
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn a_console_killed_with_a_session_open_leaves_no_process() {
    use std::process::Stdio;

    let data_dir = tempfile::tempdir().unwrap();
    let mut console = crate::helpers::console_command(data_dir.path());
    console
        .args(["--listen", "127.0.0.1:0"])
        .env("ADMIN_USERNAME", crate::helpers::ADMIN)
        .env("ADMIN_PASSWORD", crate::helpers::PASSWORD)
        .env("SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT", "false")
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = console.spawn().unwrap();
    let address = crate::helpers::listening_address(&mut child);
    let pool = crate::helpers::open_database(data_dir.path()).await;
    let remote = TestApp::remote(&address, pool);
    remote.login().await;
    let key = remote.api_key("agent", &["execute"]).await;
    let id = open(&remote, &key).await;
    let token = format!("{}", 9_000_000 + rand::random::<u32>() % 999_999);
    cell(
        &remote,
        &key,
        &id,
        &format!("import subprocess\nchild = subprocess.Popen(['sleep', '{token}'])"),
    )
    .await;
    assert_eq!(processes_with(&token), 1, "the cell's child runs");

    child.kill().unwrap();
    child.wait().unwrap();

    // The driver reads its requests from the dead console: it ends, and its sandbox with it.
    wait_until("the killed console's session to be gone", || async {
        processes_with(&token) == 0
    })
    .await;
}
