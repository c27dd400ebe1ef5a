//! What the health check looks at: the API answers and accepts the credentials, the
//! agent-sandbox resources exist, the warm pool's ready replicas against its desired ones,
//! the template's RuntimeClass, and whether the credentials may do every verb a run needs.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::{
    api::{Api, DynamicObject, PostParams},
    Client,
};
use serde_json::Value;

use super::{claims, error::KubernetesError};

/// The verbs a run and the sweep use on `sandboxclaims`.
pub const CLAIM_VERBS: [&str; 5] = ["create", "get", "watch", "list", "delete"];

/// The warm pool as the cluster reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pool {
    pub desired: u64,
    pub ready: u64,
    pub template: String,
    pub runtime_class: Option<String>,
    /// Where the template's pods may connect, as its network policy says.
    pub network: String,
}

impl Pool {
    pub fn describe(&self) -> String {
        format!(
            "has {} of {} sandboxes ready (template {}{}, outbound network: {})",
            self.ready,
            self.desired,
            self.template,
            self.runtime_class
                .as_deref()
                .map(|class| format!(", RuntimeClass {class}"))
                .unwrap_or_default(),
            self.network
        )
    }
}

/// The template's outbound network in words: agent-sandbox's controller writes the
/// template's `networkPolicy` as the pods' NetworkPolicy (Managed), or its own default when
/// there is none (the internet, no private addresses), or leaves it to the cluster (Unmanaged).
fn network(spec: Option<&Value>) -> String {
    let spec = spec.cloned().unwrap_or_default();
    if spec["networkPolicyManagement"] == "Unmanaged" {
        return "the cluster's own policies (Unmanaged)".into();
    }
    match spec["networkPolicy"]["egress"].as_array() {
        _ if spec["networkPolicy"].is_null() => {
            "agent-sandbox's default: the internet, no private addresses".into()
        }
        None => "none".into(),
        Some(rules) if rules.is_empty() => "none".into(),
        Some(rules) => format!("{} egress rule(s)", rules.len()),
    }
}

fn number(value: Option<&Value>) -> u64 {
    value.and_then(Value::as_u64).unwrap_or(0)
}

/// Reads the warm pool and its template.
pub async fn pool(client: &Client, namespace: &str, name: &str) -> Result<Pool, KubernetesError> {
    let pools: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &claims::resource("SandboxWarmPool", "sandboxwarmpools"),
    );
    let pool = pools.get(name).await.map_err(|e| match e {
        kube::Error::Api(status) if status.code == 404 => KubernetesError::Api {
            call: "read the warm pool",
            code: 404,
            message: format!(
                "there is no SandboxWarmPool {name:?} in the namespace {namespace:?} (or agent-sandbox's \
                 extensions are not installed)"
            ),
        },
        other => KubernetesError::from_api("read the warm pool", "get", "sandboxwarmpools", other),
    })?;
    let spec = pool.data.get("spec");
    let status = pool.data.get("status");
    let template = spec
        .and_then(|s| s.pointer("/sandboxTemplateRef/name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let desired = spec
        .and_then(|s| s.get("replicas"))
        .map_or(1, |r| number(Some(r)));
    let ready = number(status.and_then(|s| s.get("readyReplicas")));
    let templates: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &claims::resource("SandboxTemplate", "sandboxtemplates"),
    );
    let (runtime_class, network) = match templates.get(&template).await {
        Ok(found) => (
            found
                .data
                .pointer("/spec/podTemplate/spec/runtimeClassName")
                .and_then(Value::as_str)
                .map(str::to_owned),
            network(found.data.get("spec")),
        ),
        Err(e) => {
            return Err(KubernetesError::from_api(
                "read the template",
                "get",
                "sandboxtemplates",
                e,
            ))
        }
    };
    Ok(Pool {
        desired,
        ready,
        template,
        runtime_class,
        network,
    })
}

/// The first verb on `sandboxclaims` the credentials may not use, if any.
pub async fn missing_verb(
    client: &Client,
    namespace: &str,
) -> Result<Option<&'static str>, KubernetesError> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    for verb in CLAIM_VERBS {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(namespace.to_owned()),
                    verb: Some(verb.to_owned()),
                    group: Some(claims::GROUP.to_owned()),
                    resource: Some("sandboxclaims".to_owned()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let answer = reviews
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| {
                KubernetesError::from_api(
                    "review the access",
                    "create",
                    "selfsubjectaccessreviews",
                    e,
                )
            })?;
        if !answer.status.is_some_and(|s| s.allowed) {
            return Ok(Some(verb));
        }
    }
    Ok(None)
}
