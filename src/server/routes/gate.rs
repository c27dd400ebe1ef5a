//! The gate in front of every route: public paths pass, everything else needs a signed-in
//! admin. Anonymous page visits are sent to the sign-in page (and back afterwards); anonymous
//! server-function calls get 401. Signed-in requests carry an `AdminInfo` extension.
//! (The key-authenticated API has a router of its own, outside this gate: `routes::api`.)

use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
    Json,
};
use serde_json::json;
use tower_sessions::Session;

use super::assets;
use crate::server::{
    auth::{origin::OriginPolicy, session},
    state::AppState,
};

/// Paths anyone may request: the sign-in flow, probes, and the site's static files.
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/login" | "/auth/login" | "/auth/logout" | "/healthz" | "/readyz"
    ) || assets::exists(path)
}

/// Paths answered with 401 instead of a redirect: machine callers, not people.
fn is_api(path: &str) -> bool {
    path.starts_with("/rpc/")
}

pub async fn gate(
    State(state): State<AppState>,
    session: Session,
    request: Request,
    next: Next,
) -> Response {
    // Where the request came from, for the API keys' "last used from".
    let client = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    match client {
        Some(ip) => {
            crate::server::auth::api_key::CLIENT
                .scope(ip, admit(state, session, request, next))
                .await
        }
        None => admit(state, session, request, next).await,
    }
}

async fn admit(state: AppState, session: Session, mut request: Request, next: Next) -> Response {
    if !allowed_origin(&state.origin, request.method(), request.headers()) {
        return (StatusCode::FORBIDDEN, "cross-origin request refused").into_response();
    }
    let path = request.uri().path().to_owned();
    // Public paths need no session lookup, except the sign-in page (signed-in admins skip it).
    if path != "/login" && is_public(&path) {
        return next.run(request).await;
    }
    let admin = match session::signed_in_admin(&session, &state.pool).await {
        Ok(admin) => admin,
        Err(error) => {
            tracing::error!(%error, "could not read the session");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "the session store is unavailable",
            )
                .into_response();
        }
    };
    match admin {
        // Signed-in admins have nothing to do on the sign-in page.
        Some(_) if path == "/login" => Redirect::to("/").into_response(),
        // /metrics is not a session's to use before its generated password is replaced: it
        // passes on without it, as for anyone (an admin key still opens it).
        Some(admin) if admin.must_change_password && path == "/metrics" => next.run(request).await,
        // A generated password is replaced before anything else.
        Some(admin) if admin.must_change_password && !open_before_password_change(&path) => {
            if is_api(&path) {
                let body = json!({ "error": { "kind": "password_change_required",
                    "message": "change your generated password on /admin/account first" } });
                (StatusCode::FORBIDDEN, Json(body)).into_response()
            } else {
                Redirect::to(ACCOUNT_PAGE).into_response()
            }
        }
        Some(admin) => {
            with_language(&mut request, &admin.locale);
            request.extensions_mut().insert(admin);
            next.run(request).await
        }
        // /metrics checks an API key (or the admin extension) itself.
        None if path == "/login" || path == "/metrics" => next.run(request).await,
        None if is_api(&path) => unauthenticated(),
        None if matches!(*request.method(), Method::GET | Method::HEAD) => {
            let target = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
            Redirect::to(&login_url(None, target)).into_response()
        }
        None => unauthenticated(),
    }
}

/// The cookie the translations read the page's language from before `Accept-Language`.
const LANGUAGE_COOKIE: &str = "i18n_pref_locale";

/// Makes a signed-in admin's language choice the one the page renders in, whatever the
/// browser sent: `auto` leaves the browser's `Accept-Language` to decide.
fn with_language(request: &mut Request, locale: &str) {
    let mut cookies: Vec<String> = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.starts_with(&format!("{LANGUAGE_COOKIE}=")))
        .map(str::to_owned)
        .collect();
    if locale != "auto" && !locale.is_empty() {
        cookies.push(format!("{LANGUAGE_COOKIE}={locale}"));
    }
    let headers = request.headers_mut();
    headers.remove(header::COOKIE);
    if let Ok(value) = cookies.join("; ").parse() {
        if !cookies.is_empty() {
            headers.insert(header::COOKIE, value);
        }
    }
}

/// Where an admin signed in with a generated password is sent.
const ACCOUNT_PAGE: &str = "/admin/account";

/// What an admin who must change a generated password may still reach: the Account page
/// and what it calls.
fn open_before_password_change(path: &str) -> bool {
    matches!(
        path,
        ACCOUNT_PAGE
            | "/rpc/account"
            | "/rpc/change_password"
            | "/rpc/take_account_flash"
            | "/rpc/current_admin"
            | "/rpc/environment_notice"
    )
}

fn unauthenticated() -> Response {
    let body = json!({ "error": { "kind": "unauthenticated", "message": "sign in first" } });
    (StatusCode::UNAUTHORIZED, Json(body)).into_response()
}

/// `/login`, with an optional error code and the page to return to.
pub fn login_url(error: Option<&str>, next: &str) -> String {
    let mut url = String::from("/login");
    let mut sep = '?';
    if let Some(error) = error {
        url.push_str(&format!("{sep}error={error}"));
        sep = '&';
    }
    if next != "/" {
        url.push_str(&format!(
            "{sep}next={}",
            crate::model::url::percent_encode(next)
        ));
    }
    url
}

/// Whether a request may go on as far as where it comes from is concerned: safe methods
/// always, others only from the console's own origin (or from clients that name none).
pub fn allowed_origin(policy: &OriginPolicy, method: &Method, headers: &HeaderMap) -> bool {
    is_safe_method(method) || same_origin(policy, headers)
}

fn is_safe_method(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Refuses state-changing requests that a browser says come from another site (defence in
/// depth on top of `SameSite=Strict`): the `Origin` must be the console's public URL (scheme,
/// host and port). Clients that send no `Origin` (curl, agents) pass.
fn same_origin(policy: &OriginPolicy, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    origin
        .to_str()
        .is_ok_and(|origin| policy.allows(origin, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_url_keeps_the_target_encoded() {
        assert_eq!(login_url(None, "/"), "/login");
        assert_eq!(
            login_url(None, "/settings?tab=a b"),
            "/login?next=/settings%3Ftab%3Da%20b"
        );
        assert_eq!(
            login_url(Some("invalid"), "/x"),
            "/login?error=invalid&next=/x"
        );
    }

    #[test]
    fn cross_origin_posts_are_recognised() {
        let policy = OriginPolicy::new(None, "127.0.0.1:3000".parse().unwrap()).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:3000".parse().unwrap());
        assert!(same_origin(&policy, &headers));
        headers.insert(header::ORIGIN, "http://127.0.0.1:3000".parse().unwrap());
        assert!(same_origin(&policy, &headers));
        headers.insert(header::ORIGIN, "https://evil.example".parse().unwrap());
        assert!(!same_origin(&policy, &headers));
        headers.insert(header::ORIGIN, "null".parse().unwrap());
        assert!(!same_origin(&policy, &headers));
        headers.insert(header::ORIGIN, "http://evil.example:3000".parse().unwrap());
        headers.insert(header::HOST, "evil.example:3000".parse().unwrap());
        assert!(
            !same_origin(&policy, &headers),
            "a Host header that agrees with the Origin is not enough"
        );
    }
}
