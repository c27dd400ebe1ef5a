//! How the `kubernetes` provider reaches the cluster and the pods, against the Kubernetes API
//! fake: through agent-sandbox's sandbox-router (its fake, `tests/fakes/kubernetes/router.rs`)
//! with a static or a scoped token, and with kubeconfig credentials (the context chosen, a
//! credential program refused without being run).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use hmac::{Hmac, Mac};
use sandbox_console::{
    model::execution::ExecStatus,
    sandbox::{
        providers::kubernetes::{self, KubernetesProvider},
        SandboxProvider,
    },
};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::{
    fakes::kubernetes::{self as fake, router, Options},
    kubernetes_provider::{python, settings},
};

/// The router's secret in scoped mode (the Go router wants 32 bytes or more).
const SECRET: &str = "a-router-secret-of-at-least-32-bytes!";

fn provider(config: Value) -> KubernetesProvider {
    kubernetes::build_provider(config.as_object().unwrap()).expect("a valid config")
}

fn through_router(cluster: &fake::Kubernetes, router: &str, extra: Value) -> KubernetesProvider {
    let mut config = settings(cluster, extra);
    config.insert("reach".into(), json!("router"));
    config.insert("router_url".into(), json!(router));
    provider(Value::Object(config))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_run_through_the_router_with_a_static_token_names_the_sandbox_in_its_headers() {
    let cluster = fake::start(Options::default()).await;
    let router = router::start(&cluster, router::Auth::Static("router-token-1".into())).await;
    let provider = through_router(
        &cluster,
        &router.url(),
        json!({ "router_auth": "static", "router_token": "router-token-1" }),
    );

    let result = crate::helpers::run_once(&provider, &python("def main():\n    return 6 * 7\n"))
        .await
        .unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    assert_eq!(result.result.value, json!(42));
    let sandbox = result.metadata["sandbox"].as_str().unwrap().to_owned();
    let requests = router.journal.all();
    assert!(requests.len() >= 2, "an upload and a run: {requests:?}");
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer router-token-1")
        );
        assert_eq!(request.header("x-sandbox-id"), Some(sandbox.as_str()));
        assert_eq!(request.header("x-sandbox-namespace"), Some(fake::NAMESPACE));
        assert_eq!(
            request.header("x-sandbox-port"),
            Some(cluster.runtime_port().to_string().as_str())
        );
        let timeout: u64 = request
            .header("x-sandbox-timeout")
            .unwrap()
            .parse()
            .unwrap();
        assert!((20..=20 + 120).contains(&timeout), "{timeout}");
        // With a static token the router may route by the pod's IP.
        assert!(request.header("x-sandbox-pod-ip").is_some());
    }
    assert_eq!(
        requests.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        ["/upload", "/execute"]
    );
    assert_eq!(cluster.live_claims(), 0);

    // The wrong token: the router's 401 is the run's error, and the claim still goes.
    let wrong = through_router(
        &cluster,
        &router.url(),
        json!({ "router_auth": "static", "router_token": "not-the-token" }),
    );
    let error = crate::helpers::run_once(&wrong, &python("def main():\n    return 1\n"))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("401"), "{error}");
    assert_eq!(cluster.live_claims(), 0);
}

