//! The `tenki` provider against the Tenki fake (gRPC over h2c on loopback): conformance, what
//! goes over the wire (the session asked for, the key to the control plane only, the session
//! credential to the data plane, argv without a shell), and a bad key.

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    sandbox::{
        providers::tenki::{self, TenkiProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Value};

use crate::fakes::tenki as fake;

fn provider(url: &str, extra: Value) -> TenkiProvider {
    let mut config = json!({ "api_key": fake::API_KEY, "base_url": url });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    tenki::build_provider(config.as_object().unwrap()).expect("a valid config")
}

#[tokio::test]
async fn tenki_passes_the_conformance_suite_against_its_fake_and_ends_every_session() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({}));

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(fake.live_sessions(), 0, "every session was terminated");
}

#[tokio::test]
async fn a_run_asks_for_the_configured_session_and_keeps_the_key_off_the_data_plane() {
    let fake = fake::start().await;
    let provider = provider(
        &fake.url(),
        json!({ "max_lifetime_secs": 600, "cpu_cores": 2, "memory_mb": 1024, "image": "python:3.12" }),
    );
    let request = ExecRequest {
        language: Language::Python,
        code: "def main(name):\n    print('hi')\n    return name\n".into(),
        arguments: json!({ "name": "Ada" }).as_object().cloned().unwrap(),
        timeout_secs: Some(9),
    };

    let result = crate::helpers::run_once(&provider, &request).await.unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    assert_eq!(
        (result.stdout.as_str(), &result.result.value),
        ("hi\n", &json!("Ada"))
    );
    let create = &fake.creates()[0];
    assert_eq!(
        (create.owner_id.as_str(), create.owner_type.as_str()),
        ("self", "SERVICE")
    );
    assert_eq!(
        create.allow_outbound,
        Some(false),
        "no network unless allowed"
    );
    assert_eq!(create.allow_inbound, Some(false));
    assert_eq!(create.max_duration.as_ref().map(|d| d.seconds), Some(600));
    assert_eq!(
        (create.cpu_cores, create.memory_mb, create.disk_size_gb),
        (Some(2), Some(1024), None)
    );
    assert_eq!(create.registry_ref.as_deref(), Some("python:3.12"));
    let start = &fake.starts()[0];
    assert_eq!(start.cmd, ["python3", "main.py"]);
    assert_eq!(
        start.cwd,
        result.metadata["remote_work_dir"].as_str().unwrap()
    );
    assert_eq!(start.timeout_ms, 9_000);
    let control = fake.control.journal.all();
    let data = fake.data.journal.all();
    assert!(control
        .iter()
        .all(|r| r.header("authorization") == Some(&format!("Bearer {}", fake::API_KEY))));
    assert!(
        data.iter()
            .all(|r| r.header("authorization").is_none()
                && r.header("x-tenki-session-cert").is_some())
    );
    assert!(data
        .iter()
        .all(|r| !String::from_utf8_lossy(&r.body).contains(fake::API_KEY)));
    let methods: Vec<_> = control
        .iter()
        .map(|r| r.path.rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        methods,
        ["CreateSession", "WaitSession", "TerminateSession"]
    );
    assert_eq!(fake.live_sessions(), 0);
}

#[tokio::test]
async fn a_wrong_api_key_is_unauthenticated_and_an_unhealthy_provider() {
    let fake = fake::start().await;
    let provider = provider(&fake.url(), json!({ "api_key": "tk_wrong" }));

    let error = provider
        .create_instance(Language::Python)
        .await
        .unwrap_err();
    let health = provider.health().await;

    let Error::Unauthenticated(message) = error else {
        panic!("{error}")
    };
    assert!(
        message.starts_with("Tenki refused the API key"),
        "{message}"
    );
    assert!(!health.healthy);
    assert!(
        health.message.contains("Tenki refused the API key"),
        "{}",
        health.message
    );
}
