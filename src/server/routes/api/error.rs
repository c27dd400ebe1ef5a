//! `ApiError`: the one error type of the REST API, answered as `{"error": {"kind", "message"}}`
//! with a real HTTP status. 5xx bodies say what failed, never internals; details go to the log.

use std::time::Duration;

use axum::{
    extract::{rejection::BytesRejection, Request},
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::sandbox::Error as SandboxError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    pub retry_after: Option<Duration>,
    /// For the log only.
    pub detail: Option<String>,
}

/// The body of every error answer.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable kind: `invalid_input`, `unauthenticated`, `forbidden`,
    /// `payload_too_large`, `rate_limited`, `pool_busy`, `provider_unreachable`,
    /// `provider_failed`, `provider_timeout`, `no_active_provider`, `not_found`, `unavailable`,
    /// `internal`.
    pub kind: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            retry_after: None,
            detail: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }

    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let mut error = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "something went wrong on the server; the server log has the details",
        );
        error.detail = Some(detail.to_string());
        error
    }

    pub fn rate_limited(retry_after: Duration) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "this API key made too many requests; retry in {} s",
                retry_after.as_secs().max(1)
            ),
        );
        error.retry_after = Some(retry_after);
        error
    }

    /// An unreadable body: too large (413) or not received in full (400).
    pub fn body(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is larger than this server accepts",
            )
        } else {
            Self::invalid(format!("the request body could not be read: {rejection}"))
        }
    }
}

impl From<SandboxError> for ApiError {
    fn from(error: SandboxError) -> Self {
        let detail = with_causes(&error);
        let mut api = match &error {
            SandboxError::PoolBusy {
                retry_after,
                detail,
            } => {
                let mut busy = Self::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "pool_busy",
                    format!(
                        "every sandbox is busy; retry in {} s{}",
                        retry_after.as_secs().max(1),
                        detail
                            .as_deref()
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default()
                    ),
                );
                busy.retry_after = Some(*retry_after);
                busy
            }
            SandboxError::Unsupported(language) => {
                Self::invalid(format!("the active provider does not run {language}"))
            }
            SandboxError::Request(problem) => Self::invalid(problem.to_string()),
            SandboxError::Timeout(after) => Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                "provider_timeout",
                format!(
                    "the sandbox provider did not answer within {} s",
                    after.as_secs()
                ),
            ),
            SandboxError::Unreachable(_) => Self::new(
                StatusCode::BAD_GATEWAY,
                "provider_unreachable",
                "the sandbox provider cannot be reached",
            ),
            SandboxError::Unauthenticated(_) => Self::new(
                StatusCode::BAD_GATEWAY,
                "provider_failed",
                "the sandbox provider refused the console's credentials; an admin must fix the sandbox settings",
            ),
            SandboxError::Backend(_) | SandboxError::Provider { .. } => Self::new(
                StatusCode::BAD_GATEWAY,
                "provider_failed",
                "the sandbox provider failed to run the code",
            ),
            SandboxError::NoActiveProvider => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "no_active_provider",
                "no sandbox provider is active; an admin must save valid sandbox settings",
            ),
            SandboxError::Retired | SandboxError::ShuttingDown => {
                let mut unavailable = Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the console cannot run code right now; retry",
                );
                unavailable.retry_after = Some(Duration::from_secs(1));
                unavailable
            }
            SandboxError::Stateless(_) => Self::new(
                StatusCode::CONFLICT,
                "stateless_provider",
                error.to_string(),
            ),
            SandboxError::UnknownKind { .. } | SandboxError::ConfigInvalid { .. } => {
                Self::internal(&detail)
            }
        };
        api.detail = Some(detail);
        api
    }
}

/// What a failed answer leaves for [`log_failures`]: the kind and the internal detail that
/// the body never carries.
#[derive(Clone, Debug)]
struct Failure {
    kind: &'static str,
    detail: String,
}

