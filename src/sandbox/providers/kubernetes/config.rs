//! The `kubernetes` provider's settings: where the API server is and how to sign in to it,
//! which warm pool to claim from, how to reach a claimed pod and what runs in it, and the
//! limits of a run; the typed config and the one validating `build()`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{KubernetesProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec, SelectOption},
    sandbox::{
        providers::{config_check::ConfigCheck, fields, http},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;

/// How the console signs in to the API server.
pub const CREDENTIALS: [(&str, &str); 3] = [
    ("in_cluster", "In-cluster service account"),
    ("kubeconfig", "Kubeconfig file"),
    ("token", "Bearer token"),
];

/// How a claimed pod is reached.
pub const REACH: [(&str, &str); 2] = [
    ("pod_ip", "Pod IP (the console runs in the cluster)"),
    ("router", "sandbox-router"),
];

/// What serves programs in a claimed pod.
pub const RUNTIMES: [(&str, &str); 2] = [
    (
        "example",
        "agent-sandbox's example Python runtime (/upload, /execute)",
    ),
    ("sandboxd", "sandboxd (REST files, gRPC Execute)"),
];

/// How the console proves itself to the sandbox-router.
pub const ROUTER_AUTH: [(&str, &str); 3] = [
    ("none", "None (router in allow-all mode)"),
    ("static", "Static bearer token"),
    ("scoped", "Scoped tokens (signing secret)"),
];

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KubernetesConfig {
    pub credentials: String,
    pub api_url: String,
    pub kubeconfig_path: String,
    pub kubeconfig_context: String,
    pub token: String,
    pub ca_cert: String,
    pub insecure_skip_tls_verify: bool,
    pub namespace: String,
    pub warm_pool: String,
    pub reach: String,
    pub router_url: String,
    pub router_auth: String,
    pub router_token: String,
    pub runtime: String,
    pub runtime_port: u16,
    pub grpc_port: u16,
    pub claim_timeout_secs: u32,
    pub timeout_secs: u32,
    pub shutdown_after_secs: u32,
    pub request_timeout_secs: u32,
    pub memory_mb: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        KubernetesConfig {
            credentials: "in_cluster".into(),
            api_url: String::new(),
            kubeconfig_path: String::new(),
            kubeconfig_context: String::new(),
            token: String::new(),
            ca_cert: String::new(),
            insecure_skip_tls_verify: false,
            namespace: "sandbox-console-sandboxes".into(),
            warm_pool: "python-javascript".into(),
            reach: "pod_ip".into(),
            router_url: String::new(),
            router_auth: "none".into(),
            router_token: String::new(),
            runtime: "example".into(),
            runtime_port: 8888,
            grpc_port: 9090,
            claim_timeout_secs: 60,
            timeout_secs: 30,
            shutdown_after_secs: 600,
            request_timeout_secs: 30,
            memory_mb: 256,
            max_output_bytes: MIB,
            max_artifacts: 20,
            max_artifact_bytes: 10 * MIB,
        }
    }
}

/// Written by hand: the tokens never reach a log line.
impl std::fmt::Debug for KubernetesConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesConfig")
            .field("credentials", &self.credentials)
            .field("api_url", &self.api_url)
            .field("token_set", &!self.token.is_empty())
            .field("namespace", &self.namespace)
            .field("warm_pool", &self.warm_pool)
            .field("reach", &self.reach)
            .field("router_url", &self.router_url)
            .field("router_token_set", &!self.router_token.is_empty())
            .finish_non_exhaustive()
    }
}

fn select(options: &[(&str, &str)]) -> FieldKind {
    FieldKind::Select {
        options: options
            .iter()
            .map(|(value, label)| SelectOption {
                value: (*value).into(),
                label: (*label).into(),
            })
            .collect(),
    }
}

