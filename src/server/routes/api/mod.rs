//! The HTTP API for agents and scripts, authenticated by API keys: the REST execute API
//! (`/api/v1/execute`, `/api/v1/providers`), RAGFlow's executor-manager `/run`, RAGFlow's
//! sandbox admin API (`/api/v1/admin/sandbox/*`), Dify's sandbox API (`/dify/v1/sandbox/*`),
//! and the OpenAPI document of all of them,
//! generated from the handlers so it cannot drift from the routes.
//!
//! Its own router with its own layers (none of the pages' sign-in gate, admission or sessions
//! around it): every handler checks the API key itself, and answers in JSON.

pub mod dify;
pub mod error;
pub mod execute;
pub mod ragflow_admin;
pub mod ragflow_run;
pub mod session_files;
pub mod sessions;

use std::sync::Arc;

use axum::{
    extract::{DefaultBodyLimit, Request, State},
    http::{HeaderMap, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::any,
    Extension, Json, Router,
};
use tower_sessions::{Session, SessionManagerLayer};
use utoipa::{
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    model::api_key::Scope,
    server::{
        auth::{api_key::CLIENT, session},
        routes::{gate, headers, metrics},
        state::AppState,
    },
};
use error::ApiError;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "sandbox-console API",
        description = "Run untrusted Python and JavaScript through the configured sandbox provider. \
                       Authenticate with an API key created in the console: `Authorization: Bearer <key>`."
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "execute", description = "The execute API"),
        (name = "ragflow", description = "RAGFlow executor-manager compatible"),
        (name = "ragflow-admin", description = "RAGFlow sandbox admin API compatible"),
        (name = "sessions", description = "Sandbox sessions: state kept between cells, files, commands"),
        (name = "e2b", description = "E2B compatible: `E2B_API_URL=http://<console>/e2b`, `E2B_SANDBOX_URL=http://<console>/e2b/sandbox`"),
        (name = "dify", description = "Dify sandbox compatible (`CODE_EXECUTION_ENDPOINT=http://<console>/dify`)"),
        (name = "meta", description = "Probes and this document"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "sandbox_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Sandbox-Token"))),
        );
        components.add_security_scheme(
            "e2b_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
        components.add_security_scheme(
            "envd_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Access-Token"))),
        );
        components.add_security_scheme(
            "dify_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Api-Key"))),
        );
    }
}

/// The API's routes (state still to be given) and the OpenAPI document describing them.
pub fn routes(max_body_bytes: usize) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(execute::execute))
        .routes(routes!(execute::providers))
        .routes(routes!(execute::environments))
        .routes(routes!(ragflow_run::run))
        .routes(routes!(ragflow_admin::providers))
        .routes(routes!(ragflow_admin::schema))
        .routes(routes!(
            ragflow_admin::get_config,
            ragflow_admin::set_config
        ))
        .routes(routes!(ragflow_admin::test))
        .routes(routes!(sessions::open, sessions::list))
        .routes(routes!(sessions::get, sessions::close))
        .routes(routes!(sessions::execute))
        .routes(routes!(sessions::interrupt))
        .routes(routes!(
            session_files::read,
            session_files::write,
            session_files::remove
        ))
        .routes(routes!(session_files::list))
        .routes(routes!(session_files::command))
        .routes(routes!(dify::run))
        .routes(routes!(dify::dependencies))
        .routes(routes!(dify::health))
        .routes(routes!(openapi_json))
        .routes(routes!(healthz))
        .split_for_parts();
    // E2B's routes are served by their own router (crate::server::routes::e2b), documented here.
    let mut openapi = openapi;
    openapi.merge(<crate::server::routes::e2b::E2bDoc as OpenApi>::openapi());
    let router = router
        .layer(Extension(Arc::new(openapi.clone())))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::from_fn(error::log_failures));
    (router, openapi)
}

/// The API as served: its routes, JSON for unknown `/api/` paths, and its own layers (the
/// HTTP metrics, the JSON explanation of an empty error, the caller's address for the keys'
/// "last used from", the cross-site refusal, and the session store for the one handler that
/// also accepts a signed-in admin).
pub fn router(
    state: AppState,
    max_body_bytes: usize,
    sessions: SessionManagerLayer<session::Store>,
) -> Router {
    let (routes, _) = routes(max_body_bytes);
    routes
        .route("/api/{*rest}", any(not_found))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track_http,
        ))
        .layer(middleware::from_fn(headers::explain_empty_api_errors))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .layer(sessions)
        .with_state(state)
}

/// Remembers the caller's address for the keys' "last used from" (read by
/// `ApiKeys::authorize`), and refuses a state-changing request a browser says comes from
/// another site, as for the pages.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !gate::allowed_origin(&state.origin, request.method(), request.headers()) {
        return (StatusCode::FORBIDDEN, "cross-origin request refused").into_response();
    }
    let client = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    match client {
        Some(ip) => CLIENT.scope(ip, next.run(request)).await,
        None => next.run(request).await,
    }
}

/// The OpenAPI 3 document of this API. Any API key, or a signed-in admin, may read it.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta",
    security(("api_key" = [])),
    responses((status = 200, description = "This document"),
              (status = 401, description = "No API key and no admin session")))]
async fn openapi_json(
    State(state): State<AppState>,
    Extension(document): Extension<Arc<utoipa::openapi::OpenApi>>,
    session: Session,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    // A signed-in admin (whose generated password is replaced), else any API key.
    let admin = session::signed_in_admin(&session, &state.pool)
        .await
        .ok()
        .flatten()
        .filter(|admin| !admin.must_change_password);
    if admin.is_none() {
        state.api_keys.authorize_any(&headers, &Scope::ALL).await?;
    }
    Ok(Json(document.as_ref().clone()).into_response())
}

/// Liveness, open to all: RAGFlow's executor-manager probe (`{"status": "ok"}`) and ours.
#[utoipa::path(get, path = "/healthz", tag = "meta",
    responses((status = 200, description = "`{\"status\": \"ok\", \"version\": ...}`")))]
async fn healthz() -> impl IntoResponse {
    crate::server::routes::health::healthz().await
}

/// Unknown API paths answer in JSON, not with the console's HTML 404 page.
async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such API endpoint; see /api/v1/openapi.json",
    )
}
