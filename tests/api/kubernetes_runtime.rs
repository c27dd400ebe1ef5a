//! The runtime deploy/kubernetes ships (`deploy/kubernetes/runtime/server.py`), in real
//! containers made as its SandboxTemplate makes pods (`kubernetes_pods.rs`), one per claim of
//! the Kubernetes API fake: the provider must pass the conformance suite against the
//! deployment's own runtime, not only against the fake's, and leave no pod behind.

use sandbox_console::sandbox::{providers::kubernetes, testkit, SandboxProvider};
use serde_json::json;

use crate::{
    fakes::kubernetes::{self as fake, Options},
    kubernetes_pods::{Containers, PORT},
    kubernetes_provider::settings,
};

#[tokio::test]
async fn the_deployments_runtime_in_docker_containers_passes_the_conformance_suite() {
    let containers = Containers::new(300).await;
    let cluster = fake::start(Options {
        pods: Some(containers.pods()),
        ..Options::default()
    })
    .await;
    let provider =
        kubernetes::build_provider(&settings(&cluster, json!({ "runtime_port": PORT }))).unwrap();

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(cluster.live_claims(), 0);
    assert_eq!(containers.live(), 0, "every pod went with its claim");
}
