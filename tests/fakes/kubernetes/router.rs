//! Fake of agent-sandbox's sandbox-router (the Go router, `sandbox-router/` at 2fd412d: its
//! proxy, `authz/scopedtoken.go` and `authz/identity.go`, read, not run): every request is
//! forwarded to the sandbox the `X-Sandbox-*` headers name, after its bearer token is checked.
//! - `X-Sandbox-ID` required (400 `{"detail"}` without it), `X-Sandbox-Namespace` (default
//!   `default`), `X-Sandbox-Port` (default 8888), `X-Sandbox-Timeout` (seconds);
//! - the target: `X-Sandbox-Pod-IP` when given, else the sandbox's name as the cluster's DNS
//!   would resolve it (here: the pod IP the fake cluster gave it); 502 when nothing answers;
//! - `Authorization: Bearer` (the prefix in any case) a static token, or a scoped one:
//!   `v1.<payload>.<sig>`, the payload base64url (no padding) of `{"ns", "name", "exp"}`, the
//!   signature HMAC-SHA256 with the router's secret over `agent-sandbox/scoped-token/v1.` and
//!   the payload; `exp` exclusive; 401 `{"detail": "unauthenticated"}` for a missing, bad or
//!   expired token, 403 `{"detail": "forbidden"}` for one naming another sandbox, or any
//!   request that carries `X-Sandbox-Pod-Ip` or `X-Sandbox-Uid` in this mode;
//! - `Host` and `Authorization` are not forwarded.
//!
//! Differs from the real router: pod IPs on loopback are accepted (the fake's pods listen
//! there; the Python router refuses them). Not confirmed: the routers' exact texts beyond the
//! ones quoted, and their behaviour under load.

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::{
    body::{to_bytes, Body},
    extract::{Request, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json, Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use super::{super::serve, Inner, Kubernetes, Served};

/// How the router checks its callers.
#[derive(Clone)]
pub enum Auth {
    Static(String),
    Scoped(Vec<u8>),
}

#[derive(Clone)]
struct Routing {
    inner: Arc<Inner>,
    auth: Auth,
    client: reqwest::Client,
}

/// Starts a router in front of `cluster`'s pods.
pub async fn start(cluster: &Kubernetes, auth: Auth) -> Served {
    let routing = Routing {
        inner: cluster.inner.clone(),
        auth,
        client: reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
    };
    serve(Router::new().fallback(forward).with_state(routing)).await
}

fn detail(code: StatusCode, text: &str) -> Response {
    (code, Json(json!({ "detail": text }))).into_response()
}

/// The scoped token's claims when its signature is the secret's.
fn verified(secret: &[u8], token: &str) -> Option<Value> {
    let rest = token.strip_prefix("v1.")?;
    let (payload, signature) = rest.split_once('.')?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    mac.update(format!("agent-sandbox/scoped-token/v1.{payload}").as_bytes());
    mac.verify_slice(&URL_SAFE_NO_PAD.decode(signature).ok()?)
        .ok()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

async fn forward(State(routing): State<Routing>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let bearer = header("authorization").and_then(|value| {
        let (scheme, token) = value.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_owned())
    });
    let Some(id) = header("x-sandbox-id") else {
        return detail(StatusCode::BAD_REQUEST, "X-Sandbox-ID header is required.");
    };
    let namespace = header("x-sandbox-namespace").unwrap_or_else(|| "default".into());
    match &routing.auth {
        Auth::Static(token) => {
            if bearer.as_deref() != Some(token.as_str()) {
                return detail(StatusCode::UNAUTHORIZED, "unauthenticated");
            }
        }
        Auth::Scoped(secret) => {
            let Some(claims) = bearer.as_deref().and_then(|t| verified(secret, t)) else {
                return detail(StatusCode::UNAUTHORIZED, "unauthenticated");
            };
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs();
            if claims["exp"].as_u64().is_none_or(|exp| now >= exp) {
                return detail(StatusCode::UNAUTHORIZED, "unauthenticated");
            }
            if claims["ns"] != namespace.as_str()
                || claims["name"] != id.as_str()
                || header("x-sandbox-pod-ip").is_some()
                || header("x-sandbox-uid").is_some()
            {
                return detail(StatusCode::FORBIDDEN, "forbidden");
            }
        }
    }
    let port: u16 = match header("x-sandbox-port").map(|p| p.parse()) {
        None => 8888,
        Some(Ok(port)) => port,
        Some(Err(_)) => return detail(StatusCode::BAD_REQUEST, "Invalid port format."),
    };
    let timeout = header("x-sandbox-timeout")
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .map_or(Duration::from_secs(180), |t| {
            Duration::from_secs_f64(t.min(180.0))
        });
    let address = match header("x-sandbox-pod-ip") {
        Some(ip) => match ip.parse::<std::net::IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => return detail(StatusCode::BAD_REQUEST, "Invalid target IP address format."),
        },
        None if namespace == super::NAMESPACE => routing.inner.pod_of_sandbox(&id),
        None => None,
    };
    let unreachable = || {
        detail(
            StatusCode::BAD_GATEWAY,
            &format!("Could not connect to the backend sandbox: {id}"),
        )
    };
    let Some(address) = address else {
        return unreachable();
    };
    let target = format!(
        "http://{}{}",
        std::net::SocketAddr::new(address, port),
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let body = to_bytes(body, 64 << 20).await.unwrap_or_default();
    let mut outgoing = routing
        .client
        .request(parts.method.clone(), target)
        .timeout(timeout)
        .body(body);
    for (name, value) in &parts.headers {
        let name = name.as_str();
        let hop = [
            "host",
            "authorization",
            "content-length",
            "connection",
            "transfer-encoding",
        ];
        if !hop.contains(&name) && !name.starts_with("x-sandbox-") {
            outgoing = outgoing.header(name, value);
        }
    }
    match outgoing.send().await {
        Ok(answer) => {
            let status = answer.status();
            let kind = answer.headers().get("content-type").cloned();
            let bytes = answer.bytes().await.unwrap_or_default();
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = status;
            if let Some(kind) = kind {
                response.headers_mut().insert("content-type", kind);
            }
            response
        }
        Err(e) if e.is_timeout() => detail(
            StatusCode::GATEWAY_TIMEOUT,
            &format!("Timed out waiting for the backend sandbox: {id}"),
        ),
        Err(_) => unreachable(),
    }
}
