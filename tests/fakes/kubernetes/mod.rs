//! Fake of a Kubernetes API server with kubernetes-sigs/agent-sandbox's extensions (v1beta1),
//! as the API server serves custom resources (and as kube-rs and agent-sandbox's Python
//! client talk to it):
//! - bearer token checked (401 `Status` `Unauthorized` otherwise); RBAC denials as the server
//!   words them (403 `Status` `Forbidden`, naming the verb, resource, group and namespace);
//! - `sandboxclaims`: POST → 201 with `metadata.{uid, resourceVersion, generation,
//!   creationTimestamp}` (409 `AlreadyExists`; 422 `Invalid` for a body the CRD schema in
//!   `SandboxClaim.yaml` refuses, checked by `crd.rs`), GET one (404 `NotFound`), list by
//!   `labelSelector`, DELETE (200 `Status` `Success`, then 404), and watch (`watch=true`,
//!   `fieldSelector=metadata.name=`, `resourceVersion`, `timeoutSeconds`): newline-delimited
//!   `{"type": ADDED|MODIFIED|DELETED, "object"}` after the version asked for, or one `ERROR`
//!   event with a 410 `Expired` `Status` for a version older than the log keeps;
//! - the claim controller's part: a claim is `Ready=False` (`DependenciesNotReady`) at once,
//!   and `Ready=True` (`DependenciesReady`, `status.sandbox.{name, podIPs}`, the sandbox named
//!   `<pool>-<5 letters>`) after `ready_after`, its pod's runtime (`pod.rs`) then listening
//!   on the pod IP; a claim naming another warm pool is `Ready=False` `WarmPoolNotFound`;
//! - `sandboxwarmpools` and `sandboxtemplates`: GET one; `selfsubjectaccessreviews`: POST.
//!
//! Not confirmed against a real cluster: the exact texts of messages, and the timing of the
//! controller's status updates.

mod crd;
mod pod;
mod pool;
pub mod router;
mod sandboxd;
mod watch;

use std::{
    collections::{BTreeMap, HashMap},
    net::IpAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use futures_util::future::BoxFuture;
use sandbox_console::sandbox::providers::local::LocalProvider;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::{engine, serve, Served, KEPT_OUTPUT};

pub const TOKEN: &str = "k8s-sa-token-0123456789abcdef";
pub const NAMESPACE: &str = "sandbox-console-sandboxes";
pub const POOL: &str = "python-javascript";
const GROUP: &str = "extensions.agents.x-k8s.io";
const API: &str = "extensions.agents.x-k8s.io/v1beta1";

/// How the fake cluster behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// From a claim's creation to its Ready.
    pub ready_after: Duration,
    pub never_ready: bool,
    pub desired: u64,
    pub ready_replicas: u64,
    pub runtime_class: Option<String>,
    /// (verb, resource) pairs the token may not use.
    pub denied: Vec<(&'static str, &'static str)>,
    /// The server closes each watch after this many events.
    pub close_watches_after: Option<usize>,
    /// The pod dies when a run starts.
    pub kill_pod_on_execute: bool,
    /// Pods made by the test (containers serving on the provider's runtime port, one per
    /// claim, removed with it) instead of the ones the fake serves.
    pub pods: Option<Pods>,
    /// The pods run sandboxd (REST on the runtime port, gRPC on `grpc_port`) instead of the
    /// example runtime.
    pub sandboxd: bool,
}

/// Makes a claim's pod and removes it (a test's containers).
pub trait PodMaker: Send + Sync {
    /// The pod IP of a new pod for `claim`, once its runtime answers (as a readiness probe).
    fn make(&self, claim: &str) -> BoxFuture<'static, IpAddr>;
    /// The claim is gone: its pod goes too.
    fn remove(&self, claim: &str);
}

#[derive(Clone)]
pub struct Pods(pub Arc<dyn PodMaker>);

