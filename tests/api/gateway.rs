//! The REST execute API: `POST /api/v1/execute`, `GET /api/v1/providers`, the OpenAPI
//! document, and API-key authentication (401 / 403 / 429) in front of all of them.

use serde_json::{json, Value};

use crate::{
    helpers::{spawn_app, spawn_app_with, spawn_app_with_scripted, TestApp},
    metrics::metric,
    scripted::GOOD_TOKEN,
    wait::wait_until,
};

const HELLO: &str = "def main(name):\n    print('hi', name)\n    return {'hello': name}\n";

/// POST /api/v1/execute with `key`; the status and the JSON answer (or its text).
pub(crate) async fn execute(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let response = app.post_json("/api/v1/execute", key, &body).await;
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Makes the scripted provider active (through RAGFlow's admin API, with an admin key).
async fn activate_scripted(app: &TestApp) -> String {
    let admin = app.api_key("ops", &["admin"]).await;
    let body = json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": GOOD_TOKEN}});
    let response = app
        .post_json("/api/v1/admin/sandbox/config", &admin, &body)
        .await;
    assert_eq!(
        response.status().as_u16(),
        200,
        "{}",
        response.text().await.unwrap()
    );
    app.api_key("agent", &["execute"]).await
}

#[tokio::test]
async fn an_agent_runs_python_and_javascript_with_an_execute_key() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;

    let (status, python) = execute(
        &app,
        &key,
        json!({"language": "python", "code": HELLO, "arguments": {"name": "Ada"}}),
    )
    .await;
    let (_, javascript) = execute(
        &app,
        &key,
        json!({"language": "javascript", "code": "async function main({n}) { return n * 2; }", "arguments": {"n": 21}}),
    )
    .await;

    assert_eq!(status, 200, "{python}");
    assert_eq!(python["status"], "success");
    assert_eq!(python["stdout"], "hi Ada\n");
    assert_eq!(python["exit_code"], 0);
    assert_eq!(python["result"]["value"], json!({"hello": "Ada"}));
    assert_eq!(python["artifacts"], json!([]));
    assert_eq!(python["provider"], "local");
    assert!(python["execution_time"].as_f64().unwrap() > 0.0);
    assert_eq!(javascript["result"]["value"], 42, "{javascript}");
}

#[tokio::test]
async fn a_program_that_times_out_is_a_normal_200_result() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;

    let (status, body) = execute(
        &app,
        &key,
        json!({"language": "python", "code": "while True:\n    pass\n", "timeout": 1}),
    )
    .await;

    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "timeout");
}

#[tokio::test]
async fn invalid_input_gets_400_with_a_message_that_says_why() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;
    let cases = [
        (
            json!({"language": "ruby", "code": "x"}),
            "python or javascript",
        ),
        (
            json!({"language": "python", "code": "x", "arguments": [1, 2]}),
            "JSON object",
        ),
        (
            json!({"language": "python", "code": "x", "arguments": "a=1"}),
            "JSON object",
        ),
        (json!({"language": "python"}), "code is required"),
        (
            json!({"language": "python", "code": "x", "timeout": 601}),
            "from 1 to 600",
        ),
        (
            json!({"language": "python", "code": "#".repeat(1024 * 1024 + 1)}),
            "the limit is",
        ),
    ];

    for (body, expected) in cases {
        let (status, answer) = execute(&app, &key, body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["kind"], "invalid_input");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(expected),
            "{message:?} should mention {expected:?}"
        );
    }
    let raw = app
        .client
        .post(app.url("/api/v1/execute"))
        .bearer_auth(&key)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400);
}

