//! The sandbox's own API (E2B's envd on port 49983, as UCloud serves it): a file written with
//! `POST /files?path=…` (multipart, part `file`), and a command run with the Connect protocol's
//! server stream `POST /process.Process/Start` (`application/connect+json`; each message an
//! envelope: one flags byte, a big-endian u32 length, JSON): `start`, `data` (base64 stdout or
//! stderr), `keepalive`, `end {exitCode}`, then the end-of-stream envelope (flags 0x02), which
//! may carry `{error: {code, message}}`.

use std::time::Duration;

use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::error::UcloudError;
use crate::sandbox::{providers::http, Error};

/// envd's port inside every sandbox.
pub const ENVD_PORT: u16 = 49983;

/// One sandbox's envd.
pub struct Envd<'a> {
    pub client: &'a reqwest::Client,
    /// `<scheme>://49983-<id>.<domain>`, or the override URL (then routed by headers).
    pub base: String,
    pub routed: bool,
    pub sandbox_id: &'a str,
    pub access_token: Option<&'a str>,
    pub request_timeout: Duration,
}

/// How a command ended.
#[derive(Debug, Default)]
pub struct Ran {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: Option<i32>,
    /// The `end` event came.
    pub ended: bool,
    pub timed_out: bool,
    /// stdout or stderr went over the cap (reading stopped).
    pub over: bool,
    /// What the stream reported as its error, if any.
    pub error: Option<String>,
}

impl Envd<'_> {
    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(format!("{}/{path}", self.base.trim_end_matches('/')));
        let request = match self.routed {
            true => request
                .header("E2b-Sandbox-Id", self.sandbox_id)
                .header("E2b-Sandbox-Port", ENVD_PORT.to_string()),
            false => request,
        };
        match self.access_token {
            Some(token) => request.header("X-Access-Token", token),
            None => request,
        }
    }

    /// Writes `contents` to `path` (envd makes the folders).
    pub async fn write(&self, path: &str, contents: Vec<u8>) -> Result<(), Error> {
        let what = format!("POST /files?path={path}");
        let part = reqwest::multipart::Part::bytes(contents)
            .file_name(path.to_owned())
            .mime_str("application/octet-stream")
            .map_err(|e| http::transport(&what, &e, self.request_timeout))?;
        let response = self
            .post(&format!(
                "files?path={}",
                url::form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>()
            ))
            .multipart(reqwest::multipart::Form::new().part("file", part))
            .timeout(self.request_timeout)
            .send()
            .await
            .map_err(|e| http::transport(&what, &e, self.request_timeout))?;
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        match status {
            s if s.is_success() => Ok(()),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Err(Error::Unauthenticated(format!(
                    "the UCloud sandbox refused its access token ({what}: HTTP {}): {}",
                    status.as_u16(),
                    http::described(&body)
                )))
            }
            _ => Err(UcloudError::Envd {
                what,
                status: status.as_u16(),
                excerpt: http::described(&body),
            }
            .into()),
        }
    }

    /// Runs `line` with `/bin/bash -l -c` in `cwd`, reading its output until it ends, the
    /// deadline passes or either stream goes over `cap`.
    pub async fn run(
        &self,
        line: &str,
        cwd: &str,
        deadline: tokio::time::Instant,
        cap: usize,
    ) -> Result<Ran, Error> {
        let what = "POST /process.Process/Start".to_owned();
        let start = json!({
            "process": { "cmd": "/bin/bash", "args": ["-l", "-c", line], "cwd": cwd },
            "stdin": false,
        });
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let sent = tokio::time::timeout_at(
            deadline,
            self.post("process.Process/Start")
                .header("Content-Type", "application/connect+json")
                .header("Connect-Protocol-Version", "1")
                .header("Connect-Timeout-Ms", left.as_millis().max(1).to_string())
                .body(envelope(0, &start))
                .send(),
        )
        .await;
        let mut response = match sent {
            Err(_) => {
                return Ok(Ran {
                    timed_out: true,
                    ..Ran::default()
                })
            }
            Ok(Err(error)) => return Err(http::transport(&what, &error, left)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let body = response.bytes().await.unwrap_or_default();
            return Err(match status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    Error::Unauthenticated(format!(
                        "the UCloud sandbox refused its access token ({what}: HTTP {}): {}",
                        status.as_u16(),
                        http::described(&body)
                    ))
                }
                _ => UcloudError::Envd {
                    what,
                    status: status.as_u16(),
                    excerpt: http::described(&body),
                }
                .into(),
            });
        }
        let mut ran = Ran::default();
        let mut buffer: Vec<u8> = Vec::new();
        loop {
            let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
                Err(_) => {
                    ran.timed_out = true;
                    break;
                }
                Ok(Err(error)) => {
                    ran.error = Some(format!("the stream broke: {error}"));
                    break;
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            buffer.extend_from_slice(&chunk);
            while let Some((flags, message, used)) = next_envelope(&buffer)? {
                buffer.drain(..used);
                if flags & 0x02 != 0 {
                    if let Some(error) = message.get("error") {
                        let code = error["code"].as_str().unwrap_or("unknown");
                        if code == "deadline_exceeded" {
                            ran.timed_out = true;
                        }
                        ran.error = Some(format!(
                            "{code}: {}",
                            error["message"].as_str().unwrap_or_default()
                        ));
                    }
                    return Ok(ran);
                }
                read_event(&message["event"], &mut ran, cap);
                if ran.over {
                    return Ok(ran);
                }
            }
        }
        Ok(ran)
    }
}