impl std::fmt::Debug for Pods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pods")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ready_after: Duration::from_millis(50),
            never_ready: false,
            desired: 4,
            ready_replicas: 4,
            runtime_class: Some("gvisor".into()),
            denied: Vec::new(),
            close_watches_after: None,
            kill_pod_on_execute: false,
            pods: None,
            sandboxd: false,
        }
    }
}

#[derive(Default)]
struct Cluster {
    version: u64,
    claims: BTreeMap<String, Value>,
    /// Every change of a claim: (version, type, object).
    events: Vec<(u64, &'static str, Value)>,
    pods: HashMap<String, (IpAddr, pod::Files, Option<tokio::task::JoinHandle<()>>)>,
    next_address: u32,
    /// Claims ever made (to check none is left).
    made: u64,
}

pub struct Inner {
    cluster: Mutex<Cluster>,
    changed: broadcast::Sender<()>,
    pub options: Options,
    pub engine: Arc<LocalProvider>,
    schema: Value,
    pub port: u16,
    pub grpc_port: u16,
}

impl Inner {
    /// Runs `work` on `claim`'s pod files, if the pod is there.
    pub fn with_pod<T>(&self, claim: &str, work: impl FnOnce(&mut pod::Files) -> T) -> Option<T> {
        let mut cluster = self.cluster.lock().unwrap();
        cluster.pods.get_mut(claim).map(|(_, files, _)| work(files))
    }

    /// Records a change of a claim and tells the watches.
    fn change(&self, cluster: &mut Cluster, kind: &'static str, mut object: Value) -> Value {
        cluster.version += 1;
        object["metadata"]["resourceVersion"] = json!(cluster.version.to_string());
        cluster.events.push((cluster.version, kind, object.clone()));
        let _ = self.changed.send(());
        object
    }

    fn set_ready(&self, claim: &str, ready: Value, sandbox: Option<Value>) {
        let mut cluster = self.cluster.lock().unwrap();
        let Some(mut object) = cluster.claims.get(claim).cloned() else {
            return;
        };
        object["status"]["conditions"] = json!([ready]);
        if let Some(sandbox) = sandbox {
            object["status"]["sandbox"] = sandbox;
        }
        let object = self.change(&mut cluster, "MODIFIED", object);
        cluster.claims.insert(claim.to_owned(), object);
    }

    /// The pod IP of the sandbox named `sandbox` (what the cluster's DNS would answer).
    pub fn pod_of_sandbox(&self, sandbox: &str) -> Option<IpAddr> {
        let cluster = self.cluster.lock().unwrap();
        cluster
            .claims
            .iter()
            .find(|(_, claim)| claim["status"]["sandbox"]["name"] == sandbox)
            .and_then(|(name, _)| cluster.pods.get(name))
            .map(|(address, _, _)| *address)
    }

    /// The pod of `claim` died: its claim says so.
    pub fn pod_failed(&self, claim: &str) {
        self.set_ready(
            claim,
            condition("False", "PodFailed", "Pod exists with phase: Failed"),
            None,
        );
    }
}

/// Now, as the API server writes times.
fn now() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn condition(status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": "Ready", "status": status, "reason": reason, "message": message,
        "observedGeneration": 1, "lastTransitionTime": now(),
    })
}

pub struct Kubernetes {
    pub served: Served,
    inner: Arc<Inner>,
}

impl Kubernetes {
    pub fn url(&self) -> String {
        self.served.url()
    }

    /// The port every pod's runtime listens on.
    pub fn runtime_port(&self) -> u16 {
        self.inner.port
    }

    /// The port of every pod's sandboxd gRPC service (with `Options::sandboxd`).
    pub fn grpc_port(&self) -> u16 {
        self.inner.grpc_port
    }

    /// Claims that exist now.
    pub fn live_claims(&self) -> usize {
        self.inner.cluster.lock().unwrap().claims.len()
    }

    /// Claims made since the start.
    pub fn claims_made(&self) -> u64 {
        self.inner.cluster.lock().unwrap().made
    }

