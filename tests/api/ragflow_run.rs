//! RAGFlow's executor-manager API (`POST /run`, `GET /healthz`) on the wire. `ExecutorClient`
//! is written only from the contract in the research notes (§3.2; baseline §4–§5), as
//! RAGFlow's `self_managed` provider calls it; it runs RAGFlow's executor test cases.

use base64::{engine::general_purpose::STANDARD, Engine};
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// Every key of RAGFlow's `CodeExecutionResult` at HEAD; all always present.
const RESULT_KEYS: [&str; 12] = [
    "status",
    "stdout",
    "stderr",
    "exit_code",
    "detail",
    "time_used_ms",
    "memory_used_kb",
    "resource_limit_type",
    "unauthorized_access_type",
    "runtime_error_type",
    "artifacts",
    "result",
];

/// RAGFlow's side of the wire: `{code_b64, language, arguments}` in, the result dict out.
struct ExecutorClient<'a> {
    app: &'a TestApp,
    token: String,
}

impl ExecutorClient<'_> {
    async fn run(&self, code: &str, language: &str, arguments: Value) -> (u16, Value) {
        let body = json!({
            "code_b64": STANDARD.encode(code.as_bytes()),
            "language": language,
            "arguments": arguments,
        });
        let response = self
            .app
            .client
            .post(self.app.url("/run"))
            .header("Content-Type", "application/json")
            .header("X-Sandbox-Token", &self.token)
            .json(&body)
            .send()
            .await
            .expect("POST /run");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

/// An app whose local provider stops programs after 2 s (the executor's default is 10 s).
async fn app_with_client() -> (TestApp, String) {
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let response = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "local", "config": {"timeout_secs": 2}}),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let key = app.api_key("ragflow", &["execute"]).await;
    (app, key)
}

fn assert_every_key(body: &Value) {
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    let mut expected: Vec<_> = RESULT_KEYS.iter().map(|k| k.to_string()).collect();
    expected.sort();
    let mut got = keys;
    got.sort();
    assert_eq!(got, expected, "{body}");
}