pub fn schema() -> ConfigSchema {
    let d = KubernetesConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest file from ./artifacts/ returned with a result.",
    );
    let deployment = |spec: FieldSpec| spec.group(FieldGroup::Deployment);
    ConfigSchema {
        fields: vec![
            deployment(FieldSpec::new("credentials", select(&CREDENTIALS), "Credentials"))
                .describe(
                    "How the console signs in to the Kubernetes API: the service account of its \
                     own pod, a kubeconfig file on the console's machine, or a bearer token.",
                )
                .default_value(json!(d.credentials))
                .destination(),
            deployment(FieldSpec::new("api_url", FieldKind::String, "API server URL"))
                .describe("The API server, e.g. https://10.0.0.1:6443. Needed with a bearer token; ignored otherwise.")
                .placeholder("https://10.0.0.1:6443")
                .destination(),
            deployment(FieldSpec::new("kubeconfig_path", FieldKind::String, "Kubeconfig path"))
                .describe("Path of a kubeconfig file on the console's machine (with kubeconfig credentials).")
                .destination(),
            deployment(FieldSpec::new("kubeconfig_context", FieldKind::String, "Kubeconfig context"))
                .describe("The context to use; blank for the file's current context.")
                .destination(),
            deployment(FieldSpec::new("token", FieldKind::Secret, "Bearer token"))
                .describe("A service account token allowed to create, watch and delete sandboxclaims (with bearer-token credentials)."),
            deployment(FieldSpec::new("ca_cert", FieldKind::Multiline, "CA certificate (PEM)"))
                .describe("The cluster's CA certificate, PEM; blank trusts the system's roots.")
                .destination(),
            deployment(FieldSpec::new("insecure_skip_tls_verify", FieldKind::Boolean, "Skip TLS verification"))
                .describe("Accept any certificate from the API server (the token then goes to whoever answers). Only for a test cluster.")
                .default_value(json!(d.insecure_skip_tls_verify))
                .destination(),
            deployment(FieldSpec::new("namespace", FieldKind::String, "Namespace"))
                .describe("Where the warm pool is, and where claims are made.")
                .default_value(json!(d.namespace))
                .required(),
            deployment(FieldSpec::new("warm_pool", FieldKind::String, "Warm pool"))
                .describe("The SandboxWarmPool each run claims a sandbox from (agent-sandbox v1beta1).")
                .default_value(json!(d.warm_pool))
                .required(),
            deployment(FieldSpec::new("reach", select(&REACH), "Reach pods by"))
                .describe(
                    "Straight at the pod's IP (the console runs in the cluster and the template's \
                     NetworkPolicy lets it in), or through agent-sandbox's sandbox-router.",
                )
                .default_value(json!(d.reach))
                .destination(),
            deployment(FieldSpec::new("router_url", FieldKind::String, "Router URL"))
                .describe("The sandbox-router, e.g. http://sandbox-router-svc.agent-sandbox-system:8080 (when reaching pods through it).")
                .destination(),
            deployment(FieldSpec::new("router_auth", select(&ROUTER_AUTH), "Router authentication"))
                .describe(
                    "What the router is sent: nothing, one bearer token, or a token scoped to the \
                     claimed sandbox and the run's deadline, signed with the router's secret.",
                )
                .default_value(json!(d.router_auth))
                .destination(),
            deployment(FieldSpec::new("router_token", FieldKind::Secret, "Router token or secret"))
                .describe("The router's bearer token, or its scoped-token signing secret (32 bytes or more)."),
            deployment(FieldSpec::new("runtime", select(&RUNTIMES), "Runtime in the pod"))
                .describe(
                    "What runs programs in a claimed pod: the example Python runtime's contract \
                     (deploy/kubernetes serves it), or sandboxd (files over REST, programs over \
                     gRPC, reached at the pod's IP only).",
                )
                .default_value(json!(d.runtime))
                .destination(),
            FieldSpec::new("runtime_port", fields::integer(1, 65_535), "Runtime port")
                .describe("The runtime's HTTP port in the pod: the example runtime's (8888), or sandboxd's REST port (8080).")
                .default_value(json!(d.runtime_port)),
            FieldSpec::new("grpc_port", fields::integer(1, 65_535), "sandboxd gRPC port")
                .describe("sandboxd's gRPC port in the pod (with the sandboxd runtime).")
                .default_value(json!(d.grpc_port)),
            FieldSpec::new("claim_timeout_secs", fields::integer(1, 600), "Claim-ready timeout (seconds)")
                .describe("How long a run waits for its claim to be Ready before it is refused as pool_busy (the API answers 429).")
                .default_value(json!(d.claim_timeout_secs)),
            fields::timeout_secs(d.timeout_secs, "the claim"),
            FieldSpec::new("shutdown_after_secs", fields::integer(60, 86_400), "Shutdown after (seconds)")
                .describe(
                    "Every claim is deleted when its run ends; this is when the cluster deletes a \
                     claim the console could not (it crashed), counted past the run's deadline.",
                )
                .default_value(json!(d.shutdown_after_secs)),
            FieldSpec::new("request_timeout_secs", fields::integer(1, 300), "Request timeout (seconds)")
                .describe("How long one call to the API server or the runtime (create, delete, upload) may take.")
                .default_value(json!(d.request_timeout_secs)),
            fields::memory_mb(
                d.memory_mb,
                "What one Python run may allocate inside the pod (its data segment); past it \
                 the run ends with memory_limit.",
            ),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size; the run then reports output_limit.",
            ),
            max_artifacts,
            max_artifact_bytes,
        ],
    }
}

pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider(raw)?))
}

/// A Kubernetes name: a DNS-1123 subdomain for objects, a label (63) for namespaces.
fn dns_name(text: &str, max: usize) -> Result<(), String> {
    let ok = !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "Enter a Kubernetes name: lowercase letters, digits and '-', at most {max} characters."
        ))
    }
}

/// Validates stored or submitted values and builds the provider, every bad field at once.
pub fn build_provider(raw: &Map<String, Value>) -> Result<KubernetesProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    let credentials = check.text("credentials");
    let reach = check.text("reach");
    let router_auth = check.text("router_auth");
    check.check("runtime", |c| {
        if c.text("runtime") == "sandboxd" && reach == "router" {
            Err("sandboxd's gRPC does not go through the sandbox-router: reach the pods by their IP, or use the example runtime.".into())
        } else {
            Ok(())
        }
    });
    check.check("namespace", |c| {
        dns_name(&c.text("namespace"), 63).map_err(|m| m.replace('.', ""))
    });
    check.check("warm_pool", |c| dns_name(&c.text("warm_pool"), 253));
    check.check("api_url", |c| {
        match (credentials.as_str(), c.text("api_url")) {
            ("token", url) if url.is_empty() => {
                Err("Enter the API server's URL to sign in with a bearer token.".into())
            }
            ("token", url) => http::endpoint(&url, "https://10.0.0.1:6443").map(|_| ()),
            _ => Ok(()),
        }
    });
    check.check("kubeconfig_path", |c| {
        match (credentials.as_str(), c.text("kubeconfig_path")) {
            ("kubeconfig", path) if path.is_empty() => {
                Err("Enter the path of the kubeconfig file on the console's machine.".into())
            }
            ("kubeconfig", path) if !path.starts_with('/') => {
                Err("Enter an absolute path, e.g. /etc/sandbox-console/kubeconfig.".into())
            }
            _ => Ok(()),
        }
    });
    check.check("token", |c| {
        if credentials == "token" && c.text("token").is_empty() {
            Err("Enter the bearer token.".into())
        } else {
            Ok(())
        }
    });
    check.check_if_set("ca_cert", |pem| {
        if pem.contains("-----BEGIN CERTIFICATE-----") {
            Ok(())
        } else {
            Err("Paste the certificate in PEM form (-----BEGIN CERTIFICATE-----).".into())
        }
    });
    check.check("router_url", |c| {
        match (reach.as_str(), c.text("router_url")) {
            ("router", url) if url.is_empty() => {
                Err("Enter the sandbox-router's URL to reach pods through it.".into())
            }
            ("router", url) => {
                http::endpoint(&url, "http://sandbox-router-svc.agent-sandbox-system:8080")
                    .map(|_| ())
            }
            _ => Ok(()),
        }
    });
    check.check("router_token", |c| {
        let token = c.text("router_token");
        match router_auth.as_str() {
            "static" | "scoped" if reach == "router" && token.is_empty() => {
                Err("Enter the router's token or signing secret.".into())
            }
            "scoped" if reach == "router" && token.len() < 32 => {
                Err("The router's scoped-token secret has 32 bytes or more.".into())
            }
            _ => Ok(()),
        }
    });
    KubernetesProvider::new(check.finish()?)
}
