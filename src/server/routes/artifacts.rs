//! Trial-run artifacts as downloads. A program's files (SVG, HTML, PDF, anything) must never
//! run in the console's origin, so they are only ever served as attachments of an opaque
//! type, with `nosniff` and a sandboxing policy; the page previews images as `<img>` only.

use axum::{
    extract::{Path, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Extension,
};

use crate::{
    model::admin::AdminInfo,
    server::{db::artifact, state::AppState},
};

/// `GET /admin/artifacts/{id}`: the signed-in admin's own artifact, as an attachment.
#[tracing::instrument(name = "GET /admin/artifacts", skip_all)]
pub async fn download(
    State(state): State<AppState>,
    admin: Option<Extension<AdminInfo>>,
    Path(id): Path<String>,
) -> Response {
    let Some(Extension(admin)) = admin else {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    };
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (StatusCode::NOT_FOUND, "no such artifact").into_response();
    }
    let stored = match artifact::get(&state.pool, &id, admin.id).await {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            return (
                StatusCode::NOT_FOUND,
                "no such artifact (they are kept for an hour, for the latest trial run only)",
            )
                .into_response()
        }
        Err(error) => {
            tracing::error!(%error, "could not read an artifact");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let mut response = stored.content.into_response();
    let headers = response.headers_mut();
    // Never the program's own type: as octet-stream with nosniff, no browser renders it and
    // no <script src> or stylesheet link on this origin can use it.
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(value) = HeaderValue::from_str(&content_disposition(&stored.name)) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    tracing::debug!(mime_type = %stored.mime_type, "artifact downloaded");
    response
}

/// `attachment` with a plain-ASCII `filename` and the exact name as RFC 5987 `filename*`.
fn content_disposition(name: &str) -> String {
    let plain: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let plain = if plain.trim_matches('.').is_empty() {
        "artifact".to_owned()
    } else {
        plain
    };
    let exact: String = name
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}")
}

#[cfg(test)]
mod tests {
    use super::content_disposition;

    #[test]
    fn names_cannot_break_out_of_the_header() {
        assert_eq!(
            content_disposition("chart.svg"),
            "attachment; filename=\"chart.svg\"; filename*=UTF-8''chart.svg"
        );
        assert_eq!(
            content_disposition("a\"b\r\n; x=.html"),
            "attachment; filename=\"a_b____x_.html\"; filename*=UTF-8''a%22b%0D%0A%3B%20x%3D.html"
        );
        assert_eq!(
            content_disposition("图.png"),
            "attachment; filename=\"_.png\"; filename*=UTF-8''%E5%9B%BE.png"
        );
        assert!(content_disposition("..").contains("filename=\"artifact\""));
    }
}
