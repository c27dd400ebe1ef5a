//! SandboxClaims (`extensions.agents.x-k8s.io/v1beta1`): made against the warm pool with labels
//! naming this console and the run, watched until Ready (resumed from the last
//! resourceVersion when the server closes the watch), and deleted.

use std::{collections::BTreeMap, time::Duration};

use futures_util::{StreamExt, TryStreamExt};
use kube::{
    api::{
        Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
        WatchEvent, WatchParams,
    },
    Client, ResourceExt,
};
use serde_json::{json, Value};

use super::error::KubernetesError;

pub const GROUP: &str = "extensions.agents.x-k8s.io";
pub const VERSION: &str = "v1beta1";
/// On every claim: made by a sandbox-console.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "sandbox-console";
/// On every claim: which console (a hash of its owner, a label value).
pub const LABEL_CONSOLE: &str = "sandbox-console.io/console";
/// On every claim: which run or session.
pub const LABEL_RUN: &str = "sandbox-console.io/run";
/// The console process that made the claim, `host/pid:start-time` (see `providers::owner`).
pub const ANNOTATION_OWNER: &str = "sandbox-console.io/owner";

/// Claim reasons after which it never becomes Ready (agent-sandbox's SDK stops on these;
/// `PodFailed` and `PodSucceeded` leave no pod to run in).
const TERMINAL: [&str; 9] = [
    "InvalidMetadata",
    "EnvVarsInjectionRejected",
    "VolumeClaimTemplatesError",
    "ClaimExpired",
    "SandboxExpired",
    "TemplateNotFound",
    "WarmPoolNotFound",
    "PodFailed",
    "PodSucceeded",
];

pub fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, kind), plural)
}

/// A Ready claim: where its sandbox is.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// The Sandbox (and pod) name: `<pool>-xxxxx` when adopted from the warm pool.
    pub sandbox: String,
    pub pod_ip: Option<String>,
}

/// The claims of one namespace.
#[derive(Clone)]
pub struct Claims {
    api: Api<DynamicObject>,
    resource: ApiResource,
    namespace: String,
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claims")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// What a new claim carries.
#[derive(Clone, Debug)]
pub struct NewClaim<'a> {
    pub name: &'a str,
    pub warm_pool: &'a str,
    pub console: &'a str,
    pub owner: &'a str,
    /// When the cluster deletes the claim if nobody did (RFC 3339).
    pub shutdown_time: String,
}

impl Claims {
    pub fn new(client: Client, namespace: &str) -> Self {
        let resource = resource("SandboxClaim", "sandboxclaims");
        Claims {
            api: Api::namespaced_with(client, namespace, &resource),
            resource,
            namespace: namespace.to_owned(),
        }
    }

    /// Creates the claim; its resourceVersion, to watch from.
    pub async fn create(&self, claim: &NewClaim<'_>) -> Result<String, KubernetesError> {
        let mut object = DynamicObject::new(claim.name, &self.resource).data(json!({
            "spec": {
                "warmPoolRef": { "name": claim.warm_pool },
                "lifecycle": {
                    "shutdownTime": claim.shutdown_time,
                    "shutdownPolicy": "Delete",
                },
            },
        }));
        object.metadata.labels = Some(BTreeMap::from([
            (LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
            (LABEL_CONSOLE.to_owned(), claim.console.to_owned()),
            (LABEL_RUN.to_owned(), claim.name.to_owned()),
        ]));
        object.metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_OWNER.to_owned(),
            claim.owner.to_owned(),
        )]));
        let created = self
            .api
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| {
                KubernetesError::from_api("create the claim", "create", "sandboxclaims", e)
            })?;
        Ok(created.resource_version().unwrap_or_else(|| "0".into()))
    }

    /// Watches the claim from `version` until it is Ready (with its sandbox named) or
    /// failed for good. A watch the server ends is resumed from the last version seen; an
    /// expired version (410) is read afresh with a get. No deadline here: the caller has it.
    pub async fn ready(&self, name: &str, mut version: String) -> Result<Bound, KubernetesError> {
        let params = WatchParams::default()
            .fields(&format!("metadata.name={name}"))
            .timeout(290);
        loop {
            let stream = match self.api.watch(&params, &version).await {
                Ok(stream) => stream,
                Err(kube::Error::Api(status)) if status.code == 410 => {
                    version = self.reread(name).await?;
                    continue;
                }
                Err(e) => {
                    return Err(KubernetesError::from_api(
                        "watch the claim",
                        "watch",
                        "sandboxclaims",
                        e,
                    ))
                }
            };
            let mut stream = stream.boxed();
            loop {
                let event = match stream.try_next().await {
                    Ok(Some(event)) => event,
                    // The server closed the watch (its timeout, a restart): resume.
                    Ok(None) | Err(kube::Error::ReadEvents(_)) => break,
                    Err(kube::Error::Api(status)) if status.code == 410 => {
                        version = self.reread(name).await?;
                        break;
                    }
                    Err(e) => {
                        return Err(KubernetesError::from_api(
                            "watch the claim",
                            "watch",
                            "sandboxclaims",
                            e,
                        ))
                    }
                };
                match event {
                    WatchEvent::Added(claim) | WatchEvent::Modified(claim) => {
                        if let Some(v) = claim.resource_version() {
                            version = v;
                        }
                        if let Some(outcome) = judge(name, &claim.data) {
                            return outcome;
                        }
                    }
                    WatchEvent::Deleted(_) => {
                        return Err(KubernetesError::ClaimFailed {
                            claim: name.to_owned(),
                            reason: "Deleted".into(),
                            message: "the claim was deleted before it was Ready".into(),
                        })
                    }
                    WatchEvent::Bookmark(bookmark) => version = bookmark.metadata.resource_version,
                    WatchEvent::Error(status) if status.code == 410 => {
                        version = self.reread(name).await?;
                        break;
                    }
                    WatchEvent::Error(status) => {
                        return Err(KubernetesError::Api {
                            call: "watch the claim",
                            code: status.code,
                            message: status.message,
                        })
                    }
                }
            }
        }
    }

    /// A get of the claim, for when the watch's version expired: its state now (judged by
    /// the caller's next watch events) and the version to watch from.
    async fn reread(&self, name: &str) -> Result<String, KubernetesError> {
        let claim =
            self.api.get(name).await.map_err(|e| {
                KubernetesError::from_api("read the claim", "get", "sandboxclaims", e)
            })?;
        // Watching from the version of this very object replays nothing: judge it here.
        if let Some(Err(failed)) = judge(name, &claim.data) {
            return Err(failed);
        }
        Ok(claim.resource_version().unwrap_or_else(|| "0".into()))
    }

    /// Deletes the claim (its Sandbox and pod go with it). Gone already is fine.
    pub async fn delete(&self, name: &str) -> Result<(), KubernetesError> {
        match self.api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(KubernetesError::from_api(
                "delete the claim",
                "delete",
                "sandboxclaims",
                e,
            )),
        }
    }

    /// The claims made by sandbox-consoles: (name, owner annotation).
    pub async fn ours(&self) -> Result<Vec<(String, String)>, KubernetesError> {
        let params = ListParams::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGED_BY}"));
        let list = self.api.list(&params).await.map_err(|e| {
            KubernetesError::from_api("list the claims", "list", "sandboxclaims", e)
        })?;
        Ok(list
            .items
            .into_iter()
            .map(|claim| {
                let owner = claim
                    .annotations()
                    .get(ANNOTATION_OWNER)
                    .cloned()
                    .unwrap_or_default();
                (claim.name_any(), owner)
            })
            .collect())
    }
}

