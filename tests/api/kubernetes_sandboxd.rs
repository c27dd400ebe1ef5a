//! The kubernetes provider with sandboxd as the pods' runtime, against the Kubernetes API fake
//! whose pods serve sandboxd's REST files and gRPC Execute (`tests/fakes/kubernetes/sandboxd.rs`):
//! the conformance suite, and the settings refusing sandboxd behind the sandbox-router.

use sandbox_console::sandbox::{
    providers::kubernetes::{self, KubernetesProvider},
    testkit, Error,
};
use serde_json::{json, Value};

use crate::{
    fakes::kubernetes::{self as fake, Options},
    kubernetes_provider::settings,
};

fn provider(cluster: &fake::Kubernetes, extra: Value) -> Result<KubernetesProvider, String> {
    let mut config = settings(
        cluster,
        json!({ "runtime": "sandboxd", "grpc_port": cluster.grpc_port() }),
    );
    config.extend(extra.as_object().cloned().unwrap_or_default());
    kubernetes::build_provider(&config).map_err(|e| e.to_string())
}

#[tokio::test]
async fn kubernetes_with_sandboxd_passes_the_conformance_suite_and_leaves_no_claim() {
    let cluster = fake::start(Options {
        sandboxd: true,
        ..Options::default()
    })
    .await;
    let provider = provider(&cluster, json!({})).unwrap();

    let failures = testkit::run_all(&provider).await;

    assert!(failures.is_empty(), "{failures:#?}");
    assert!(cluster.claims_made() > 0);
    assert_eq!(cluster.live_claims(), 0);

    // The example runtime's /upload is not sandboxd's: pointed at the wrong runtime, a run
    // fails saying what answered, and still leaves no claim.
    let wrong = provider_with_example(&cluster);
    let error = crate::helpers::run_once(
        &wrong,
        &sandbox_console::model::execution::ExecRequest {
            language: sandbox_console::model::execution::Language::Python,
            code: "def main():\n    return 1\n".into(),
            arguments: Default::default(),
            timeout_secs: Some(10),
        },
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("upload"), "{error}");
    assert_eq!(cluster.live_claims(), 0);
}

fn provider_with_example(cluster: &fake::Kubernetes) -> KubernetesProvider {
    provider(cluster, json!({ "runtime": "example" })).unwrap()
}

#[tokio::test]
async fn sandboxd_behind_the_router_is_refused_at_save_naming_the_field() {
    let cluster = fake::start(Options::default()).await;
    let config = json!({
        "credentials": "token",
        "api_url": cluster.url(),
        "token": fake::TOKEN,
        "runtime": "sandboxd",
        "reach": "router",
        "router_url": "http://127.0.0.1:9",
        "router_auth": "none",
    });

    let Err(Error::ConfigInvalid { errors }) =
        kubernetes::build_provider(config.as_object().unwrap())
    else {
        panic!("sandboxd through the router was accepted");
    };

    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors["runtime"].contains("sandbox-router"), "{errors:?}");
}
