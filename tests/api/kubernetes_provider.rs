//! The `kubernetes` provider against the Kubernetes API fake with agent-sandbox's v1beta1
//! resources (`tests/fakes/kubernetes`): conformance, the claim on the wire checked against the
//! CRD, and the faults (never Ready, a pod that dies mid-run, RBAC, a closed watch, claims left
//! by a console that is gone).

use std::time::{Duration, Instant};

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    sandbox::{
        providers::kubernetes::{self, KubernetesProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Map, Value};

use crate::fakes::kubernetes::{self as fake, Options};

/// The settings of a provider on `cluster` (a bearer token, its pods' runtime port), with
/// `extra` over them.
pub fn settings(cluster: &fake::Kubernetes, extra: Value) -> Map<String, Value> {
    let mut config = json!({
        "credentials": "token",
        "api_url": cluster.url(),
        "token": fake::TOKEN,
        "namespace": fake::NAMESPACE,
        "warm_pool": fake::POOL,
        "runtime_port": cluster.runtime_port(),
    })
    .as_object()
    .cloned()
    .unwrap();
    config.extend(extra.as_object().cloned().unwrap_or_default());
    config
}

fn provider(cluster: &fake::Kubernetes, extra: Value) -> KubernetesProvider {
    kubernetes::build_provider(&settings(cluster, extra)).expect("a valid config")
}

/// A Python run of `code` with a 20 s limit.
pub fn python(code: &str) -> ExecRequest {
    ExecRequest {
        language: Language::Python,
        code: code.into(),
        arguments: serde_json::Map::new(),
        timeout_secs: Some(20),
    }
}

#[tokio::test]
async fn kubernetes_passes_the_conformance_suite_against_its_fake_and_leaves_no_claim() {
    let cluster = fake::start(Options::default()).await;
    let provider = provider(&cluster, json!({}));

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert_eq!(health.details["ready_replicas"], 4);
    assert_eq!(health.details["runtime_class"], "gvisor");
    assert_eq!(health.details["network"], "none");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(cluster.claims_made() > 0);
    assert_eq!(cluster.live_claims(), 0, "every claim was deleted");
}

#[tokio::test]
async fn a_run_claims_from_the_warm_pool_with_its_labels_and_a_shutdown_time_then_deletes_the_claim(
) {
    let cluster = fake::start(Options::default()).await;
    let provider = provider(
        &cluster,
        json!({ "timeout_secs": 30, "shutdown_after_secs": 600 }),
    );
    let request = ExecRequest {
        arguments: json!({ "name": "Ada" }).as_object().cloned().unwrap(),
        ..python("def main(name):\n    print('hi')\n    return name\n")
    };
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;

    let result = crate::helpers::run_once(&provider, &request).await.unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    assert_eq!(result.stdout, "hi\n");
    assert_eq!(result.result.value, json!("Ada"));
    let journal = &cluster.served.journal;
    let create = &journal.to(
        "POST",
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sandbox-console-sandboxes/sandboxclaims",
    )[0];
    assert_eq!(
        create.header("authorization"),
        Some(format!("Bearer {}", fake::TOKEN).as_str())
    );
    let claim = create.json();
    let name = claim["metadata"]["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("sandbox-console-"), "{name}");
    assert_eq!(claim["spec"]["warmPoolRef"], json!({ "name": fake::POOL }));
    assert_eq!(
        claim["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "sandbox-console"
    );
    assert_eq!(
        claim["metadata"]["labels"]["sandbox-console.io/run"],
        name.as_str()
    );
    let owner = claim["metadata"]["annotations"]["sandbox-console.io/owner"]
        .as_str()
        .unwrap();
    assert!(
        owner.contains(&format!("/{}:", std::process::id())),
        "the owner annotation names this process: {owner}"
    );
    assert_eq!(claim["spec"]["lifecycle"]["shutdownPolicy"], "Delete");
    let shutdown = chrono::DateTime::parse_from_rfc3339(
        claim["spec"]["lifecycle"]["shutdownTime"].as_str().unwrap(),
    )
    .unwrap();
    let after = shutdown.timestamp() - before;
    assert!(
        (600 + 30..=600 + 30 + 60 + 5).contains(&after),
        "shutdown after the claim wait, the run and shutdown_after: {after} s"
    );
    assert_eq!(result.metadata["claim"], name.as_str());
    assert!(result.metadata["sandbox"]
        .as_str()
        .unwrap()
        .starts_with("python-javascript-"));
    let query = journal
        .to(
            "GET",
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sandbox-console-sandboxes/sandboxclaims",
        )
        .into_iter()
        .filter_map(|r| r.query)
        .find(|q| q.contains("watch=true"))
        .expect("the claim was watched");
    assert!(
        query.contains(&format!("fieldSelector=metadata.name%3D{name}")),
        "{query}"
    );
    let deletes = journal.to("DELETE", &format!(
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sandbox-console-sandboxes/sandboxclaims/{name}"
    ));
    assert_eq!(deletes.len(), 1);
    assert!(!cluster.has_claim(&name));
}

#[tokio::test]
async fn a_claim_never_ready_is_pool_busy_with_the_warm_pools_state_and_is_deleted() {
    let cluster = fake::start(Options {
        never_ready: true,
        ready_replicas: 0,
        ..Options::default()
    })
    .await;
    let provider = provider(&cluster, json!({ "claim_timeout_secs": 1 }));

    let outcome = crate::helpers::run_once(&provider, &python("print(1)")).await;

    let Err(Error::PoolBusy { detail, .. }) = outcome else {
        panic!("a claim that is not Ready in time is pool_busy: {outcome:?}");
    };
    let detail = detail.unwrap_or_default();
    assert!(detail.contains("has 0 of 4 sandboxes ready"), "{detail}");
    assert!(detail.contains("RuntimeClass gvisor"), "{detail}");
    assert_eq!(cluster.claims_made(), 1);
    assert_eq!(cluster.live_claims(), 0, "the claim was deleted");
}

#[tokio::test]
async fn a_pod_that_dies_mid_run_is_a_typed_error_and_its_claim_is_deleted() {
    let cluster = fake::start(Options {
        kill_pod_on_execute: true,
        ..Options::default()
    })
    .await;
    let provider = provider(&cluster, json!({}));

    let outcome = crate::helpers::run_once(&provider, &python("print(1)")).await;

    let error = outcome.expect_err("the run failed");
    let text = error.to_string();
    assert!(
        matches!(
            error,
            Error::Provider {
                kind: "kubernetes",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(text.contains("the pod may have gone away"), "{text}");
    assert_eq!(cluster.live_claims(), 0, "the claim was deleted");
}

#[tokio::test]
async fn rbac_that_denies_a_verb_makes_the_provider_unhealthy_naming_the_verb_and_resource() {
    let cluster = fake::start(Options {
        denied: vec![("watch", "sandboxclaims")],
        ..Options::default()
    })
    .await;
    let provider = provider(&cluster, json!({}));

    let health = provider.health().await;
    let outcome = crate::helpers::run_once(&provider, &python("print(1)")).await;

    assert!(!health.healthy);
    assert!(
        health.message.contains("may not watch sandboxclaims"),
        "{}",
        health.message
    );
    let text = outcome
        .expect_err("a run cannot watch its claim")
        .to_string();
    assert!(text.contains("refused to watch sandboxclaims"), "{text}");
    assert_eq!(cluster.live_claims(), 0, "the claim was deleted");
}

#[tokio::test]
async fn a_watch_the_server_closes_is_resumed_from_the_last_resource_version() {
    let cluster = fake::start(Options {
        close_watches_after: Some(1),
        ready_after: Duration::from_millis(300),
        ..Options::default()
    })
    .await;
    let provider = provider(&cluster, json!({}));

    let result = crate::helpers::run_once(&provider, &python("print('resumed')"))
        .await
        .unwrap();

    assert_eq!(result.stdout, "resumed\n");
    let watches: Vec<String> = cluster
        .served
        .journal
        .to(
            "GET",
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sandbox-console-sandboxes/sandboxclaims",
        )
        .into_iter()
        .filter_map(|r| r.query)
        .filter(|q| q.contains("watch=true"))
        .collect();
    assert!(
        watches.len() >= 2,
        "the watch was opened again: {watches:?}"
    );
    let versions: Vec<u64> = watches
        .iter()
        .map(|q| {
            q.split('&')
                .find_map(|p| p.strip_prefix("resourceVersion="))
                .and_then(|v| v.parse().ok())
                .expect("each watch names a version")
        })
        .collect();
    assert!(
        versions.windows(2).all(|w| w[1] > w[0]),
        "each watch resumes after the last event seen: {versions:?}"
    );
}

#[tokio::test]
async fn claims_left_by_a_console_that_is_gone_are_swept_and_live_ones_are_kept() {
    let cluster = fake::start(Options::default()).await;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    // A process that is gone (pid 1 with another start time), and this very test process.
    cluster.leave_claim("sandbox-console-gone", &format!("{host}/1:1"));
    let me = std::fs::read_to_string(format!("/proc/{}/stat", std::process::id())).unwrap();
    let start = me
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_owned();
    cluster.leave_claim(
        "sandbox-console-alive",
        &format!("{host}/{}:{start}", std::process::id()),
    );
    cluster.leave_claim("sandbox-console-elsewhere", "another-host/1:1");
    let provider = provider(&cluster, json!({}));

    crate::helpers::run_once(&provider, &python("print(1)"))
        .await
        .unwrap();

    assert!(!cluster.has_claim("sandbox-console-gone"));
    assert!(cluster.has_claim("sandbox-console-alive"));
    assert!(
        cluster.has_claim("sandbox-console-elsewhere"),
        "another host's consoles cannot be judged here"
    );
}

#[tokio::test]
async fn a_wrong_token_is_unauthenticated_and_the_health_check_says_so() {
    let cluster = fake::start(Options::default()).await;
    let provider = provider(&cluster, json!({ "token": "wrong" }));

    let health = provider.health().await;
    let started = Instant::now();
    let outcome = crate::helpers::run_once(&provider, &python("print(1)")).await;

    assert!(!health.healthy);
    assert!(
        health.message.contains("did not accept the credentials"),
        "{}",
        health.message
    );
    assert!(
        matches!(outcome, Err(Error::Unauthenticated(_))),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(cluster.claims_made(), 0);
}
