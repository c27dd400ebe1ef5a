//! How a claimed pod's runtime is reached: straight at the pod's IP, or through
//! agent-sandbox's sandbox-router with its `X-Sandbox-*` headers and a bearer token, either
//! one static token or one scoped to the sandbox and the run's deadline (the router's
//! `scoped-token` mode: `v1.<payload>.<signature>`, HMAC-SHA256 with the router's secret).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use hmac::{Hmac, Mac};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::json;
use sha2::Sha256;

use super::{claims::Bound, config::KubernetesConfig, error::KubernetesError, sandboxd::Sandboxd};

/// Where a run's requests go, and what they carry.
#[derive(Clone)]
pub struct Reached {
    pub base: String,
    pub headers: HeaderMap,
    /// The pod's sandboxd, when it is the runtime (`base` is then its REST port).
    pub sandboxd: Option<Sandboxd>,
}

impl std::fmt::Debug for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reached")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// The way to `bound`'s runtime until `until` (a scoped token expires then).
pub fn reach(
    config: &KubernetesConfig,
    bound: &Bound,
    until: Duration,
) -> Result<Reached, KubernetesError> {
    let port = config.runtime_port;
    if config.reach != "router" {
        let ip = bound
            .pod_ip
            .as_deref()
            .ok_or_else(|| KubernetesError::Runtime {
                sandbox: bound.sandbox.clone(),
                message: "the claim is Ready but names no pod IP".into(),
            })?;
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.to_owned()
        };
        let sandboxd = (config.runtime == "sandboxd")
            .then(|| {
                Sandboxd::at(
                    ip,
                    config.grpc_port,
                    &bound.sandbox,
                    Duration::from_secs(config.request_timeout_secs.into()),
                )
            })
            .transpose()?;
        return Ok(Reached {
            base: format!("http://{host}:{port}"),
            headers: HeaderMap::new(),
            sandboxd,
        });
    }
    if config.runtime == "sandboxd" {
        return Err(KubernetesError::Runtime {
            sandbox: bound.sandbox.clone(),
            message: "sandboxd's gRPC is not carried by the sandbox-router: reach the pods by IP"
                .into(),
        });
    }
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    };
    put("x-sandbox-id", &bound.sandbox);
    put("x-sandbox-namespace", config.namespace.trim());
    put("x-sandbox-port", &port.to_string());
    put("x-sandbox-timeout", &until.as_secs().max(1).to_string());
    let token = match config.router_auth.as_str() {
        "static" => Some(config.router_token.clone()),
        "scoped" => Some(scoped_token(
            config.router_token.as_bytes(),
            config.namespace.trim(),
            &bound.sandbox,
            SystemTime::now() + until,
        )),
        _ => None,
    };
    // The scoped mode refuses a request that names the pod's IP (it routes by name only).
    if config.router_auth != "scoped" {
        if let Some(ip) = &bound.pod_ip {
            put("x-sandbox-pod-ip", ip);
        }
    }
    if let Some(token) = token {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
                KubernetesError::Credentials("the router token is not a header value".into())
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(Reached {
        base: config.router_url.trim().trim_end_matches('/').to_owned(),
        headers,
        sandboxd: None,
    })
}

/// The router's scoped token for sandbox `name` in `namespace`, valid until `expires`.
pub fn scoped_token(secret: &[u8], namespace: &str, name: &str, expires: SystemTime) -> String {
    let exp = expires
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let payload =
        URL_SAFE_NO_PAD.encode(json!({ "ns": namespace, "name": name, "exp": exp }).to_string());
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(b"agent-sandbox/scoped-token/v1.");
    mac.update(payload.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("v1.{payload}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scoped_token_signs_its_namespace_name_and_expiry() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let expires = UNIX_EPOCH + Duration::from_secs(1_800_000_000);

        let token = scoped_token(secret, "sandboxes", "pool-x7k2p", expires);

        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        assert_eq!(parts[0], "v1");
        let payload: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            payload,
            json!({ "ns": "sandboxes", "name": "pool-x7k2p", "exp": 1_800_000_000u64 })
        );
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(format!("agent-sandbox/scoped-token/v1.{}", parts[1]).as_bytes());
        mac.verify_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
            .expect("the signature is the router's");
        let other = scoped_token(
            b"another secret of thirty-two bytes!",
            "sandboxes",
            "pool-x7k2p",
            expires,
        );
        assert_ne!(token, other);
    }
}
