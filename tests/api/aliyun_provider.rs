//! The `aliyun_codeinterpreter` provider against the AgentRun fake, which checks both request
//! signatures: conformance, the requests on the wire, the default template, credentials,
//! environment fallbacks, time-outs and malformed answers.

use std::time::{Duration, Instant};

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    sandbox::{
        providers::aliyun_codeinterpreter::{self, AliyunProvider, DEFAULT_TEMPLATE},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Map, Value};

use crate::fakes::agentrun as fake;

fn config(url: &str, extra: Value) -> Map<String, Value> {
    let mut config = json!({
        "access_key_id": fake::ACCESS_KEY_ID, "access_key_secret": fake::SECRET,
        "account_id": fake::ACCOUNT_ID, "region": fake::REGION,
        "endpoint": url, "control_endpoint": url,
    });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    config.as_object().cloned().unwrap()
}

fn provider(url: &str, extra: Value) -> AliyunProvider {
    aliyun_codeinterpreter::build_provider(&config(url, extra)).expect("a valid config")
}

async fn run(
    provider: &AliyunProvider,
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
async fn aliyun_passes_the_conformance_suite_against_the_agentrun_fake() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({}));

    let failures = testkit::run_all(&provider).await;

    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(
        fake.template_status(DEFAULT_TEMPLATE).as_deref(),
        Some("READY"),
        "the default template was created"
    );
    assert_eq!(
        fake.live_sandboxes(),
        0,
        "every sandbox was deleted with the configured credentials"
    );
    assert_eq!(
        fake.served
            .journal
            .to("POST", "/2025-09-10/templates")
            .len(),
        1,
        "created once, then remembered"
    );
}

#[tokio::test]
async fn every_request_is_signed_and_shaped_as_the_sdk_sends_it() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({ "timeout": 20 }));

    let result = run(
        &provider,
        Language::Javascript,
        "async function main(a) { return [a.name, a.flag]; }",
        json!({ "name": "Lovelace", "flag": 31337 }),
    )
    .await
    .unwrap();

    assert_eq!(result.result.value, json!(["Lovelace", 31337]));
    let journal = &fake.served.journal;
    let template_calls = journal.to("GET", "/2025-09-10/templates/");
    assert_eq!(
        template_calls[0].path,
        format!("/2025-09-10/templates/{DEFAULT_TEMPLATE}")
    );
    for call in template_calls
        .iter()
        .chain(&journal.to("POST", "/2025-09-10/templates"))
    {
        let authorization = call.header("authorization").unwrap();
        assert!(
            authorization.starts_with(&format!(
                "ACS3-HMAC-SHA256 Credential={},SignedHeaders=",
                fake::ACCESS_KEY_ID
            )),
            "{authorization}"
        );
        assert_eq!(call.header("x-acs-version"), Some("2025-09-10"));
        assert!(call
            .header("x-acs-signature-nonce")
            .is_some_and(|n| n.len() == 32));
    }
    let create_template = &journal.to("POST", "/2025-09-10/templates")[0];
    assert_eq!(
        create_template.header("x-acs-action"),
        Some("CreateTemplate")
    );
    assert_eq!(create_template.json()["templateType"], "CodeInterpreter");
    let data_calls: Vec<_> = journal
        .all()
        .into_iter()
        .filter(|r| r.path.starts_with("/sandboxes"))
        .collect();
    assert_eq!(data_calls.len(), 3, "create, execute, delete");
    for call in &data_calls {
        let authorization = call.header("agentrun-authorization").unwrap();
        let day = &call.header("x-acs-date").unwrap()[..10].replace('-', "");
        let scope = format!("AGENTRUN4-HMAC-SHA256 Credential={}/{day}/cn-hangzhou/agentrun/aliyun_v4_request,SignedHeaders=", fake::ACCESS_KEY_ID);
        assert!(authorization.starts_with(&scope), "{authorization}");
        assert_eq!(
            call.header("x-acs-content-sha256"),
            Some("UNSIGNED-PAYLOAD")
        );
        assert!(
            call.header("authorization").is_none(),
            "the data plane is signed in Agentrun-Authorization only"
        );
    }
    assert!(data_calls[0]
        .header("agentrun-authorization")
        .unwrap()
        .contains("SignedHeaders=content-type;host;x-acs-content-sha256;x-acs-date,"));
    assert!(
        data_calls[2]
            .header("agentrun-authorization")
            .unwrap()
            .contains("SignedHeaders=host;x-acs-content-sha256;x-acs-date,"),
        "no body, no content-type"
    );
    assert_eq!(
        data_calls[0].json(),
        json!({ "templateName": DEFAULT_TEMPLATE, "sandboxIdleTimeoutSeconds": 60 })
    );
    let execute = &data_calls[1];
    assert_eq!(execute.method, "POST");
    assert!(execute.path.ends_with("/contexts/execute"));
    let body = execute.json();
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["code", "language", "timeout"]);
    assert_eq!(
        (&body["language"], &body["timeout"]),
        (&json!("javascript"), &json!(20))
    );
    let code = body["code"].as_str().unwrap();
    assert!(
        !code.contains("Lovelace")
            && !code.contains("31337")
            && !code.contains("async function main(a)"),
        "arguments and code travel as base64 JSON"
    );
    assert!(code.contains("await "), "async JavaScript is awaited");
    assert_eq!(data_calls[2].method, "DELETE");
}

