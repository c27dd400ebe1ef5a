//! Dify's code-execution API on the wire. `DifyCaller` is written from the contract of Dify's
//! caller (`api/core/helper/code_executor/code_executor.py` and its template transformers, as
//! read in `langgenius/dify`; research notes §6.1): it posts `{language, code, preload,
//! enable_network: true}` with `X-Api-Key` to `{endpoint}/v1/sandbox/run`, wraps the node's
//! code in the transformer's template (`main(**inputs)`, the result printed between
//! `<<RESULT>>` markers), and raises unless `code` is 0 and `data.error` is empty. Dify's API
//! is not published as a package, so its own module cannot run here.

use base64::{engine::general_purpose::STANDARD, Engine};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// Dify's python3 template, as its transformer builds it (dedented).
fn python_template(code: &str, inputs: &Value) -> String {
    let inputs = STANDARD.encode(serde_json::to_vec(inputs).unwrap());
    format!(
        "{code}\n\nimport json\nfrom base64 import b64decode\n\n# decode and prepare input dict\n\
         inputs_obj = json.loads(b64decode('{inputs}').decode('utf-8'))\n\n# execute main function\n\
         output_obj = main(**inputs_obj)\n\n# convert output to json and print\n\
         output_json = json.dumps(output_obj, indent=4)\n\
         result = f'''<<RESULT>>{{output_json}}<<RESULT>>'''\nprint(result)\n"
    )
}

/// Dify's nodejs template, as its transformer builds it.
fn nodejs_template(code: &str, inputs: &Value) -> String {
    let inputs = serde_json::to_string_pretty(inputs).unwrap();
    format!(
        "// declare main function here\n{code}\n\n// execute main function, and return the result\n\
         // inputs is a dict, unstructured inputs\noutput = main({inputs})\n\n\
         // convert output to json and print\noutput = JSON.stringify(output)\n\n\
         result = `<<RESULT>>${{output}}<<RESULT>>`\n\nconsole.log(result)\n"
    )
}

/// Dify's side of the wire.
struct DifyCaller<'a> {
    app: &'a TestApp,
    key: String,
}

impl DifyCaller<'_> {
    async fn post(&self, body: &Value) -> (StatusCode, String) {
        let response = self
            .app
            .client
            .post(self.app.url("/dify/v1/sandbox/run"))
            .header("X-Api-Key", &self.key)
            .json(body)
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    }

    /// `execute_code`: the stdout, or the message Dify would raise.
    async fn execute_code(&self, language: &str, code: &str) -> Result<String, String> {
        let (status, text) = self
            .post(
                &json!({"language": language, "code": code, "preload": "", "enable_network": true}),
            )
            .await;
        if status != StatusCode::OK {
            return Err(format!("status {status}: {text}"));
        }
        let body: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        if body["code"] != 0 {
            return Err(body["message"].as_str().unwrap_or_default().to_owned());
        }
        match body["data"]["error"].as_str() {
            Some(error) if !error.is_empty() => Err(error.to_owned()),
            _ => Ok(body["data"]["stdout"].as_str().unwrap().to_owned()),
        }
    }

    /// `execute_workflow_code_template`: the node's output, parsed from between the markers.
    async fn run_node(&self, language: &str, code: &str, inputs: Value) -> Result<Value, String> {
        let (script, running) = match language {
            "python3" => (python_template(code, &inputs), "python3"),
            _ => (nodejs_template(code, &inputs), "nodejs"),
        };
        let stdout = self.execute_code(running, &script).await?;
        let inner = stdout
            .split("<<RESULT>>")
            .nth(1)
            .ok_or_else(|| format!("Failed to parse result: {stdout:?}"))?;
        serde_json::from_str(inner).map_err(|e| e.to_string())
    }
}

/// A console whose local provider gives programs a network (an allow-list), since Dify's
/// caller always asks for one, and a key for Dify.
async fn app_for_dify() -> (TestApp, String) {
    let app = spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let response = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "local", "config": {
                "network": "allow-list",
                "allowed_hosts": "example.test:443",
                "static_hosts": "example.test 127.0.0.1",
                "timeout_secs": 2,
            }}),
        )
        .await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let key = app.api_key("dify", &["execute"]).await;
    (app, key)
}