#[tokio::test]
async fn a_scoped_token_is_bound_to_the_namespace_the_sandbox_and_the_runs_deadline() {
    let cluster = fake::start(Options::default()).await;
    let router = router::start(&cluster, router::Auth::Scoped(SECRET.as_bytes().to_vec())).await;
    let provider = through_router(
        &cluster,
        &router.url(),
        json!({ "router_auth": "scoped", "router_token": SECRET }),
    );
    let before = now();

    let result = crate::helpers::run_once(
        &provider,
        &python("def main():\n    print('via the router')\n"),
    )
    .await
    .unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    assert_eq!(result.stdout, "via the router\n");
    let sandbox = result.metadata["sandbox"].as_str().unwrap().to_owned();
    let requests = router.journal.all();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        // Routed by name: the scoped mode refuses a request naming the pod's IP.
        assert_eq!(request.header("x-sandbox-pod-ip"), None);
        let token = request
            .header("authorization")
            .and_then(|a| a.strip_prefix("Bearer v1."))
            .expect("a v1 scoped token");
        let (payload, signature) = token.split_once('.').unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(format!("agent-sandbox/scoped-token/v1.{payload}").as_bytes());
        mac.verify_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap())
            .expect("signed with the router's secret");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(claims["ns"], fake::NAMESPACE);
        assert_eq!(claims["name"], sandbox.as_str());
        // Valid for the run (20 s) and its margin, not for hours.
        let exp = claims["exp"].as_u64().unwrap();
        assert!(
            exp > before + 20 && exp <= now() + 20 + 120,
            "{exp} vs {before}"
        );
    }

    // Another secret: refused by the router, the run's error says so, no claim left.
    let other = through_router(
        &cluster,
        &router.url(),
        json!({ "router_auth": "scoped", "router_token": "another-secret-that-is-32-bytes-long" }),
    );
    let error = crate::helpers::run_once(&other, &python("def main():\n    return 1\n"))
        .await
        .unwrap_err()
        .to_string();
    // The router's body is not repeated (no remote body is), its status is.
    assert!(error.contains("401 Unauthorized"), "{error}");
    assert_eq!(cluster.live_claims(), 0);
}

fn kubeconfig(server: &str, users: &str, current: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: {current}\n\
         clusters:\n- name: fake\n  cluster:\n    server: {server}\n\
         contexts:\n- name: right\n  context:\n    cluster: fake\n    user: right\n\
         - name: wrong\n  context:\n    cluster: fake\n    user: wrong\n\
         - name: plugin\n  context:\n    cluster: fake\n    user: plugin\n\
         users:\n{users}"
    )
}

#[tokio::test]
async fn kubeconfig_credentials_use_the_chosen_context_and_never_run_a_credential_program() {
    let cluster = fake::start(Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("the-plugin-ran");
    let plugin = dir.path().join("plugin.sh");
    std::fs::write(
        &plugin,
        format!("#!/bin/sh\ntouch {}\necho '{{}}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let users = format!(
        "- name: right\n  user:\n    token: {}\n\
         - name: wrong\n  user:\n    token: not-the-token\n\
         - name: plugin\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
        fake::TOKEN,
        plugin.display()
    );
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, kubeconfig(&cluster.url(), &users, "wrong")).unwrap();
    let with_context = |context: &str| {
        provider(json!({
            "credentials": "kubeconfig",
            "kubeconfig_path": path.to_str().unwrap(),
            "kubeconfig_context": context,
            "namespace": fake::NAMESPACE,
            "warm_pool": fake::POOL,
            "runtime_port": cluster.runtime_port(),
        }))
    };

    let chosen = with_context("right");
    let health = chosen.health().await;
    let result = crate::helpers::run_once(&chosen, &python("def main():\n    return 'ok'\n"))
        .await
        .unwrap();
    let current = with_context("").health().await;
    let plugin_health = with_context("plugin").health().await;
    let missing = with_context("nowhere").health().await;

    assert!(health.healthy, "{}", health.message);
    assert_eq!(result.result.value, json!("ok"));
    // Without a context, the file's current one (whose token is wrong).
    assert!(!current.healthy);
    assert!(
        current.message.contains("did not accept the credentials"),
        "{}",
        current.message
    );
    assert!(!plugin_health.healthy);
    assert!(
        plugin_health.message.contains("exec") && plugin_health.message.contains("\"plugin\""),
        "{}",
        plugin_health.message
    );
    assert!(!marker.exists(), "the credential program was run");
    assert!(!missing.healthy);
    assert!(missing.message.contains("nowhere"), "{}", missing.message);
    assert_eq!(cluster.live_claims(), 0);
}
