//! API-key checking for the REST API, the RAGFlow-compatible endpoints and `/metrics`: which
//! live key a request carries, whether it has the scope, and the per-key rate limit. Keys
//! come as `Authorization: Bearer <key>`, `X-Sandbox-Token: <key>` (RAGFlow's executor-manager
//! token header) or a bare `Authorization: <key>` (RAGFlow's admin client). A service: it
//! reads headers, and never sees a router or the state that holds it.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, Instant},
};

use http::{header, HeaderMap, StatusCode};
use sqlx::AnyPool;

use crate::{
    model::api_key::{ApiKeyInfo, Scope},
    server::db::api_key,
};

tokio::task_local! {
    /// The address of the client a request came from, set by the gate around each request
    /// (the key's "last used from").
    pub static CLIENT: std::net::IpAddr;
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No key, or a key that is unknown or revoked: 401.
    Unauthenticated(&'static str),
    /// A live key without the scope: 403.
    Forbidden(Scope),
    /// Over the per-key rate limit: 429.
    RateLimited(Duration),
    /// The key store cannot be read: 503.
    Unavailable,
}

impl Refusal {
    /// The HTTP status of the refusal, whatever shape the body takes.
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Refusal::Forbidden(_) => StatusCode::FORBIDDEN,
            Refusal::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Refusal::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Refusal::Unauthenticated(why) => (*why).to_owned(),
            Refusal::Forbidden(scope) => {
                format!("this API key lacks the '{scope}' scope")
            }
            Refusal::RateLimited(wait) => format!(
                "this API key made too many requests; retry in {} s",
                wait.as_secs().max(1)
            ),
            Refusal::Unavailable => "the key store is unavailable; retry shortly".into(),
        }
    }
}

/// The key a request carries, if any.
pub fn presented_key(headers: &HeaderMap) -> Option<&str> {
    let from_authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let v = v.trim();
            match v.split_once(' ') {
                Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer") => key.trim(),
                _ => v,
            }
        });
    from_authorization
        .or_else(|| {
            // RAGFlow's header, then Dify's and E2B's.
            ["x-sandbox-token", "x-api-key"].iter().find_map(|name| {
                headers
                    .get(*name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::trim)
            })
        })
        .filter(|k| !k.is_empty())
}

/// The key store and the per-key rate limit: checks the key a request carries.
#[derive(Debug)]
pub struct ApiKeys {
    pool: AnyPool,
    limiter: Limiter,
}

/// Where the per-key rate limit counts: in this process (a console alone on SQLite), or in
/// the database every replica shares (PostgreSQL), so requests spread over N replicas count
/// once.
#[derive(Debug)]
enum Limiter {
    Memory(ApiLimiter),
    Shared(u32),
}

impl ApiKeys {
    /// Keys from `pool`, each allowed `per_minute` requests (`0`: no limit).
    pub fn new(pool: AnyPool, per_minute: u32) -> Self {
        let limiter = match crate::server::db::Backend::of(&pool) {
            crate::server::db::Backend::Sqlite => Limiter::Memory(ApiLimiter::new(per_minute)),
            crate::server::db::Backend::Postgres => Limiter::Shared(per_minute),
        };
        ApiKeys { pool, limiter }
    }

    /// The live key behind these headers, if it has `scope` and is within its rate limit.
    /// The client address the gate puts in [`CLIENT`] is recorded as where it was last used.
    pub async fn authorize(
        &self,
        headers: &HeaderMap,
        scope: Scope,
    ) -> Result<ApiKeyInfo, Refusal> {
        self.authorize_any(headers, &[scope]).await
    }

