//! The remote providers behind the console's own APIs, configured the way RAGFlow's admin UI
//! does it (`/api/v1/admin/sandbox/*`, an admin key) and used by agents through
//! `/api/v1/execute` and RAGFlow's `/run`: what an operator of the gateway sees end to end.

use base64::{engine::general_purpose::STANDARD, Engine};
use serde_json::{json, Value};

use crate::{
    fakes::{agentrun, e2b, executor_manager},
    helpers::{spawn_app, TestApp},
};

async fn admin_call(app: &TestApp, admin: &str, path: &str, body: Value) -> (u16, Value) {
    let response = app.post_json(path, admin, &body).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn execute(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let response = app.post_json("/api/v1/execute", key, &body).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_admin_tests_and_activates_e2b_through_ragflows_api_and_agents_run_code_on_it() {
    let fake = e2b::start().await;
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let agent = app.api_key("agent", &["execute"]).await;
    let config =
        |key: &str| json!({ "api_key": key, "api_url": fake.url(), "sandbox_url": fake.url() });

    let (refused_status, refused) = admin_call(
        &app,
        &admin,
        "/api/v1/admin/sandbox/test",
        json!({ "provider_type": "e2b", "config": config("e2b_wrong") }),
    )
    .await;
    let (tested_status, tested) = admin_call(
        &app,
        &admin,
        "/api/v1/admin/sandbox/test",
        json!({ "provider_type": "e2b", "config": config(e2b::API_KEY) }),
    )
    .await;
    let (saved_status, _) = admin_call(
        &app,
        &admin,
        "/api/v1/admin/sandbox/config",
        json!({ "provider_type": "e2b", "config": config(e2b::API_KEY) }),
    )
    .await;
    let (status, result) = execute(&app, &agent, json!({ "language": "python", "code": "def main(n):\n    return {'double': n * 2}\n", "arguments": { "n": 21 } })).await;

    assert_eq!(refused_status, 400);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("E2B refused the API key"),
        "{refused}"
    );
    assert_eq!(
        (tested_status, &tested["data"]["success"]),
        (200, &json!(true)),
        "{tested}"
    );
    assert_eq!(saved_status, 200);
    assert_eq!(status, 200, "{result}");
    assert_eq!(
        (
            &result["status"],
            &result["result"]["value"],
            &result["provider"]
        ),
        (&json!("success"), &json!({ "double": 42 }), &json!("e2b"))
    );
    assert_eq!(fake.live_sandboxes(), 0, "the run's sandbox is deleted");
}

#[tokio::test]
async fn ragflow_runs_code_through_the_console_on_agentrun() {
    let fake = agentrun::start().await;
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let ragflow = app.api_key("ragflow", &["execute"]).await;
    let config = json!({
        "access_key_id": agentrun::ACCESS_KEY_ID, "access_key_secret": agentrun::SECRET,
        "account_id": agentrun::ACCOUNT_ID, "endpoint": fake.url(), "control_endpoint": fake.url(),
    });
    let (saved, body) = admin_call(
        &app,
        &admin,
        "/api/v1/admin/sandbox/config",
        json!({ "provider_type": "aliyun_codeinterpreter", "config": config }),
    )
    .await;
    assert_eq!(saved, 200, "{body}");

    let code = STANDARD.encode("def main(name, flag):\n    print('hi')\n    return [name, flag]\n");
    let response = app.post_json("/run", &ragflow, &json!({ "code_b64": code, "language": "python", "arguments": { "name": "Ada", "flag": null } })).await;

    assert_eq!(response.status().as_u16(), 200);
    let run: Value = response.json().await.unwrap();
    assert_eq!(
        (&run["status"], &run["stdout"], &run["exit_code"]),
        (&json!("success"), &json!("hi\n"), &json!(0)),
        "{run}"
    );
    assert_eq!(
        run["result"],
        json!({ "present": true, "value": ["Ada", null], "type": "json" })
    );
}

#[tokio::test]
async fn refused_credentials_and_an_unreachable_executor_answer_502_with_nothing_internal() {
    let fake = executor_manager::start(Some("right-token")).await;
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let agent = app.api_key("agent", &["execute"]).await;
    let hello =
        json!({ "language": "python", "code": "def main():\n    print(1)\n    return 1\n" });
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };

    admin_call(&app, &admin, "/api/v1/admin/sandbox/config", json!({ "provider_type": "self_managed", "config": { "endpoint": fake.url(), "api_token": "wrong-token" } })).await;
    let (refused, refused_body) = execute(&app, &agent, hello.clone()).await;
    admin_call(&app, &admin, "/api/v1/admin/sandbox/config", json!({ "provider_type": "self_managed", "config": { "endpoint": dead, "api_token": "right-token", "max_retries": 0 } })).await;
    let (unreachable, unreachable_body) = execute(&app, &agent, hello.clone()).await;
    admin_call(&app, &admin, "/api/v1/admin/sandbox/config", json!({ "provider_type": "self_managed", "config": { "endpoint": fake.url(), "api_token": "right-token" } })).await;
    let (ok, ok_body) = execute(&app, &agent, hello).await;

    assert_eq!(
        (refused, &refused_body["error"]["kind"]),
        (502, &json!("provider_failed")),
        "{refused_body}"
    );
    assert!(!refused_body.to_string().contains("wrong-token"));
    assert_eq!(
        (unreachable, &unreachable_body["error"]["kind"]),
        (502, &json!("provider_unreachable")),
        "{unreachable_body}"
    );
    assert!(
        !unreachable_body.to_string().contains("127.0.0.1"),
        "5xx bodies name nothing internal"
    );
    assert_eq!((ok, &ok_body["stdout"]), (200, &json!("1\n")), "{ok_body}");
}