fn read_event(event: &Value, ran: &mut Ran, cap: usize) {
    if let Some(data) = event.get("data") {
        for (key, into) in [("stdout", &mut ran.stdout), ("stderr", &mut ran.stderr)] {
            if let Some(bytes) = data[key].as_str().and_then(|t| BASE64.decode(t).ok()) {
                ran.over |= crate::sandbox::runner::keep_capped(into, &bytes, cap);
            }
        }
    } else if let Some(end) = event.get("end") {
        ran.ended = true;
        ran.exit_code = end["exitCode"].as_i64().map(|c| c as i32).or(Some(0));
        if let Some(error) = end["error"].as_str().filter(|e| !e.is_empty()) {
            ran.error = Some(error.to_owned());
        }
    }
}

/// A Connect envelope: flags, big-endian length, the JSON message.
pub fn envelope(flags: u8, message: &Value) -> Vec<u8> {
    let payload = message.to_string().into_bytes();
    let mut out = Vec::with_capacity(payload.len() + 5);
    out.push(flags);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

/// The first whole envelope in `buffer`: flags, message and how many bytes it took.
fn next_envelope(buffer: &[u8]) -> Result<Option<(u8, Value, usize)>, Error> {
    if buffer.len() < 5 {
        return Ok(None);
    }
    let length = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if length > 64 << 20 {
        return Err(UcloudError::Stream {
            excerpt: format!("an envelope of {length} bytes"),
        }
        .into());
    }
    if buffer.len() < 5 + length {
        return Ok(None);
    }
    let message =
        serde_json::from_slice(&buffer[5..5 + length]).map_err(|_| UcloudError::Stream {
            excerpt: http::described(&buffer[5..5 + length]),
        })?;
    Ok(Some((buffer[0], message, 5 + length)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_split_wherever_the_chunks_end() {
        let mut stream = envelope(
            0,
            &json!({"event": {"data": {"stdout": BASE64.encode("hi\n")}}}),
        );
        stream.extend(envelope(
            0,
            &json!({"event": {"end": {"exitCode": 3, "exited": true}}}),
        ));
        stream.extend(envelope(2, &json!({})));
        let mut ran = Ran::default();
        let mut buffer = Vec::new();
        let mut ended = false;

        for byte in stream {
            buffer.push(byte);
            while let Some((flags, message, used)) = next_envelope(&buffer).unwrap() {
                buffer.drain(..used);
                ended |= flags & 2 != 0;
                read_event(&message["event"], &mut ran, 1024);
            }
        }

        assert_eq!(ran.stdout, b"hi\n");
        assert_eq!(ran.exit_code, Some(3));
        assert!(ran.ended && ended);
    }
}