#[tokio::test]
async fn ragflows_executor_cases_run_through_run() {
    let (app, key) = app_with_client().await;
    let client = ExecutorClient {
        app: &app,
        token: key,
    };

    let (status, hello) = client
        .run(
            "def main():\n    print('Hello, World!')\n    return None\n",
            "python",
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    assert_every_key(&hello);
    assert_eq!(hello["status"], "success");
    assert_eq!(
        hello["stdout"], "Hello, World!\n",
        "only printed text in stdout"
    );
    assert_eq!(hello["exit_code"], 0);
    assert_eq!(
        hello["result"],
        json!({"present": true, "value": null, "type": "json"})
    );
    assert_eq!(hello["artifacts"], json!([]));
    assert!(hello["time_used_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(hello["memory_used_kb"], Value::Null);

    let (_, python) = client
        .run(
            "import json, math\ndef main(name, flag):\n    return {'got': flag, 'type': type(flag).__name__, 'sqrt': math.sqrt(16), 'name': name}\n",
            "python",
            json!({"name": "Ada", "flag": true}),
        )
        .await;
    assert_eq!(
        python["result"]["value"],
        json!({"got": true, "type": "bool", "sqrt": 4.0, "name": "Ada"}),
        "{python}"
    );

    let (_, node) = client
        .run(
            "function main(args) {\n  console.log('node');\n  return {got: args.name, t: typeof args.name};\n}\nmodule.exports = { main };\n",
            "nodejs",
            json!({"name": true}),
        )
        .await;
    assert_eq!(node["status"], "success", "{node}");
    assert_eq!(node["stdout"], "node\n");
    assert_eq!(
        node["result"]["value"],
        json!({"got": true, "t": "boolean"})
    );

    let (_, error) = client
        .run(
            "def main():\n    print('before')\n    raise ValueError('boom')\n",
            "python",
            json!({}),
        )
        .await;
    assert_every_key(&error);
    assert_eq!(error["status"], "program_error");
    assert_eq!(error["exit_code"], 1);
    assert_eq!(error["runtime_error_type"], "nonzero_exit");
    assert!(error["stderr"]
        .as_str()
        .unwrap()
        .contains("ValueError: boom"));
    assert_eq!(
        error["stdout"], "before\n",
        "what was printed survives a failure"
    );
    assert_eq!(error["result"], Value::Null);
}

#[tokio::test]
async fn an_infinite_loop_comes_back_as_a_time_limit() {
    let (app, key) = app_with_client().await;
    let client = ExecutorClient {
        app: &app,
        token: key,
    };

    let (status, body) = client
        .run(
            "def main():\n    while True:\n        pass\n",
            "python",
            json!({}),
        )
        .await;

    assert_eq!(status, 200);
    assert_every_key(&body);
    assert_eq!(body["status"], "resource_limit_exceeded");
    assert_eq!(body["exit_code"], -124);
    assert_eq!(body["stderr"], "Execution timeout");
    assert_eq!(body["resource_limit_type"], "time");
    let took = body["time_used_ms"].as_f64().unwrap();
    assert!(took >= 2000.0, "killed at the deadline, not before: {took}");
}

#[tokio::test]
async fn a_memory_bomb_comes_back_as_a_memory_limit() {
    let (app, key) = app_with_client().await;
    let client = ExecutorClient {
        app: &app,
        token: key,
    };

    let (status, body) = client
        .run(
            "def main():\n    n = 1024 * 1024 * 1024\n    b = bytearray(n)\n    return len(b)\n",
            "python",
            json!({}),
        )
        .await;

    assert_eq!(status, 200);
    assert_eq!(body["status"], "resource_limit_exceeded", "{body}");
    assert_eq!(body["exit_code"], -137);
    assert_eq!(body["resource_limit_type"], "memory");
    assert!(body["stderr"]
        .as_str()
        .unwrap()
        .contains("Memory limit exceeded"));
}

#[tokio::test]
async fn bad_bodies_get_fastapis_422() {
    let (app, key) = app_with_client().await;
    let post = |body: Value| {
        app.client
            .post(app.url("/run"))
            .bearer_auth(&key)
            .json(&body)
            .send()
    };

    let bad_base64 = post(json!({"code_b64": "not base64!!", "language": "python"}))
        .await
        .unwrap();
    let javascript = post(json!({"code_b64": STANDARD.encode("x"), "language": "javascript"}))
        .await
        .unwrap();
    let missing = post(json!({"language": "python"})).await.unwrap();

    assert_eq!(bad_base64.status().as_u16(), 422);
    let detail: Value = bad_base64.json().await.unwrap();
    assert_eq!(detail["detail"][0]["loc"], json!(["body", "code_b64"]));
    assert!(detail["detail"][0]["msg"]
        .as_str()
        .unwrap()
        .starts_with("Value error, Invalid base64 encoding"));
    assert_eq!(detail["detail"][0]["input"], "not base64!!");
    assert_eq!(javascript.status().as_u16(), 422);
    let detail: Value = javascript.json().await.unwrap();
    assert_eq!(
        detail["detail"][0]["msg"],
        "Input should be 'python' or 'nodejs'"
    );
    assert_eq!(missing.status().as_u16(), 422);
}

#[tokio::test]
async fn a_body_without_arguments_or_language_defaults_to_python_and_empty_arguments() {
    let (app, key) = app_with_client().await;

    let response = app
        .post_json(
            "/run",
            &key,
            &json!({"code_b64": STANDARD.encode("def main():\n    return 'ok'\n")}),
        )
        .await;

    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["value"], "ok", "{body}");
}

#[tokio::test]
async fn run_needs_an_execute_key_and_healthz_stays_open() {
    let app = spawn_app().await;
    let admin_only = app.api_key("ops", &["admin"]).await;
    let body = json!({"code_b64": STANDARD.encode("print(1)")});

    let anonymous = app.post_json("/run", "", &body).await;
    let wrong_scope = app.post_json("/run", &admin_only, &body).await;
    let healthz = app.get("/healthz").await;

    assert_eq!(anonymous.status().as_u16(), 401);
    assert!(anonymous.json::<Value>().await.unwrap()["detail"].is_string());
    assert_eq!(wrong_scope.status().as_u16(), 403);
    assert_eq!(healthz.status().as_u16(), 200);
    assert_eq!(healthz.json::<Value>().await.unwrap()["status"], "ok");
}

#[tokio::test]
async fn over_the_rate_limit_run_answers_minus_429() {
    let app = crate::helpers::spawn_app_with(|c| c.api_rate_limit = 1).await;
    let key = app.api_key("ragflow", &["execute"]).await;
    let body = json!({"code_b64": STANDARD.encode("def main():\n    return 1\n")});
    let first = app.post_json("/run", &key, &body).await;
    assert_eq!(first.status().as_u16(), 200);

    let second = app.post_json("/run", &key, &body).await;

    assert_eq!(second.status().as_u16(), 429);
    assert!(second.headers().contains_key("retry-after"));
    let body: Value = second.json().await.unwrap();
    assert_every_key(&body);
    assert_eq!(body["exit_code"], -429);
    assert_eq!(body["status"], "program_runner_error");
    assert_eq!(body["detail"], "Too many requests, please try again later");
}

#[tokio::test]
async fn a_busy_provider_answers_minus_10_as_the_executor_did() {
    let app = crate::helpers::spawn_app_with_scripted(|_| {}).await;
    let admin = app.api_key("ops", &["admin"]).await;
    app.post_json(
        "/api/v1/admin/sandbox/config",
        &admin,
        &json!({"provider_type": "scripted", "config": {"endpoint": "http://fake", "token": crate::scripted::GOOD_TOKEN}}),
    )
    .await;
    let key = app.api_key("ragflow", &["execute"]).await;

    let response = app
        .post_json("/run", &key, &json!({"code_b64": STANDARD.encode("BUSY")}))
        .await;
    let failed = app
        .post_json(
            "/run",
            &key,
            &json!({"code_b64": STANDARD.encode("UNREACHABLE")}),
        )
        .await;

    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        (body["exit_code"].as_i64(), body["stderr"].as_str()),
        (Some(-10), Some("Container pool is busy"))
    );
    assert_eq!(body["detail"], "no_available_container");
    let body: Value = failed.json().await.unwrap();
    assert_eq!(
        (body["exit_code"].as_i64(), body["detail"].as_str()),
        (Some(-3), Some("internal_error"))
    );
}