#[tokio::test]
async fn a_wrong_secret_is_unauthenticated_and_the_health_check_says_so() {
    let fake = fake::start().await;
    let provider = provider(
        &fake.url(),
        json!({ "access_key_secret": "not-the-secret" }),
    );

    let health = provider.health().await;
    let error = provider
        .create_instance(Language::Python)
        .await
        .unwrap_err();

    assert!(
        !health.healthy,
        "an authentication failure is never healthy"
    );
    assert!(
        health.message.contains("AgentRun refused the AccessKey")
            && health.message.contains("SignatureDoesNotMatch"),
        "{}",
        health.message
    );
    let Error::Unauthenticated(message) = error else {
        panic!("{error}")
    };
    assert!(!message.contains("not-the-secret"), "{message}");
    assert_eq!(fake.live_sandboxes(), 0);
}

#[tokio::test]
async fn a_configured_template_is_used_as_it_is_and_a_missing_one_is_named() {
    let fake = fake::start().await;
    fake.add_template("team-python");
    let configured = provider(&fake.url(), json!({ "template_name": "team-python" }));
    let missing = provider(&fake.url(), json!({ "template_name": "nope" }));

    let ok = run(&configured, Language::Python, "print('hi')", json!({}))
        .await
        .unwrap();
    let health = missing.health().await;
    let error = missing.create_instance(Language::Python).await.unwrap_err();

    assert_eq!(
        (ok.status, ok.stdout.as_str()),
        (ExecStatus::Success, "hi\n")
    );
    assert!(
        fake.served
            .journal
            .to("POST", "/2025-09-10/templates")
            .is_empty(),
        "nothing created"
    );
    assert!(
        !health.healthy && health.message.contains("\"nope\" does not exist"),
        "{}",
        health.message
    );
    assert!(
        error.to_string().contains("\"nope\" does not exist"),
        "{error}"
    );
}

#[tokio::test]
async fn blank_credentials_fall_back_to_the_agentrun_environment() {
    let fake = fake::start().await;
    std::env::set_var("AGENTRUN_ACCESS_KEY_ID", fake::ACCESS_KEY_ID);
    std::env::set_var("AGENTRUN_ACCESS_KEY_SECRET", fake::SECRET);
    std::env::set_var("AGENTRUN_ACCOUNT_ID", fake::ACCOUNT_ID);
    let blank = json!({ "access_key_id": "", "access_key_secret": "", "account_id": "" });
    let provider = aliyun_codeinterpreter::build_provider(&config(&fake.url(), blank));
    for variable in [
        "AGENTRUN_ACCESS_KEY_ID",
        "AGENTRUN_ACCESS_KEY_SECRET",
        "AGENTRUN_ACCOUNT_ID",
    ] {
        std::env::remove_var(variable);
    }

    let result = run(
        &provider.expect("built from the environment"),
        Language::Python,
        "def main():\n    return 7\n",
        json!({}),
    )
    .await
    .unwrap();

    assert_eq!(result.result.value, json!(7));
}

#[tokio::test]
async fn the_client_timeout_really_fires_past_the_runs_deadline() {
    let fake = fake::start().await;
    fake.knobs.lock().unwrap().stall = Some(Duration::from_secs(60));
    let provider = provider(&fake.url(), json!({ "timeout": 1 }));
    let instance = provider.create_instance(Language::Python).await.unwrap();
    let request = ExecRequest {
        language: Language::Python,
        code: "print(1)".into(),
        arguments: Map::new(),
        timeout_secs: None,
    };
    let started = Instant::now();

    let error = provider.execute(&instance, &request).await.unwrap_err();
    provider.destroy_instance(instance).await.unwrap();

    assert!(
        matches!(error, Error::Timeout(after) if after == Duration::from_secs(11)),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn malformed_and_failed_answers_are_provider_errors_with_an_excerpt() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({}));
    let cases = [
        (
            200,
            "<html>gateway</html>".to_owned(),
            "has no results: (an HTML or XML body of 20 bytes, not shown)",
        ),
        (
            200,
            json!({ "code": "SUCCESS" }).to_string(),
            "has no results",
        ),
        (
            500,
            json!({ "code": "InternalError", "requestId": "r", "message": "kernel crashed" })
                .to_string(),
            "HTTP 500: InternalError",
        ),
    ];

    for (status, body, expected) in cases {
        fake.knobs.lock().unwrap().canned = Some((status, body.clone()));

        let error = run(&provider, Language::Python, "print(1)", json!({}))
            .await
            .unwrap_err();

        let Error::Provider { source, .. } = error else {
            panic!("{body}: {error}")
        };
        let message = source.to_string();
        assert!(message.contains(expected), "{body}: {message}");
        // What the remote said is never repeated, only its status and its code word.
        for said in ["gateway", "kernel crashed"] {
            assert!(!message.contains(said), "{body}: {message}");
        }
    }
    assert_eq!(fake.live_sandboxes(), 0);
}