    /// As [`ApiKeys::authorize`], for endpoints any of `scopes` may use.
    #[tracing::instrument(skip_all)]
    pub async fn authorize_any(
        &self,
        headers: &HeaderMap,
        scopes: &[Scope],
    ) -> Result<ApiKeyInfo, Refusal> {
        let key = presented_key(headers).ok_or(Refusal::Unauthenticated(
            "send an API key as 'Authorization: Bearer <key>'",
        ))?;
        let address = CLIENT.try_with(|ip| ip.to_string()).ok();
        let info = api_key::authenticate(&self.pool, key, address.as_deref())
            .await
            .map_err(|error| {
                tracing::error!(%error, "could not read the API keys");
                Refusal::Unavailable
            })?
            .ok_or(Refusal::Unauthenticated(
                "the API key is unknown or was revoked",
            ))?;
        if !scopes.iter().any(|s| info.scopes.contains(s)) {
            return Err(Refusal::Forbidden(scopes[0]));
        }
        match &self.limiter {
            Limiter::Memory(limiter) => limiter.check(info.id).map_err(Refusal::RateLimited)?,
            Limiter::Shared(0) => {}
            Limiter::Shared(per_minute) => {
                api_key::count_request(&self.pool, info.id, *per_minute)
                    .await
                    .map_err(|error| {
                        tracing::error!(%error, "could not count an API request");
                        Refusal::Unavailable
                    })?
                    .map_err(|wait| Refusal::RateLimited(wait.max(Duration::from_secs(1))))?;
            }
        }
        Ok(info)
    }
}

/// A sliding one-minute window of requests per key. `0` per minute turns it off.
#[derive(Debug)]
struct ApiLimiter {
    per_minute: u32,
    seen: Mutex<HashMap<i64, VecDeque<Instant>>>,
    clock: crate::server::clock::Clock,
}

const WINDOW: Duration = Duration::from_secs(60);

impl ApiLimiter {
    pub fn new(per_minute: u32) -> Self {
        ApiLimiter {
            per_minute,
            seen: Mutex::default(),
            clock: crate::server::clock::Clock::default(),
        }
    }

    /// Counts one request for `key_id`; `Err(wait)` when the key has used up its minute.
    pub fn check(&self, key_id: i64) -> Result<(), Duration> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let now = self.clock.now();
        let mut seen = self.seen.lock().expect("API limiter lock");
        let times = seen.entry(key_id).or_default();
        while times.front().is_some_and(|t| now - *t >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= self.per_minute as usize {
            let oldest = times.front().copied().unwrap_or(now);
            return Err(WINDOW
                .saturating_sub(now - oldest)
                .max(Duration::from_secs(1)));
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn keys_are_read_from_each_header_form() {
        let mut headers = HeaderMap::new();
        assert_eq!(presented_key(&headers), None);
        headers.insert("x-sandbox-token", HeaderValue::from_static("sck_b"));
        assert_eq!(presented_key(&headers), Some("sck_b"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("sck_bare"));
        assert_eq!(presented_key(&headers), Some("sck_bare"));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  sck_a"),
        );
        assert_eq!(presented_key(&headers), Some("sck_a"));
    }

    #[test]
    fn the_limiter_refuses_past_the_limit_per_key() {
        let limiter = ApiLimiter::new(2);
        assert!(limiter.check(1).is_ok());
        assert!(limiter.check(1).is_ok());
        let wait = limiter.check(1).unwrap_err();
        assert!(wait > Duration::from_secs(50), "{wait:?}");
        assert!(limiter.check(2).is_ok(), "other keys keep their own budget");
        assert!(ApiLimiter::new(0).check(1).is_ok());
    }

    #[test]
    fn the_window_slides_and_the_wait_says_until_when() {
        let (clock, hand) = crate::server::clock::Clock::manual();
        let limiter = ApiLimiter {
            clock,
            ..ApiLimiter::new(2)
        };
        assert!(limiter.check(1).is_ok());
        hand.advance(Duration::from_secs(20));
        assert!(limiter.check(1).is_ok());
        hand.advance(Duration::from_secs(10));
        assert_eq!(limiter.check(1), Err(Duration::from_secs(30)));
        hand.advance(Duration::from_secs(30));
        assert!(
            limiter.check(1).is_ok(),
            "the first request left the window"
        );
        assert_eq!(limiter.check(1), Err(Duration::from_secs(20)));
    }
}
