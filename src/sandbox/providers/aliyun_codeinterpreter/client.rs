//! AgentRun's HTTP API as the provider calls it: data-plane requests signed with
//! AGENTRUN4-HMAC-SHA256, control-plane (template) requests with ACS3-HMAC-SHA256, and their
//! answers.

use super::*;

/// An answer of AgentRun: its status, body, and the body as JSON (`Null` when it is not
/// JSON; `{code, requestId, message}` on errors), parsed once.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Vec<u8>,
    pub(super) json: Value,
}

impl Answer {
    pub(super) fn new(status: StatusCode, body: Vec<u8>) -> Self {
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Answer { status, body, json }
    }

    pub(super) fn field(&self, key: &str) -> String {
        self.json
            .get(key)
            .or_else(|| self.json.get("data").and_then(|d| d.get(key)))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The error for a failed call: refused credentials are `Unauthenticated`.
    pub(super) fn error(&self, what: &str) -> Error {
        let detail = if self.json.is_null() {
            http::described(&self.body)
        } else {
            // The API's error code, when it is one (a word); never its message: the
            // console does not repeat what a remote said.
            let code = self.field("code");
            let word = !code.is_empty()
                && code.len() <= 64
                && code
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if word {
                code
            } else {
                http::described(&self.body)
            }
        };
        match self.status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Error::Unauthenticated(format!(
                "AgentRun refused the AccessKey ({what}: HTTP {}): {detail}",
                self.status.as_u16()
            )),
            StatusCode::TOO_MANY_REQUESTS => Error::PoolBusy {
                retry_after: Duration::from_secs(2),
                detail: None,
            },
            status => AgentRunError::Api {
                what: what.to_owned(),
                status: status.as_u16(),
                detail,
            }
            .into(),
        }
    }
}

pub(super) fn timestamp() -> (String, String) {
    let now = time::OffsetDateTime::now_utc();
    let date = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    );
    let day = date[..10].replace('-', "");
    (date, day)
}

/// The `Host` header as the HTTP client sends it: the port only when it is not the default.
pub(super) fn host_header(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

impl AliyunProvider {
    /// A data-plane request, signed with AGENTRUN4-HMAC-SHA256.
    pub(super) fn data_request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let url = http::join(&self.data, path);
        let parsed = Url::parse(&url).expect("a joined URL parses");
        let (date, day) = timestamp();
        let mut headers = vec![
            ("host".to_owned(), host_header(&parsed)),
            ("x-acs-date".to_owned(), date.clone()),
            (
                "x-acs-content-sha256".to_owned(),
                signature::UNSIGNED_PAYLOAD.to_owned(),
            ),
        ];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let signed = Signed {
            method: method.as_str(),
            path: parsed.path(),
            query: parsed.query().unwrap_or_default(),
            headers,
        };
        let authorization = signature::agentrun4_authorization(
            &signed,
            self.config.access_key_id.trim(),
            &self.config.access_key_secret,
            &day,
            self.config.region.trim(),
        );
        let request = self
            .client
            .request(method, url)
            .header("x-acs-date", date)
            .header("x-acs-content-sha256", signature::UNSIGNED_PAYLOAD)
            .header("Agentrun-Authorization", authorization);
        match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string()),
            None => request,
        }
    }

    /// A control-plane (OpenAPI, ROA) request, signed with ACS3-HMAC-SHA256.
    pub(super) fn control_request(
        &self,
        method: Method,
        path: &str,
        action: &str,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let url = http::join(&self.control, path);
        let parsed = Url::parse(&url).expect("a joined URL parses");
        let (date, _) = timestamp();
        let payload = body.map(Value::to_string).unwrap_or_default();
        let payload_hash = signature::sha256_hex(payload.as_bytes());
        let nonce = format!("{:032x}", rand::random::<u128>());
        let mut headers = vec![
            ("host".to_owned(), host_header(&parsed)),
            ("x-acs-action".to_owned(), action.to_owned()),
            ("x-acs-version".to_owned(), API_VERSION.to_owned()),
            ("x-acs-date".to_owned(), date),
            ("x-acs-signature-nonce".to_owned(), nonce),
            ("x-acs-content-sha256".to_owned(), payload_hash.clone()),
        ];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let signed = Signed {
            method: method.as_str(),
            path: parsed.path(),
            query: parsed.query().unwrap_or_default(),
            headers: headers.clone(),
        };
        let authorization = signature::acs3_authorization(
            &signed,
            &payload_hash,
            self.config.access_key_id.trim(),
            &self.config.access_key_secret,
        );
        let mut request = self.client.request(method, url);
        for (name, value) in headers.into_iter().filter(|(n, _)| n != "host") {
            request = request.header(name, value);
        }
        request = request.header(header::AUTHORIZATION, authorization);
        if body.is_some() {
            request = request.body(payload);
        }
        request
    }

    pub(super) async fn send(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Answer, Error> {
        let response = request
            .send()
            .await
            .map_err(|e| http::transport(what, &e, timeout))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| http::transport(what, &e, timeout))?;
        Ok(Answer::new(status, body.to_vec()))
    }
}
