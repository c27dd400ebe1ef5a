//! The warm pool and its template (GET one each), and the SelfSubjectAccessReview (POST), as
//! the provider's health check reads them.

use std::sync::Arc;

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::{json, Value};

use super::{not_found, refused, status, Inner, API, POOL, TOKEN};

pub async fn warm_pool(
    State(inner): State<Arc<Inner>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&inner, &headers, "get", "sandboxwarmpools", &ns) {
        return refusal;
    }
    if name != POOL {
        return not_found("sandboxwarmpools", &name);
    }
    let mut status = json!({ "replicas": inner.options.desired, "selector": "agents.x-k8s.io/warm-pool-sandbox=1a2b3c4d" });
    // Omitted when zero, as the controller writes it.
    if inner.options.ready_replicas > 0 {
        status["readyReplicas"] = json!(inner.options.ready_replicas);
    }
    Json(json!({
        "apiVersion": API, "kind": "SandboxWarmPool",
        "metadata": { "name": POOL, "namespace": ns, "resourceVersion": "7" },
        "spec": { "replicas": inner.options.desired, "sandboxTemplateRef": { "name": POOL }, "updateStrategy": { "type": "Recreate" } },
        "status": status,
    }))
    .into_response()
}

pub async fn template(
    State(inner): State<Arc<Inner>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&inner, &headers, "get", "sandboxtemplates", &ns) {
        return refusal;
    }
    if name != POOL {
        return not_found("sandboxtemplates", &name);
    }
    let mut spec = json!({ "containers": [{ "name": "runtime", "image": "sandbox-runtime", "ports": [{ "containerPort": 8888 }] }] });
    if let Some(class) = &inner.options.runtime_class {
        spec["runtimeClassName"] = json!(class);
    }
    Json(json!({
        "apiVersion": API, "kind": "SandboxTemplate",
        "metadata": { "name": POOL, "namespace": ns, "resourceVersion": "5" },
        "spec": { "podTemplate": { "spec": spec }, "networkPolicyManagement": "Managed",
            "networkPolicy": { "ingress": [{ "ports": [{ "port": 8888 }] }], "egress": [] } },
    }))
    .into_response()
}

pub async fn review(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Json(mut body): Json<Value>,
) -> Response {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {TOKEN}")) {
        return status(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "Unauthorized".into(),
        );
    }
    let asked = &body["spec"]["resourceAttributes"];
    let verb = asked["verb"].as_str().unwrap_or_default();
    let resource = asked["resource"].as_str().unwrap_or_default();
    let allowed = !inner
        .options
        .denied
        .iter()
        .any(|(v, r)| *v == verb && *r == resource);
    body["status"] = json!({ "allowed": allowed });
    (StatusCode::CREATED, Json(body)).into_response()
}