    /// A claim as another console would have left it (its owner annotation as given).
    pub fn leave_claim(&self, name: &str, owner: &str) {
        let inner = &self.inner;
        let mut cluster = inner.cluster.lock().unwrap();
        let object = json!({
            "apiVersion": API, "kind": "SandboxClaim",
            "metadata": { "name": name, "namespace": NAMESPACE, "uid": super::id("uid-"),
                "labels": { "app.kubernetes.io/managed-by": "sandbox-console" },
                "annotations": { "sandbox-console.io/owner": owner } },
            "spec": { "warmPoolRef": { "name": POOL } },
        });
        let object = inner.change(&mut cluster, "ADDED", object);
        cluster.claims.insert(name.to_owned(), object);
    }

    pub fn has_claim(&self, name: &str) -> bool {
        self.inner.cluster.lock().unwrap().claims.contains_key(name)
    }
}

pub async fn start(options: Options) -> Kubernetes {
    let (first, address) = pod::listen(2 + rand::random::<u32>() % 60_000, 0).await;
    let port = first.local_addr().unwrap().port();
    let grpc_port = tokio::net::TcpListener::bind((address, 0))
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    drop((first, address));
    let inner = Arc::new(Inner {
        cluster: Mutex::new(Cluster {
            next_address: 2 + rand::random::<u32>() % 60_000,
            ..Cluster::default()
        }),
        changed: broadcast::channel(1024).0,
        options,
        engine: engine(512, KEPT_OUTPUT),
        schema: crd::schema(include_str!("SandboxClaim.yaml"), "v1beta1"),
        port,
        grpc_port,
    });
    let claims = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxclaims";
    let router = Router::new()
        .route(claims, get(watch::list_or_watch).post(create))
        .route(&format!("{claims}/{{name}}"), get(read).delete(remove))
        .route(
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxwarmpools/{name}",
            get(pool::warm_pool),
        )
        .route(
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxtemplates/{name}",
            get(pool::template),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(pool::review),
        )
        .with_state(inner.clone());
    Kubernetes {
        served: serve(router).await,
        inner,
    }
}

fn status(code: StatusCode, reason: &str, message: String) -> Response {
    (
        code,
        Json(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code.as_u16(),
        })),
    )
        .into_response()
}

/// 401 or 403 for a request the token may not make, as the API server answers it.
fn refused(
    inner: &Inner,
    headers: &HeaderMap,
    verb: &str,
    resource: &str,
    ns: &str,
) -> Option<Response> {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {TOKEN}")) {
        return Some(status(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "Unauthorized".into(),
        ));
    }
    inner.options.denied.iter().any(|(v, r)| *v == verb && *r == resource).then(|| {
        status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "{resource}.{GROUP} is forbidden: User \"system:serviceaccount:sandbox-console:sandbox-console\" \
                 cannot {verb} resource \"{resource}\" in API group \"{GROUP}\" in the namespace \"{ns}\""
            ),
        )
    })
}

fn not_found(resource: &str, name: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("{resource}.{GROUP} \"{name}\" not found"),
    )
}

async fn create(
    State(inner): State<Arc<Inner>>,
    Path(ns): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refusal) = refused(&inner, &headers, "create", "sandboxclaims", &ns) {
        return refusal;
    }
    let Ok(mut object) = serde_json::from_slice::<Value>(&body) else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "the body is not JSON".into(),
        );
    };
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut problems = crd::problems(&inner.schema, &object);
    if object["apiVersion"] != API || object["kind"] != "SandboxClaim" {
        problems.push(format!(
            "apiVersion/kind: {} {}",
            object["apiVersion"], object["kind"]
        ));
    }
    if name.is_empty()
        || name.len() > 253
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        problems.push(format!(
            "metadata.name: {name:?} is not a DNS-1123 subdomain"
        ));
    }
    if !problems.is_empty() {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!(
                "SandboxClaim.{GROUP} \"{name}\" is invalid: {}",
                problems.join(", ")
            ),
        );
    }
    let pool = object["spec"]["warmPoolRef"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let created = {
        let mut cluster = inner.cluster.lock().unwrap();
        if cluster.claims.contains_key(&name) {
            return status(
                StatusCode::CONFLICT,
                "AlreadyExists",
                format!("sandboxclaims.{GROUP} \"{name}\" already exists"),
            );
        }
        cluster.made += 1;
        object["metadata"]["namespace"] = json!(ns);
        object["metadata"]["uid"] = json!(super::id("uid-"));
        object["metadata"]["generation"] = json!(1);
        object["metadata"]["creationTimestamp"] = json!(now());
        let object = inner.change(&mut cluster, "ADDED", object);
        cluster.claims.insert(name.clone(), object.clone());
        object
    };
    tokio::spawn(control(inner.clone(), name, pool));
    (StatusCode::CREATED, Json(created)).into_response()
}

