//! The server functions' door (`/rpc/*`): bodies are read here, up to a limit, so an
//! over-long one is a 413 (not a 500 from deep inside the server-function runtime), and an
//! error the runtime answers with its default 500 gets the status the error stands for (400
//! for arguments that do not parse, such as a page number out of range).

use axum::{
    body::{to_bytes, Body},
    extract::{Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::server_fns::error::AppError;

/// Largest error body looked into; server-function errors are a few hundred bytes.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The body limit in force for server functions (the API's, `--api-max-body-bytes`).
#[derive(Clone, Copy, Debug)]
pub struct RpcLimit(pub usize);

pub async fn guard(State(limit): State<RpcLimit>, request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/rpc/") {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match to_bytes(body, limit.0).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let too_large = std::error::Error::source(&error)
                .is_some_and(|e| e.is::<http_body_util::LengthLimitError>())
                || parts
                    .headers
                    .get(header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
                    .is_some_and(|n| n > limit.0);
            let (status, message) = if too_large {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("The request is larger than {} bytes.", limit.0),
                )
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    "The request body could not be read.".to_owned(),
                )
            };
            return error_answer(status, AppError::BadRequest(message));
        }
    };
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "").into_response();
    };
    if let Ok(error) = serde_json::from_slice::<AppError>(&bytes) {
        if let Ok(status) = StatusCode::from_u16(error.status()) {
            parts.status = status;
        }
    }
    Response::from_parts(parts, Body::from(bytes))
}

fn error_answer(status: StatusCode, error: AppError) -> Response {
    let body = serde_json::to_string(&error).unwrap_or_default();
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
