//! Sign-in and sign-out as plain form posts: they work with JavaScript off, and the hydrated
//! page submits the same forms. Browsers get 303 redirects (errors as `?error=` codes the
//! sign-in page explains); clients that ask for JSON get statuses and JSON bodies.

use std::net::SocketAddr;

use axum::{
    extract::{ConnectInfo, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Redirect, Response},
    Form, Json,
};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;

use super::gate::login_url;
use crate::server::{
    auth::{password, rate_limit::Refusal, session},
    db::admin_user,
    state::AppState,
};

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    /// Where to go after signing in (a local path); the page the visitor first asked for.
    #[serde(default)]
    next: String,
}

enum Failure {
    Invalid,
    RateLimited { retry_after_secs: u64 },
    Unavailable,
}

#[tracing::instrument(name = "POST /auth/login", skip_all)]
pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let json = wants_json(&headers);
    let next = safe_next(&form.next);
    let account = form.username.trim().to_lowercase();
    // Account names are short (see account::validate_username); a longer one is no account,
    // and is never looked up, kept or recorded in full.
    let exists_possibly = account.chars().count() <= MAX_USERNAME_CHARS;
    let user = if exists_possibly {
        match admin_user::find_by_username(&state.pool, &account).await {
            Ok(user) => user,
            Err(error) => {
                tracing::error!(%error, "sign-in: user lookup failed");
                return failure(json, &next, Failure::Unavailable);
            }
        }
    } else {
        None
    };
    let attempt = match state.login_limiter.begin(&account, peer.ip()).await {
        Ok(attempt) => attempt,
        Err(Refusal::Unavailable) => return failure(json, &next, Failure::Unavailable),
        Err(Refusal::Wait(wait)) => {
            tracing::warn!(account = %short(&account), client = %peer.ip(), "sign-in refused: too many failures");
            return failure(
                json,
                &next,
                Failure::RateLimited {
                    retry_after_secs: wait.as_secs().max(1),
                },
            );
        }
    };
    let stored_hash = user.as_ref().map(|u| u.password_hash.clone());
    let verified = match password::verify(stored_hash, form.password).await {
        Ok(verified) => verified,
        Err(error) => {
            attempt.withdrawn().await;
            tracing::warn!(%error, client = %peer.ip(), "sign-in could not be checked");
            return failure(json, &next, Failure::Unavailable);
        }
    };
    let user = match (verified, user) {
        (true, Some(user)) => user,
        _ => {
            attempt.failed().await;
            tracing::warn!(account = %short(&account), client = %peer.ip(), "sign-in failed");
            audit(&state, &account, "sign_in_failed", peer).await;
            return failure(json, &next, Failure::Invalid);
        }
    };
    // A disabled account signs in as no account does: the same answer, counted the same.
    if user.disabled_at.is_some() {
        attempt.failed().await;
        tracing::warn!(account = %short(&account), client = %peer.ip(), "sign-in refused: the account is disabled");
        audit(&state, &account, "sign_in_failed", peer).await;
        return failure(json, &next, Failure::Invalid);
    }
    attempt.succeeded().await;
    let address = peer.ip().to_string();
    let client = session::Client {
        address: Some(&address),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
    };
    if let Err(error) = session::sign_in(&session, &state.pool, &user, client).await {
        tracing::error!(%error, "sign-in: could not store the session");
        return failure(json, &next, Failure::Unavailable);
    }
    if let Err(error) = admin_user::record_login(&state.pool, user.id).await {
        tracing::warn!(%error, "sign-in: could not record the login time");
    }
    tracing::info!(username = %user.username, client = %peer.ip(), "admin signed in");
    audit(&state, &user.username, "sign_in", peer).await;
    if json {
        Json(json!({ "username": user.username, "next": next })).into_response()
    } else {
        Redirect::to(&next).into_response()
    }
}

#[tracing::instrument(name = "POST /auth/logout", skip_all)]
pub async fn logout(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
) -> Response {
    if let Err(error) = session::sign_out(&session, &state.pool).await {
        tracing::error!(%error, "sign-out: could not delete the session");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the session store is unavailable",
        )
            .into_response();
    }
    if wants_json(&headers) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        Redirect::to("/login?error=signed_out").into_response()
    }
}

/// Longest account name the audit and the log keep of a failed sign-in (the name is
/// whatever was typed).
const AUDIT_ACCOUNT_CHARS: usize = 64;
/// Longer names are never looked up: no account has one.
const MAX_USERNAME_CHARS: usize = 128;

fn short(account: &str) -> String {
    account.chars().take(AUDIT_ACCOUNT_CHARS).collect()
}

/// Records a sign-in (or a failed one) in the audit: account, address, time. A failure to
/// record is logged; it never changes the sign-in's outcome.
async fn audit(state: &AppState, account: &str, action: &str, peer: SocketAddr) {
    let account = short(account);
    let detail = serde_json::Map::from_iter([(
        "address".to_owned(),
        serde_json::Value::String(peer.ip().to_string()),
    )]);
    if let Err(error) = crate::server::db::settings_audit::record_event(
        &state.pool,
        &account,
        crate::server::db::settings_audit::SIGN_IN,
        None,
        action,
        &detail,
    )
    .await
    {
        tracing::warn!(%error, "could not record a sign-in in the audit");
    }
}

fn failure(json: bool, next: &str, failure: Failure) -> Response {
    let (status, kind, message) = match failure {
        Failure::Invalid => (
            StatusCode::UNAUTHORIZED,
            "invalid",
            "Invalid username or password.".to_owned(),
        ),
        Failure::RateLimited { retry_after_secs } => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("Too many failed sign-in attempts. Try again in {retry_after_secs} seconds."),
        ),
        Failure::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Sign-in is unavailable right now.".to_owned(),
        ),
    };
    let retry_after = match failure {
        Failure::RateLimited { retry_after_secs } => Some(retry_after_secs),
        _ => None,
    };
    let mut response = if json {
        (
            status,
            Json(json!({ "error": { "kind": kind, "message": message } })),
        )
            .into_response()
    } else {
        let mut url = login_url(Some(kind), next);
        if let Some(secs) = retry_after {
            url.push_str(&format!("&retry_after={secs}"));
        }
        Redirect::to(&url).into_response()
    };
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    accept.contains("application/json") && !accept.contains("text/html")
}

/// Only local absolute paths are followed after sign-in; anything else (`//evil`, `https://…`,
/// the sign-in endpoints themselves) goes to the overview.
fn safe_next(next: &str) -> String {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.starts_with("/\\")
        && !next.chars().any(|c| c.is_control())
        && !next.starts_with("/login")
        && !next.starts_with("/auth/");
    if local {
        next.to_owned()
    } else {
        "/".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn safe_next_keeps_local_paths_and_drops_everything_else() {
        assert_eq!(safe_next("/settings?tab=docker"), "/settings?tab=docker");
        for hostile in [
            "",
            "https://evil.example/",
            "//evil.example",
            "/\\evil.example",
            "/login",
            "/auth/logout",
            "/x\r\nSet-Cookie: a",
        ] {
            assert_eq!(safe_next(hostile), "/", "{hostile:?}");
        }
    }
}
