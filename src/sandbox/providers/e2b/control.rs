//! E2B's control plane, as E2B and the services that follow its API (UCloud's Agent Sandbox)
//! serve it: `POST /sandboxes` (201 `{sandboxID, envdAccessToken, domain, …}`), `DELETE
//! /sandboxes/{id}` (404: already gone), `X-API-Key` on every call, errors as `{code,
//! message}`: 401/403 the key's fault, 429 too many sandboxes.

use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use super::error::E2bError;
use crate::sandbox::{providers::http, Error};

/// One service's API: its base URL, key and the name its messages use ("E2B").
#[derive(Debug)]
pub struct ControlPlane {
    pub api: Url,
    pub client: reqwest::Client,
    api_key: String,
    timeout: Duration,
    service: &'static str,
}

/// A sandbox the service created: what is needed to reach it.
#[derive(Clone, Debug)]
pub struct Created {
    pub sandbox_id: String,
    /// Sent as `X-Access-Token` to the sandbox (a `secure` sandbox has one).
    pub access_token: Option<String>,
    /// The sandbox's domain, when the service names one.
    pub domain: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreatedSandbox {
    #[serde(rename = "sandboxID")]
    sandbox_id: String,
    #[serde(default)]
    envd_access_token: Option<String>,
    #[serde(default)]
    domain: Option<String>,
}

impl ControlPlane {
    pub fn new(
        kind: &'static str,
        service: &'static str,
        api: Url,
        api_key: &str,
        timeout: Duration,
    ) -> Result<Self, Error> {
        Ok(ControlPlane {
            client: http::client(kind, timeout)?,
            api,
            api_key: api_key.trim().to_owned(),
            timeout,
            service,
        })
    }

    pub fn call(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, http::join(&self.api, path))
            .header("X-API-Key", &self.api_key)
    }

    /// Sends `request` and reads the answer: 401/403 are the key's fault, 429 is a busy
    /// service, other failures say what it answered (its `{code, message}`, shortened).
    pub async fn send(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, Error> {
        let response = request
            .send()
            .await
            .map_err(|e| http::transport(what, &e, self.timeout))?;
        self.answer(what, response).await
    }

    pub async fn answer(&self, what: &str, response: reqwest::Response) -> Result<Vec<u8>, Error> {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .bytes()
            .await
            .map_err(|e| http::transport(what, &e, self.timeout))?;
        match status {
            s if s.is_success() => Ok(body.to_vec()),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Err(Error::Unauthenticated(format!(
                    "{} refused the API key ({what}: HTTP {}): {}",
                    self.service,
                    status.as_u16(),
                    http::described(&body)
                )))
            }
            StatusCode::TOO_MANY_REQUESTS => Err(Error::PoolBusy {
                retry_after: http::retry_after(&headers).unwrap_or(Duration::from_secs(5)),
                detail: None,
            }),
            _ => Err(E2bError::Api {
                service: self.service,
                what: what.to_owned(),
                status: status.as_u16(),
                excerpt: http::described(&body),
            }
            .into()),
        }
    }

    /// `POST /sandboxes` with `body` (templateID, timeout, secure, …).
    pub async fn create(&self, body: &Value) -> Result<Created, Error> {
        let what = "POST /sandboxes";
        let bytes = self
            .send(
                what,
                self.call(reqwest::Method::POST, "sandboxes").json(body),
            )
            .await?;
        let created: CreatedSandbox =
            serde_json::from_slice(&bytes).map_err(|source| E2bError::NotASandbox {
                service: self.service,
                what: what.to_owned(),
                excerpt: http::described(&bytes),
                source,
            })?;
        Ok(Created {
            sandbox_id: created.sandbox_id,
            access_token: created.envd_access_token.filter(|t| !t.is_empty()),
            domain: created.domain.filter(|d| !d.is_empty()),
        })
    }

    /// `DELETE /sandboxes/{id}`; one already gone (its timeout passed) is not an error.
    pub async fn delete(&self, sandbox_id: &str) -> Result<(), Error> {
        let what = format!("DELETE /sandboxes/{sandbox_id}");
        let response = self
            .call(reqwest::Method::DELETE, &format!("sandboxes/{sandbox_id}"))
            .send()
            .await
            .map_err(|e| http::transport(&what, &e, self.timeout))?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(());
        }
        self.answer(&what, response).await.map(drop)
    }
}
