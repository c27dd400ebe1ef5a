//! The HTTP API for agents and scripts, authenticated by API keys: the REST execute API
//! (`/api/v1/execute`, `/api/v1/providers`), RAGFlow's executor-manager `/run`, RAGFlow's
//! sandbox admin API (`/api/v1/admin/sandbox/*`), and the OpenAPI document of all of them,
//! generated from the handlers so it cannot drift from the routes.

pub mod error;
pub mod execute;
pub mod ragflow_admin;
pub mod ragflow_run;

use std::sync::Arc;

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Extension, Json, Router,
};
use utoipa::{
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    model::{admin::AdminInfo, api_key::Scope},
    server::state::AppState,
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
        .routes(routes!(openapi_json))
        .routes(routes!(healthz))
        .split_for_parts();
    let router = router
        .layer(Extension(Arc::new(openapi.clone())))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::from_fn(error::log_failures));
    (router, openapi)
}

/// Does this path belong to the API (authenticated by key, answered in JSON)?
pub fn owns(path: &str) -> bool {
    path == "/run" || path.starts_with("/api/")
}

/// The OpenAPI 3 document of this API. Any API key, or a signed-in admin, may read it.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta",
    security(("api_key" = [])),
    responses((status = 200, description = "This document"),
              (status = 401, description = "No API key and no admin session")))]
async fn openapi_json(
    State(state): State<AppState>,
    Extension(document): Extension<Arc<utoipa::openapi::OpenApi>>,
    admin: Option<Extension<AdminInfo>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
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
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such API endpoint; see /api/v1/openapi.json",
    )
}
