//! The site's static files (wasm, js, css, public/), embedded in release builds so the one
//! binary is enough to run the console. Debug builds read `target/site` from disk instead.

use axum::{
    body::Body,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "target/site/"]
#[allow_missing = true]
struct Site;

fn key(path: &str) -> Option<&str> {
    let key = path.trim_start_matches('/');
    (!key.is_empty() && !key.ends_with('/')).then_some(key)
}

pub fn exists(path: &str) -> bool {
    key(path).is_some_and(|key| Site::get(key).is_some())
}

/// The file at `path`, with its type and an ETag; `None` when there is no such file.
pub fn serve(path: &str, headers: &HeaderMap) -> Option<Response> {
    let file = Site::get(key(path)?)?;
    let etag = format!(
        "\"{}\"",
        file.metadata
            .sha256_hash()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        return Some(StatusCode::NOT_MODIFIED.into_response());
    }
    let mut response = Response::new(Body::from(file.data));
    let headers = response.headers_mut();
    if let Ok(mime) = HeaderValue::from_str(file.metadata.mimetype()) {
        headers.insert(header::CONTENT_TYPE, mime);
    }
    // File names carry no hash, so browsers revalidate (cheap, thanks to the ETag).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    Some(response)
}