#[tokio::test]
async fn anonymous_unknown_revoked_and_wrong_scope_keys_are_refused() {
    let app = spawn_app().await;
    let admin_only = app.api_key("ops", &["admin"]).await;
    let revoked = app.api_key("old", &["execute"]).await;
    let body = json!({"language": "python", "code": HELLO, "arguments": {"name": "x"}});
    let admin = app.sibling();
    admin.login().await;
    let keys = admin.call_ok("list_api_keys", &[]).await;
    let old_id = keys
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "old")
        .unwrap()["id"]
        .to_string();
    admin.call_ok("revoke_api_key", &[("id", &old_id)]).await;

    let cases = [
        ("", 401, "unauthenticated"),
        ("sck_not-a-real-key-at-all", 401, "unauthenticated"),
        (revoked.as_str(), 401, "unauthenticated"),
        (admin_only.as_str(), 403, "forbidden"),
    ];
    for (key, status, kind) in cases {
        let (got, answer) = execute(&app, key, body.clone()).await;
        assert_eq!(
            (got, answer["error"]["kind"].as_str()),
            (status, Some(kind)),
            "{key:?}: {answer}"
        );
    }
    let providers = app.get_with_key("/api/v1/providers", "").await;
    assert_eq!(providers.status().as_u16(), 401);
    let rows: i64 = sqlx::query_scalar("select count(*) from execution")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0, "nothing ran for a refused caller");
}

#[tokio::test]
async fn a_signed_in_admin_session_is_not_an_api_key() {
    let app = spawn_app().await;
    app.login().await;

    let (status, _) = execute(&app, "", json!({"language": "python", "code": "x"})).await;

    assert_eq!(status, 401);
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    let app = spawn_app_with(|c| c.api_max_body_bytes = 64 * 1024).await;
    let key = app.api_key("agent", &["execute"]).await;

    let (status, answer) = execute(
        &app,
        &key,
        json!({"language": "python", "code": "#".repeat(100 * 1024)}),
    )
    .await;

    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["error"]["kind"], "payload_too_large");
}

#[tokio::test]
async fn a_key_over_its_rate_limit_gets_429_with_retry_after() {
    let app = spawn_app_with(|c| c.api_rate_limit = 2).await;
    let key = app.api_key("agent", &["execute"]).await;
    for _ in 0..2 {
        let response = app.get_with_key("/api/v1/providers", &key).await;
        assert_eq!(response.status().as_u16(), 200);
    }

    let response = app.get_with_key("/api/v1/providers", &key).await;

    assert_eq!(response.status().as_u16(), 429);
    let wait: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["kind"], "rate_limited");
}

#[tokio::test]
async fn provider_failures_map_to_429_502_and_504() {
    let app = spawn_app_with_scripted(|_| {}).await;
    let key = activate_scripted(&app).await;
    let cases = [
        ("BUSY", 429, "pool_busy"),
        ("UNREACHABLE", 502, "provider_unreachable"),
        ("FAILS", 502, "provider_failed"),
        ("SLOW_PROVIDER", 504, "provider_timeout"),
    ];

    for (code, status, kind) in cases {
        let response = app
            .post_json(
                "/api/v1/execute",
                &key,
                &json!({"language": "python", "code": code}),
            )
            .await;
        let got = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").cloned();
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            (got, body["error"]["kind"].as_str()),
            (status, Some(kind)),
            "{code}: {body}"
        );
        assert!(
            !body.to_string().contains("10.9.8.7"),
            "5xx bodies keep internals out"
        );
        if status == 429 {
            assert_eq!(retry_after.unwrap(), "3");
        }
    }
    let (status, timeout) = execute(
        &app,
        &key,
        json!({"language": "python", "code": "PROGRAM_TIMEOUT"}),
    )
    .await;
    assert_eq!((status, timeout["status"].as_str()), (200, Some("timeout")));
    let (status, unsupported) =
        execute(&app, &key, json!({"language": "javascript", "code": "x"})).await;
    assert_eq!(status, 400, "{unsupported}");
}

#[tokio::test]
async fn providers_lists_the_active_one_with_languages_and_health() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;

    let response = app.get_with_key("/api/v1/providers", &key).await;

    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["active"]["kind"], "local");
    assert_eq!(body["active"]["languages"], json!(["python", "javascript"]));
    assert_eq!(body["active"]["healthy"], true, "{body}");
    assert_eq!(body["providers"][0]["active"], true);
}