/// The claim controller's part for one claim.
async fn control(inner: Arc<Inner>, claim: String, pool: String) {
    tokio::time::sleep(Duration::from_millis(5)).await;
    if pool != POOL {
        let message = format!("SandboxWarmPool \"{pool}\" not found");
        inner.set_ready(
            &claim,
            condition("False", "WarmPoolNotFound", &message),
            None,
        );
        return;
    }
    inner.set_ready(
        &claim,
        condition("False", "DependenciesNotReady", "Pod does not exist"),
        None,
    );
    if inner.options.never_ready {
        return;
    }
    tokio::time::sleep(inner.options.ready_after).await;
    let first = {
        let mut cluster = inner.cluster.lock().unwrap();
        if !cluster.claims.contains_key(&claim) {
            return;
        }
        cluster.next_address += 1;
        cluster.next_address
    };
    let (address, server) = match inner.options.pods.clone() {
        Some(pods) => (pods.0.make(&claim).await, None),
        None => {
            let (listener, address) = pod::listen(first, inner.port).await;
            let server = if inner.options.sandboxd {
                let grpc = tokio::net::TcpListener::bind((address, inner.grpc_port))
                    .await
                    .expect("the pod's gRPC port");
                sandboxd::serve(inner.clone(), claim.clone(), listener, grpc)
            } else {
                pod::serve(inner.clone(), claim.clone(), listener)
            };
            (address, Some(server))
        }
    };
    {
        let mut cluster = inner.cluster.lock().unwrap();
        if !cluster.claims.contains_key(&claim) {
            if let Some(server) = server {
                server.abort();
            }
            if let Some(pods) = &inner.options.pods {
                pods.0.remove(&claim);
            }
            return;
        }
        cluster
            .pods
            .insert(claim.clone(), (address, pod::Files::default(), server));
    }
    let suffix: String = (0..5)
        .map(|_| (b'a' + rand::random::<u8>() % 26) as char)
        .collect();
    inner.set_ready(
        &claim,
        condition("True", "DependenciesReady", "Pod is Ready"),
        Some(json!({ "name": format!("{pool}-{suffix}"), "podIPs": [address.to_string()] })),
    );
}

async fn read(
    State(inner): State<Arc<Inner>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&inner, &headers, "get", "sandboxclaims", &ns) {
        return refusal;
    }
    match inner.cluster.lock().unwrap().claims.get(&name) {
        Some(object) => Json(object.clone()).into_response(),
        None => not_found("sandboxclaims", &name),
    }
}

async fn remove(
    State(inner): State<Arc<Inner>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&inner, &headers, "delete", "sandboxclaims", &ns) {
        return refusal;
    }
    let mut cluster = inner.cluster.lock().unwrap();
    let Some(object) = cluster.claims.remove(&name) else {
        return not_found("sandboxclaims", &name);
    };
    if let Some((_, _, Some(server))) = cluster.pods.remove(&name) {
        server.abort();
    }
    if let Some(pods) = &inner.options.pods {
        pods.0.remove(&name);
    }
    let uid = object["metadata"]["uid"].clone();
    inner.change(&mut cluster, "DELETED", object);
    Json(json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": { "name": name, "group": GROUP, "kind": "sandboxclaims", "uid": uid },
    }))
    .into_response()
}
