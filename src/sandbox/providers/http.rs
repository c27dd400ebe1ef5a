//! What the remote providers share about HTTP: a client with deadlines, endpoint URLs checked
//! one way, transport failures as the provider layer's error kinds, bounded body reads and
//! short excerpts of unexpected answers (never whole bodies, never secrets).

use std::time::Duration;

use url::Url;

use crate::sandbox::Error;

/// How long connecting to a provider may take, whatever the request's own deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP client whose every request gives up after `timeout`. It follows no redirects:
/// a provider's answer that points elsewhere must not take the request, and the secret
/// headers on it (`X-API-Key`, `X-Sandbox-Token`, which reqwest keeps across hosts), to a
/// destination the secret was not saved for. A redirect is an unexpected answer instead.
pub fn client(kind: &'static str, timeout: Duration) -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(CONNECT_TIMEOUT.min(timeout))
        .user_agent(concat!("sandbox-console/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|source| Error::provider(kind, ClientSetup(source)))
}

#[derive(Debug, thiserror::Error)]
#[error("cannot set up an HTTP client: {0}")]
struct ClientSetup(#[source] reqwest::Error);

/// Parses an `http://` or `https://` URL with a host, or says what is wrong with it.
pub fn endpoint(text: &str, example: &str) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|_| {
        format!("Enter a URL that starts with http:// or https://, e.g. {example}.")
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "Enter a URL that starts with http:// or https://, e.g. {example}."
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("Put credentials in their own fields, not in the URL.".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("Enter the URL without a query or fragment.".into());
    }
    Ok(url)
}

/// `base` with `path` appended (no doubled or missing slash).
pub fn join(base: &Url, path: &str) -> String {
    format!(
        "{}/{}",
        base.as_str().trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// A request that got no answer, as the provider layer's error: the deadline passed, or the
/// provider could not be reached at all.
pub fn transport(what: &str, error: &reqwest::Error, timeout: Duration) -> Error {
    if error.is_timeout() {
        Error::Timeout(timeout)
    } else {
        // reqwest's own text names the URL; its source says why (refused, DNS, TLS).
        let mut cause = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(inner) = source {
            cause = format!("{cause}: {inner}");
            source = inner.source();
        }
        Error::Unreachable(format!("{what}: {cause}"))
    }
}

/// A `Retry-After` header's delay, when it gives one in seconds.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_secs)
}

/// What a remote's body was, without what it said: its kind and size. The console never
/// repeats a remote's answer to anyone (a connection test aimed at an internal service must
/// not read that service's pages back); the HTTP status and this are enough to tell a wrong
/// endpoint, a proxy's error page and a refused key apart.
pub fn described(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start();
    let kind = if trimmed.is_empty() {
        return "(an empty body)".into();
    } else if std::str::from_utf8(body).is_err() {
        "a binary body"
    } else if trimmed.starts_with('<') {
        "an HTML or XML body"
    } else if trimmed.starts_with(['{', '[']) {
        "a JSON body"
    } else {
        "a text body"
    };
    format!("({kind} of {} bytes, not shown)", body.len())
}

/// A field of a well-formed answer (a status word, a program's stderr) on one line, at most
/// 200 characters.
pub fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = flat.chars().take(200).collect();
    if flat.chars().count() > 200 {
        cut.push('…');
    }
    if cut.is_empty() {
        "(empty)".into()
    } else {
        cut
    }
}

/// A body read in full unless it grows past `limit` bytes.
pub enum Body {
    Complete(Vec<u8>),
    /// Longer than the limit; the rest was not read.
    Over,
}

/// Reads a response body, stopping at `limit` bytes.
pub async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Body, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(Body::Over);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Body::Complete(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_must_be_http_urls_without_credentials() {
        let example = "http://executor:9385";

        assert!(endpoint("http://executor:9385", example).is_ok());
        assert!(endpoint(" https://x.example/base/ ", example).is_ok());
        for bad in ["executor:9385", "ftp://x", "http://", "not a url"] {
            assert!(
                endpoint(bad, example)
                    .unwrap_err()
                    .starts_with("Enter a URL"),
                "{bad}"
            );
        }
        assert!(endpoint("http://u:p@x", example)
            .unwrap_err()
            .contains("credentials"));
    }

    #[test]
    fn joins_and_excerpts() {
        let base = Url::parse("http://x:1/base/").unwrap();
        assert_eq!(join(&base, "/run"), "http://x:1/base/run");
        assert_eq!(
            described(b"  <html>\n  oops </html> "),
            "(an HTML or XML body of 24 bytes, not shown)"
        );
        assert!(!described(b"{\"message\": \"Invalid API key\"}").contains("Invalid"));
        assert_eq!(described(b" "), "(an empty body)");
        assert_eq!(
            described(&[0xff, 0xfe]),
            "(a binary body of 2 bytes, not shown)"
        );
        assert_eq!(one_line("  tar:\n broken pipe "), "tar: broken pipe");
        assert_eq!(one_line(&"é".repeat(300)).chars().count(), 201);
    }
}
