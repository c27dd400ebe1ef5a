//! Response headers every answer gets: a Content-Security-Policy with a fresh nonce on each
//! HTML page (the app's own scripts carry it; nothing else runs), and `Cache-Control:
//! no-store` on everything that sets no caching of its own (pages, `/rpc/*`, `/api/*`,
//! exports: they hold an admin's data, which no shared or browser cache may keep).

use axum::{
    extract::Request,
    http::{header, HeaderValue},
    middleware::Next,
    response::{IntoResponse, Response},
};
use leptos::nonce::Nonce;

/// The policy of an HTML page whose scripts carry `nonce`. `'wasm-unsafe-eval'` lets the page
/// compile its own WebAssembly (not `eval`); `'self'` covers the app's JS module and wasm,
/// which load from this origin. Images may be `data:` (artifact previews are `<img>` only).
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
         object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )
}

/// Gives each request a nonce (for the Leptos render, through the request's extensions) and
/// each HTML answer the policy naming it. Answers that set their own policy keep it.
pub async fn content_security_policy(mut request: Request, next: Next) -> Response {
    let nonce = Nonce::new();
    request.extensions_mut().insert(nonce.clone());
    let mut response = next.run(request).await;
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html
        && !response
            .headers()
            .contains_key(header::CONTENT_SECURITY_POLICY)
    {
        if let Ok(value) = HeaderValue::from_str(&page_policy(&nonce)) {
            response
                .headers_mut()
                .insert(header::CONTENT_SECURITY_POLICY, value);
        }
    }
    response
}

/// `Cache-Control: no-store` unless the answer chose its own (the static files revalidate).
pub async fn no_store_by_default(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// The nonce of the request being rendered, for the Leptos context.
pub fn request_nonce(parts: &http::request::Parts) -> Option<Nonce> {
    parts.extensions.get::<Nonce>().cloned()
}

/// An error answer with no body (a layer below the app failed: the session store could not
/// reach a locked or full database, say) becomes a page that says what happened, instead of
/// a blank 500. Answers that carry a body keep it.
pub async fn explain_empty_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let Some(status) = empty_error(&response) else {
        return response;
    };
    notice_page(
        status,
        "Something went wrong",
        "The console could not complete this request (its database may be busy or full). \
         Try again in a moment; if it keeps happening, check the console's log and \
         <code>/readyz</code>.",
        "5",
    )
}

/// [`explain_empty_errors`] for the API: the explanation in its JSON error shape.
pub async fn explain_empty_api_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let Some(status) = empty_error(&response) else {
        return response;
    };
    let mut answer = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"error":{"kind":"unavailable","message":"the console could not complete the request; retry"}}"#,
    )
        .into_response();
    answer
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    answer
}

/// The status of a server error that came without a body.
fn empty_error(response: &Response) -> Option<http::StatusCode> {
    use http_body::Body as _;
    let status = response.status();
    if !status.is_server_error() || response.body().size_hint().exact() != Some(0) {
        return None;
    }
    tracing::error!(%status, "an error answer had no body; answering with an explanation");
    Some(status)
}

/// A minimal HTML page for an answer the app itself cannot render (no scripts, fixed text:
/// `title` and `message` are trusted markup), telling the browser when to retry.
pub fn notice_page(
    status: http::StatusCode,
    title: &'static str,
    message: &'static str,
    retry_after: &'static str,
) -> Response {
    let mut page = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
             <body><h1>{title}</h1><p>{message}</p></body></html>"
        ),
    )
        .into_response();
    page.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(retry_after));
    page
}
