//! The `ucloud_agent_sandbox` provider against the UCloud fake: conformance, the requests on
//! the wire (E2B's control plane, envd's files and process stream) and a bad key.

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    sandbox::{
        providers::ucloud_agent_sandbox::{self, UcloudProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Value};

use crate::fakes::ucloud as fake;

fn provider(url: &str, extra: Value) -> UcloudProvider {
    let mut config = json!({ "api_key": fake::API_KEY, "api_url": url, "sandbox_url": url });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    ucloud_agent_sandbox::build_provider(config.as_object().unwrap()).expect("a valid config")
}

#[tokio::test]
async fn ucloud_passes_the_conformance_suite_against_its_fake_and_leaves_no_sandbox() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({}));

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(fake.live_sandboxes(), 0, "every sandbox was deleted");
}

#[tokio::test]
async fn a_run_creates_a_sandbox_writes_the_wrapper_streams_the_process_and_deletes_it() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({ "sandbox_timeout_secs": 600 }));
    let request = ExecRequest {
        language: Language::Python,
        code: "def main(name, flag):\n    print('hi')\n    return [name, flag]\n".into(),
        arguments: json!({ "name": "Ada", "flag": false })
            .as_object()
            .cloned()
            .unwrap(),
        timeout_secs: Some(7),
    };

    let result = crate::helpers::run_once(&provider, &request).await.unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    assert_eq!(result.stdout, "hi\n");
    assert_eq!(result.result.value, json!(["Ada", false]));
    let journal = &fake.served.journal;
    let create = &journal.to("POST", "/sandboxes")[0];
    assert_eq!(create.header("x-api-key"), Some(fake::API_KEY));
    let body = create.json();
    assert_eq!(body["templateID"], "base");
    assert_eq!(body["timeout"], 600);
    assert_eq!(body["secure"], true);
    assert_eq!(
        body["allow_internet_access"], false,
        "no internet unless allowed"
    );
    let sandbox = result.metadata["sandbox_id"].as_str().unwrap().to_owned();
    let folder = result.metadata["remote_work_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    let write = &journal.to("POST", "/files")[0];
    assert_eq!(
        write.query.as_deref(),
        Some(format!("path={}%2Fmain.py", folder.replace('/', "%2F")).as_str())
    );
    assert_eq!(write.header("e2b-sandbox-id"), Some(sandbox.as_str()));
    assert_eq!(write.header("e2b-sandbox-port"), Some("49983"));
    assert!(write
        .header("x-access-token")
        .is_some_and(|t| t.starts_with("ea_")));
    let written = String::from_utf8_lossy(&write.body).into_owned();
    assert!(
        !written.contains("Ada") && !written.contains("def main(name"),
        "code and arguments travel as base64"
    );
    let start = &journal.to("POST", "/process.Process/Start")[0];
    assert_eq!(
        start.header("content-type"),
        Some("application/connect+json")
    );
    assert_eq!(start.header("connect-protocol-version"), Some("1"));
    let timeout_ms: u64 = start.header("connect-timeout-ms").unwrap().parse().unwrap();
    assert!((6_000..=7_000).contains(&timeout_ms), "{timeout_ms}");
    let process: Value = serde_json::from_slice(&start.body[5..]).unwrap();
    assert_eq!(process["process"]["cmd"], "/bin/bash");
    assert_eq!(
        process["process"]["args"],
        json!(["-l", "-c", "python3 main.py"])
    );
    assert_eq!(process["process"]["cwd"], folder);
    let delete = &journal.to("DELETE", "/sandboxes/")[0];
    assert_eq!(delete.path, format!("/sandboxes/{sandbox}"));
    assert_eq!(fake.live_sandboxes(), 0);
}

#[tokio::test]
async fn a_wrong_api_key_is_unauthenticated_and_an_unhealthy_provider() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({ "api_key": "ucloud-wrong" }));

    let error = provider
        .create_instance(Language::Python)
        .await
        .unwrap_err();
    let health = provider.health().await;

    let Error::Unauthenticated(message) = error else {
        panic!("{error}")
    };
    assert!(
        message.starts_with("UCloud Agent Sandbox refused the API key"),
        "{message}"
    );
    assert!(!health.healthy);
    assert!(
        health.message.contains("refused the API key"),
        "{}",
        health.message
    );
}