#[tokio::test]
async fn difys_code_nodes_run_and_their_output_comes_back_byte_exact() {
    let (app, key) = app_for_dify().await;
    let dify = DifyCaller { app: &app, key };

    let python = "def main(a: int, b: str) -> dict:\n    print('noise', flush=True)\n    return {\"sum\": a + 1, \"text\": b + \"é\", \"list\": [1, 2]}\n";
    let stdout = dify
        .execute_code(
            "python3",
            &python_template(python, &json!({"a": 41, "b": "caf"})),
        )
        .await
        .unwrap();
    assert_eq!(
        stdout,
        "noise\n<<RESULT>>{\n    \"sum\": 42,\n    \"text\": \"caf\\u00e9\",\n    \"list\": [\n        1,\n        2\n    ]\n}<<RESULT>>\n"
    );

    let javascript = "function main({a, b}) {\n  return {sum: a + 1, text: b + 'é'};\n}\n";
    let output = dify
        .run_node("javascript", javascript, json!({"a": 41, "b": "caf"}))
        .await
        .unwrap();
    assert_eq!(output, json!({"sum": 42, "text": "café"}));

    // A script that prints to stderr and exits 0 has no error, as in dify-sandbox.
    let (status, text) = dify
        .post(&json!({"language": "python3", "code": "import sys\nsys.stderr.write('warn\\n')\nprint('ok')\n", "enable_network": true}))
        .await;
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body,
        json!({"code": 0, "message": "success", "data": {"stdout": "ok\n", "stderr": "warn\n", "error": "", "exit_code": 0}})
    );
}

#[tokio::test]
async fn a_raised_exception_is_difys_error_with_the_exit_code_and_the_traceback() {
    let (app, key) = app_for_dify().await;
    let dify = DifyCaller { app: &app, key };

    let code = "def main() -> dict:\n    raise ValueError('boom')\n";
    let error = dify.run_node("python3", code, json!({})).await.unwrap_err();
    assert!(error.starts_with("process exited with code 1\n"), "{error}");
    assert!(error.contains("ValueError: boom"), "{error}");
    assert!(error.contains("line 2, in main"), "{error}");

    let (_, text) = dify
        .post(&json!({"language": "nodejs", "code": "process.stdout.write('partial');\nprocess.exit(3);\n", "enable_network": true}))
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], 0);
    assert_eq!(body["data"]["stdout"], "partial");
    assert_eq!(body["data"]["exit_code"], 3);
    assert_eq!(body["data"]["error"], "process exited with code 3");

    let (_, text) = dify
        .post(&json!({"language": "python3", "code": "while True:\n    pass\n", "enable_network": true}))
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    let error = body["data"]["error"].as_str().unwrap();
    assert!(
        error.contains("ran past its time limit"),
        "a deadline is Dify's error: {body}"
    );
}

#[tokio::test]
async fn refusals_come_in_difys_shapes() {
    let (app, key) = app_for_dify().await;
    let dify = DifyCaller {
        app: &app,
        key: key.clone(),
    };

    let (status, text) = dify
        .post(&json!({"language": "ruby", "code": "puts 1"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"code": -400, "message": "unsupported language", "data": null})
    );

    for wrong in ["", "sk-not-a-key"] {
        let stranger = DifyCaller {
            app: &app,
            key: wrong.to_owned(),
        };
        let (status, text) = stranger
            .post(&json!({"language": "python3", "code": "print(1)"}))
            .await;
        assert_eq!(status, 401, "{wrong:?}");
        assert_eq!(text, "", "dify-sandbox answers 401 with an empty body");
    }
    let admin_only = DifyCaller {
        app: &app,
        key: app.api_key("ops-only", &["admin"]).await,
    };
    let (status, _) = admin_only
        .post(&json!({"language": "python3", "code": "print(1)"}))
        .await;
    assert_eq!(status, 403);

    let huge = format!("x = '{}'\n", "a".repeat(1024 * 1024));
    let error = dify.execute_code("python3", &huge).await.unwrap_err();
    assert!(error.contains("the limit is"), "{error}");

    let (status, text) = dify.post(&json!({"language": "python3"})).await;
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], -400, "{body}");

    // The health probe is open; the dependency list needs the key.
    let health = app.get("/dify/health").await;
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "\"ok\"");
    let listed = app
        .client
        .get(app.url("/dify/v1/sandbox/dependencies?language=python3"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 401);
    let listed: Value = app
        .client
        .get(app.url("/dify/v1/sandbox/dependencies?language=python3"))
        .header("X-Api-Key", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["code"], 0, "{listed}");
    assert!(listed["data"]["dependencies"].is_array(), "{listed}");
}

#[tokio::test]
async fn network_asked_of_a_provider_without_one_is_difys_minus_400() {
    let app = spawn_app().await;
    let dify = DifyCaller {
        key: app.api_key("dify", &["execute"]).await,
        app: &app,
    };
    let (status, text) = dify
        .post(&json!({"language": "python3", "code": "print(1)", "enable_network": true}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"code": -400, "message": "network is disabled, please enable it in the configuration", "data": null})
    );
    // Without a network, a run that does not ask for one runs.
    let (_, text) = dify
        .post(&json!({"language": "python3", "code": "print(1)", "enable_network": false}))
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["data"]["stdout"], "1\n", "{body}");
}