/// Leaves `detail` on a 5xx `response` for [`log_failures`] to log, once.
pub(super) fn note_failure(response: &mut Response, kind: &'static str, detail: String) {
    response.extensions_mut().insert(Failure { kind, detail });
}

/// An error with its causes, as one line for the log: a provider's own error keeps the
/// operation it failed in and what failed below it (a connection, a JSON parse).
pub(super) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}

/// Logs each API answer that failed on the server's side, once, inside the request's span.
pub async fn log_failures(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if response.status().is_server_error() {
        if let Some(failure) = response.extensions().get::<Failure>() {
            tracing::error!(
                kind = failure.kind,
                detail = %failure.detail,
                status = response.status().as_u16(),
                "API request failed"
            );
        }
    }
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "kind": self.kind, "message": self.message } });
        let mut response = (self.status, Json(body)).into_response();
        if self.status.is_server_error() {
            note_failure(&mut response, self.kind, self.detail.unwrap_or_default());
        }
        if let Some(wait) = self.retry_after {
            let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_str(&secs.to_string()).expect("digits are a valid header"),
            );
        }
        response
    }
}

impl From<crate::server::auth::api_key::Refusal> for ApiError {
    fn from(refusal: crate::server::auth::api_key::Refusal) -> Self {
        use crate::server::auth::api_key::Refusal;
        let kind = match refusal {
            Refusal::Unauthenticated(_) => "unauthenticated",
            Refusal::Forbidden(_) => "forbidden",
            Refusal::RateLimited(wait) => return Self::rate_limited(wait),
            Refusal::Unavailable => "unavailable",
        };
        Self::new(refusal.status(), kind, refusal.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the executor's answer is not a run result: <html>")]
    struct NotARunResult {
        source: serde_json::Error,
    }

    #[test]
    fn a_provider_failure_is_logged_with_what_failed_below_it() {
        let parse = serde_json::from_str::<serde_json::Value>("<html>").unwrap_err();
        let parsed = parse.to_string();
        let error = SandboxError::provider("self_managed", NotARunResult { source: parse });

        let api = ApiError::from(error);

        let detail = api.detail.unwrap();
        assert!(
            detail.starts_with("the provider failed: the executor's answer is not a run result"),
            "{detail}"
        );
        assert!(
            detail.ends_with(&parsed),
            "the parse error is kept: {detail}"
        );
        assert!(
            !api.message.contains("html"),
            "the body says nothing internal"
        );
    }

    #[test]
    fn provider_errors_map_to_gateway_statuses() {
        let cases = [
            (
                SandboxError::PoolBusy {
                    retry_after: Duration::from_millis(1500),
                    detail: None,
                },
                429,
            ),
            (SandboxError::Timeout(Duration::from_secs(30)), 504),
            (SandboxError::Unreachable("refused".into()), 502),
            (SandboxError::Unauthenticated("401".into()), 502),
            (SandboxError::Backend("boom".into()), 502),
            (SandboxError::NoActiveProvider, 503),
            (SandboxError::ShuttingDown, 503),
            (SandboxError::Retired, 503),
            (
                SandboxError::Unsupported(crate::model::execution::Language::Javascript),
                400,
            ),
        ];
        for (error, status) in cases {
            let api = ApiError::from(error);
            assert_eq!(api.status.as_u16(), status, "{}", api.kind);
        }
    }

    #[test]
    fn busy_answers_carry_retry_after_rounded_up() {
        let response = ApiError::from(SandboxError::PoolBusy {
            retry_after: Duration::from_millis(1500),
            detail: None,
        })
        .into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }

    #[test]
    fn provider_failures_do_not_leak_their_internals() {
        let api = ApiError::from(SandboxError::Unreachable(
            "connection refused: http://10.0.0.7:9385".into(),
        ));
        assert!(!api.message.contains("10.0.0.7"));
        assert!(api.detail.unwrap().contains("10.0.0.7"));
    }
}