/// What a claim's status says: Ready with its sandbox, failed for good, or not yet (`None`).
fn judge(name: &str, data: &Value) -> Option<Result<Bound, KubernetesError>> {
    let status = data.get("status")?;
    let ready = status
        .get("conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?;
    let text = |key: &str| ready.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("status") {
        "True" => {
            let sandbox = status.get("sandbox")?;
            let sandbox_name = sandbox
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())?;
            let pod_ip = sandbox
                .get("podIPs")
                .and_then(Value::as_array)
                .and_then(|ips| pick_ip(ips.iter().filter_map(Value::as_str)));
            Some(Ok(Bound {
                sandbox: sandbox_name.to_owned(),
                pod_ip,
            }))
        }
        "False" if TERMINAL.contains(&text("reason")) => Some(Err(KubernetesError::ClaimFailed {
            claim: name.to_owned(),
            reason: text("reason").to_owned(),
            message: text("message").to_owned(),
        })),
        _ => None,
    }
}

/// The first IPv4 address (an IPv4-mapped IPv6 one as IPv4), else the first address.
fn pick_ip<'a>(ips: impl Iterator<Item = &'a str>) -> Option<String> {
    let parsed: Vec<std::net::IpAddr> = ips.filter_map(|ip| ip.parse().ok()).collect();
    let v4 = parsed.iter().find_map(|ip| match ip {
        std::net::IpAddr::V4(v4) => Some(*v4),
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    });
    v4.map(|v4| v4.to_string())
        .or_else(|| parsed.first().map(ToString::to_string))
}

/// How long to wait and what the warm pool looked like, for a claim that was not Ready.
pub fn not_ready(waited: Duration, pool: String) -> KubernetesError {
    KubernetesError::NotReady { waited, pool }
}

/// Deletes its claim when dropped without `done()`: a run abandoned at its deadline (its
/// future dropped) still leaves no claim behind.
pub struct ClaimGuard {
    pub claims: Option<Claims>,
    pub name: String,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if let (Some(claims), Ok(handle)) =
            (self.claims.take(), tokio::runtime::Handle::try_current())
        {
            let name = std::mem::take(&mut self.name);
            handle.spawn(async move {
                if let Err(error) = claims.delete(&name).await {
                    tracing::warn!(%error, claim = %name, "could not delete an abandoned claim");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_claim_names_its_sandbox_and_a_terminal_reason_ends_the_wait() {
        let ready = json!({ "status": {
            "conditions": [{ "type": "Ready", "status": "True", "reason": "DependenciesReady" }],
            "sandbox": { "name": "pool-x7k2p", "podIPs": ["fd00::1", "::ffff:10.0.0.7"] },
        }});
        let pending = json!({ "status": {
            "conditions": [{ "type": "Ready", "status": "False", "reason": "DependenciesNotReady" }],
        }});
        let missing_pool = json!({ "status": {
            "conditions": [{ "type": "Ready", "status": "False", "reason": "WarmPoolNotFound",
                             "message": "SandboxWarmPool \"p\" not found" }],
        }});

        let bound = judge("c", &ready).unwrap().unwrap();

        assert_eq!(
            bound,
            Bound {
                sandbox: "pool-x7k2p".into(),
                pod_ip: Some("10.0.0.7".into())
            }
        );
        assert!(judge("c", &pending).is_none());
        assert!(judge("c", &json!({})).is_none());
        let Some(Err(KubernetesError::ClaimFailed { reason, .. })) = judge("c", &missing_pool)
        else {
            panic!("a missing pool is final");
        };
        assert_eq!(reason, "WarmPoolNotFound");
    }
}
