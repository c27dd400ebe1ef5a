//! The `e2b` provider against the E2B fake: conformance, the requests on the wire, a bad key,
//! rich results as artifacts, and a stream that is not E2B's.

use axum::{routing::post, Router};
use base64::{engine::general_purpose::STANDARD, Engine};
use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    sandbox::{
        providers::e2b::{self, E2bProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Value};

use crate::fakes::{self, e2b as fake};

fn provider(api: &str, sandbox: &str, extra: Value) -> E2bProvider {
    let mut config = json!({ "api_key": fake::API_KEY, "api_url": api, "sandbox_url": sandbox });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    e2b::build_provider(config.as_object().unwrap()).expect("a valid config")
}

async fn run(
    provider: &E2bProvider,
    language: Language,
    code: &str,
    arguments: Value,
) -> Result<ExecutionResult, Error> {
    let request = ExecRequest {
        language,
        code: code.into(),
        arguments: arguments.as_object().cloned().unwrap_or_default(),
        timeout_secs: None,
    };
    crate::helpers::run_once(provider, &request).await
}

#[tokio::test]
async fn e2b_passes_the_conformance_suite_against_the_e2b_fake_and_leaves_no_sandbox() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), &fake.url(), json!({}));

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(fake.live_sandboxes(), 0, "every sandbox was deleted");
}

#[tokio::test]
async fn the_sandbox_is_created_offline_executed_with_its_token_and_deleted() {
    let fake = fake::start().await;
    let provider = provider(
        &fake.url(),
        &fake.url(),
        json!({ "sandbox_timeout_secs": 120 }),
    );

    let result = run(
        &provider,
        Language::Python,
        "def main(name, flag):\n    return [name, flag]\n",
        json!({ "name": "Ada", "flag": false }),
    )
    .await
    .unwrap();

    assert_eq!(result.result.value, json!(["Ada", false]));
    let journal = &fake.served.journal;
    let create = &journal.to("POST", "/sandboxes")[0];
    assert_eq!(create.header("x-api-key"), Some(fake::API_KEY));
    assert_eq!(create.header("content-type"), Some("application/json"));
    let body = create.json();
    assert_eq!(body["templateID"], "code-interpreter-v1");
    assert_eq!(body["timeout"], 120);
    assert_eq!(
        body["allow_internet_access"], false,
        "no network from the sandbox"
    );
    assert_eq!(body["secure"], true);
    let sandbox = result.metadata["sandbox_id"].as_str().unwrap().to_owned();
    let execute = &journal.to("POST", "/execute")[0];
    assert_eq!(execute.header("e2b-sandbox-id"), Some(sandbox.as_str()));
    assert_eq!(execute.header("e2b-sandbox-port"), Some("49999"));
    assert!(execute
        .header("x-access-token")
        .is_some_and(|t| t.starts_with("tok_")));
    let body = execute.json();
    assert_eq!(body["language"], "python");
    assert!(body.get("context_id").is_none(), "never with language");
    let code = body["code"].as_str().unwrap();
    assert!(
        !code.contains("Ada") && !code.contains("def main(name"),
        "arguments and code travel as base64"
    );
    let delete = &journal.to("DELETE", "/sandboxes/")[0];
    assert_eq!(delete.path, format!("/sandboxes/{sandbox}"));
    assert_eq!(delete.header("x-api-key"), Some(fake::API_KEY));
    assert_eq!(fake.live_sandboxes(), 0);
}

#[tokio::test]
async fn a_wrong_api_key_is_unauthenticated_and_an_unhealthy_provider() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), &fake.url(), json!({ "api_key": "e2b_wrong" }));

    let error = provider
        .create_instance(Language::Python)
        .await
        .unwrap_err();
    let health = provider.health().await;

    let Error::Unauthenticated(message) = error else {
        panic!("{error}")
    };
    assert!(
        message.starts_with("E2B refused the API key") && message.contains("HTTP 401"),
        "{message}"
    );
    assert!(!message.contains("e2b_wrong"));
    // Status only: what the remote said is never repeated (2026-12-06 probe, N11).
    assert!(!message.contains("Invalid API key"), "{message}");
    assert!(!health.healthy);
    assert!(
        health.message.starts_with("E2B refused the API key"),
        "{}",
        health.message
    );
}

#[tokio::test]
async fn displayed_svg_and_png_become_artifacts() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), &fake.url(), json!({}));
    let png = [0x89u8, b'P', b'N', b'G', 13, 10, 26, 10];
    let code = format!(
        "import base64\nfrom IPython.display import display, SVG, Image\ndef main():\n    display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'))\n    display(Image(base64.b64decode('{}')))\n    return 'shown'\n",
        STANDARD.encode(png)
    );

    let result = run(&provider, Language::Python, &code, json!({}))
        .await
        .unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    let names: Vec<_> = result
        .artifacts
        .iter()
        .map(|a| (a.name.as_str(), a.mime_type.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("result-1.svg", "image/svg+xml"),
            ("result-2.png", "image/png")
        ]
    );
    assert_eq!(result.artifacts[1].content_b64, STANDARD.encode(png));
}

#[tokio::test]
async fn a_stream_that_is_not_json_lines_is_a_provider_error_with_an_excerpt() {
    let fake = fake::start().await;
    let broken = fakes::serve(Router::new().route(
        "/execute",
        post(|| async { "<html>upstream connect error</html>\n" }),
    ))
    .await;
    let provider = provider(&fake.url(), &broken.url(), json!({}));

    let error = run(&provider, Language::Python, "print(1)", json!({}))
        .await
        .unwrap_err();

    let Error::Provider { source, .. } = error else {
        panic!("{error}")
    };
    let message = source.to_string();
    assert!(
        message.contains("not JSON: (an HTML or XML body of"),
        "{message}"
    );
    assert!(!message.contains("upstream connect error"), "{message}");
    assert_eq!(fake.live_sandboxes(), 0, "the sandbox is deleted even so");
}

#[tokio::test]
async fn api_calls_give_up_after_the_request_timeout_and_rate_limits_are_pool_busy() {
    let stalled = fakes::serve(Router::new().route(
        "/sandboxes",
        post(|| async {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            "never"
        }),
    ))
    .await;
    let limited = fakes::serve(Router::new().route(
        "/sandboxes",
        post(|| async {
            (
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "7")],
                r#"{"code":429,"message":"Rate limit exceeded"}"#,
            )
        }),
    ))
    .await;
    let started = std::time::Instant::now();

    let timed_out = provider(
        &stalled.url(),
        &stalled.url(),
        json!({ "request_timeout_secs": 1 }),
    )
    .create_instance(Language::Python)
    .await
    .unwrap_err();
    let busy = provider(&limited.url(), &limited.url(), json!({}))
        .create_instance(Language::Python)
        .await
        .unwrap_err();

    assert!(
        matches!(timed_out, Error::Timeout(after) if after.as_secs() == 1),
        "{timed_out}"
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert!(
        matches!(busy, Error::PoolBusy { retry_after, .. } if retry_after.as_secs() == 7),
        "{busy}"
    );
}