#[tokio::test]
async fn every_execution_is_recorded_with_its_caller() {
    let app = spawn_app().await;
    let key = app.api_key("ragflow-prod", &["execute"]).await;

    execute(
        &app,
        &key,
        json!({"language": "python", "code": HELLO, "arguments": {"name": "Ada"}}),
    )
    .await;
    execute(
        &app,
        &key,
        json!({"language": "python", "code": "raise SystemExit(3)"}),
    )
    .await;

    let rows: Vec<(String, String, String, String, String, Option<i64>)> = sqlx::query_as(
        "select caller, caller_kind, source, provider, status, exit_code from execution order by id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        [
            (
                "ragflow-prod".into(),
                "api_key".into(),
                "rest".into(),
                "local".into(),
                "success".into(),
                Some(0)
            ),
            (
                "ragflow-prod".into(),
                "api_key".into(),
                "rest".into(),
                "local".into(),
                "program_error".into(),
                Some(3)
            ),
        ]
    );
    let hash: String = sqlx::query_scalar("select code_sha256 from execution order by id limit 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(hash.len(), 64);
}

#[tokio::test]
async fn the_openapi_document_describes_every_api_route() {
    let app = spawn_app().await;
    let key = app.api_key("agent", &["execute"]).await;

    let anonymous = app.get_with_key("/api/v1/openapi.json", "").await;
    let response = app.get_with_key("/api/v1/openapi.json", &key).await;

    assert_eq!(anonymous.status().as_u16(), 401);
    assert_eq!(response.status().as_u16(), 200);
    let doc: Value = response.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    // Every route the server implements, with its methods...
    let implemented = [
        ("/api/v1/execute", "post"),
        ("/api/v1/providers", "get"),
        ("/api/v1/environments", "get"),
        ("/run", "post"),
        ("/healthz", "get"),
        ("/api/v1/openapi.json", "get"),
        ("/api/v1/admin/sandbox/providers", "get"),
        (
            "/api/v1/admin/sandbox/providers/{provider_id}/schema",
            "get",
        ),
        ("/api/v1/admin/sandbox/config", "get"),
        ("/api/v1/admin/sandbox/config", "post"),
        ("/api/v1/admin/sandbox/test", "post"),
        ("/api/v1/sessions", "post"),
        ("/api/v1/sessions", "get"),
        ("/api/v1/sessions/{id}", "get"),
        ("/api/v1/sessions/{id}", "delete"),
        ("/api/v1/sessions/{id}/execute", "post"),
        ("/api/v1/sessions/{id}/interrupt", "post"),
        ("/api/v1/sessions/{id}/files", "get"),
        ("/api/v1/sessions/{id}/files", "put"),
        ("/api/v1/sessions/{id}/files", "delete"),
        ("/api/v1/sessions/{id}/files/list", "get"),
        ("/api/v1/sessions/{id}/commands", "post"),
        ("/e2b/v2/sandboxes", "post"),
        ("/e2b/v2/sandboxes", "get"),
        ("/e2b/v2/sandboxes/{id}/connect", "post"),
        ("/e2b/sandboxes/{id}", "get"),
        ("/e2b/sandboxes/{id}", "delete"),
        ("/e2b/sandboxes/{id}/timeout", "post"),
        ("/e2b/sandboxes/{id}/pause", "post"),
        ("/e2b/sandboxes/{id}/resume", "post"),
        ("/e2b/sandbox/execute", "post"),
        ("/e2b/sandbox/contexts", "post"),
        ("/e2b/sandbox/contexts", "get"),
        ("/e2b/sandbox/contexts/{id}", "delete"),
        ("/e2b/sandbox/contexts/{id}/restart", "post"),
        ("/e2b/sandbox/health", "get"),
        ("/e2b/sandbox/files", "get"),
        ("/e2b/sandbox/files", "post"),
        ("/e2b/sandbox/{service}/{method}", "post"),
        ("/dify/v1/sandbox/run", "post"),
        ("/dify/v1/sandbox/dependencies", "get"),
        ("/dify/health", "get"),
    ];
    for (path, method) in implemented {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} is documented"
        );
    }
    // ...and every documented route answers (not 404/405): the document cannot list ghosts.
    let mut documented = 0;
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            documented += 1;
            let url = app.url(&path.replace("{provider_id}", "local").replace("{id}", "x"));
            let request = match method.as_str() {
                "get" => app.client.get(url),
                "post" => app.client.post(url).json(&json!({})),
                "put" => app.client.put(url).body("x"),
                "delete" => app.client.delete(url),
                other => panic!("unexpected method {other}"),
            };
            let status = request.send().await.unwrap().status().as_u16();
            assert!(
                status != 404 && status != 405,
                "{method} {path} answered {status}"
            );
        }
    }
    assert_eq!(
        documented,
        implemented.len(),
        "no undocumented extras, no missing routes"
    );
    assert!(doc["components"]["securitySchemes"]["api_key"].is_object());

    // A standard validator takes it (client generators need unique operation ids, too).
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), doc.to_string()).unwrap();
    let checked = std::process::Command::new(crate::pyclients::python())
        .args(["-m", "openapi_spec_validator"])
        .arg(file.path())
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "openapi-spec-validator: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let mut ids: Vec<&str> = paths
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|operation| operation["operationId"].as_str())
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "operation ids are unique: {ids:?}");
}

#[tokio::test]
async fn a_signed_in_admin_can_read_the_openapi_document() {
    let app = spawn_app().await;
    app.login().await;

    let response = app.get("/api/v1/openapi.json").await;

    assert_eq!(response.status().as_u16(), 200);
}

#[tokio::test]
async fn unknown_api_paths_answer_404_in_json() {
    let app = spawn_app().await;

    let response = app.get("/api/v1/nothing-here").await;

    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["kind"], "not_found");
}

#[tokio::test]
async fn a_saturated_local_provider_answers_429_and_run_answers_minus_10() {
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let saved = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "local", "config": {"max_concurrent_runs": 1, "queue_wait_secs": 0}}),
        )
        .await;
    assert_eq!(saved.status().as_u16(), 200);
    let key = app.api_key("agent", &["execute"]).await;
    // Long enough that the refusals, answered at once, surely come while it runs.
    let slow = json!({"language": "python", "code": "import time\ndef main():\n    time.sleep(8)\n    return 1\n"});
    let running = async {
        wait_until("the slow run to take the only slot", || async {
            metric(&app, &admin, "sandbox_pool_busy{provider=\"local\"}").await == 1.0
        })
        .await
    };
    let quick = json!({"language": "python", "code": "def main():\n    return 2\n"});

    let (first, (second, ragflow)) = tokio::join!(execute(&app, &key, slow), async {
        running.await;
        let second = async {
            let response = app.post_json("/api/v1/execute", &key, &quick).await;
            let retry_after = response.headers().get("retry-after").cloned();
            (
                response.status().as_u16(),
                retry_after,
                response.json::<Value>().await.unwrap(),
            )
        };
        let ragflow = async {
            let code = base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                "def main():\n    return 3\n",
            );
            app.post_json("/run", &key, &json!({"code_b64": code}))
                .await
                .json::<Value>()
                .await
                .unwrap()
        };
        tokio::join!(second, ragflow)
    });

    assert_eq!(
        (first.0, first.1["result"]["value"].as_i64()),
        (200, Some(1)),
        "{}",
        first.1
    );
    let (status, retry_after, body) = second;
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (429, Some("pool_busy")),
        "{body}"
    );
    assert!(retry_after.is_some());
    assert_eq!(ragflow["exit_code"], -10, "{ragflow}");
    let (after, body) = execute(&app, &key, quick).await;
    assert_eq!(
        (after, body["result"]["value"].as_i64()),
        (200, Some(2)),
        "a slot frees up after the run"
    );
}
