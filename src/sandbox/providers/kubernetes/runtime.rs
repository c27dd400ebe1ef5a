//! The runtime in a claimed pod, as agent-sandbox's example Python runtime serves it
//! (`examples/python-runtime-sandbox`): `POST /upload` (multipart, part `file`, its file name
//! the path under the runtime's base folder) and `POST /execute` `{command}` (split like a
//! shell would, run without one, in the base folder) answering `{stdout, stderr, exit_code}`.
//! Or sandboxd (`sandboxd.rs`): files by REST `PUT /v1/files/{path}`, programs by gRPC.

use serde::Deserialize;
use serde_json::json;
use tokio::time::Instant;

use super::{error::KubernetesError, reach::Reached};
use crate::sandbox::providers::http;

/// One run's answer.
#[derive(Debug, Default)]
pub struct Ran {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i64>,
    /// The deadline passed before the answer came.
    pub timed_out: bool,
    /// The answer was longer than the room allowed.
    pub over: bool,
}

#[derive(Deserialize)]
struct Executed {
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
    exit_code: i64,
}

pub struct Runtime<'a> {
    pub client: &'a reqwest::Client,
    pub reached: &'a Reached,
    pub sandbox: &'a str,
    pub request_timeout: std::time::Duration,
}

impl Runtime<'_> {
    fn failed(&self, message: String) -> KubernetesError {
        KubernetesError::Runtime {
            sandbox: self.sandbox.to_owned(),
            message,
        }
    }

    /// Writes `contents` as `name` in the runtime's base folder.
    pub async fn upload(&self, name: &str, contents: Vec<u8>) -> Result<(), KubernetesError> {
        if self.reached.sandboxd.is_some() {
            return self.put(name, contents).await;
        }
        let part = reqwest::multipart::Part::bytes(contents).file_name(name.to_owned());
        let answer = self
            .client
            .post(format!("{}/upload", self.reached.base))
            .headers(self.reached.headers.clone())
            .timeout(self.request_timeout)
            .multipart(reqwest::multipart::Form::new().part("file", part))
            .send()
            .await
            .map_err(|e| self.failed(format!("the upload of the program got no answer: {e}")))?;
        self.written(answer, "the upload of the program was answered")
            .await
    }

    /// `Ok` for a 2xx answer to a write; else the error, saying what answered.
    async fn written(&self, answer: reqwest::Response, what: &str) -> Result<(), KubernetesError> {
        if answer.status().is_success() {
            return Ok(());
        }
        let status = answer.status();
        let body = answer.bytes().await.unwrap_or_default();
        Err(self.failed(format!("{what} {status} {}", http::described(&body))))
    }

    /// sandboxd's `PUT /v1/files/{path}`: the raw bytes, 204 when written.
    async fn put(&self, name: &str, contents: Vec<u8>) -> Result<(), KubernetesError> {
        let answer = self
            .client
            .put(format!(
                "{}{}",
                self.reached.base,
                super::sandboxd::file_path(name)
            ))
            .headers(self.reached.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .timeout(self.request_timeout)
            .body(contents)
            .send()
            .await
            .map_err(|e| self.failed(format!("the upload of the program got no answer: {e}")))?;
        self.written(answer, "sandboxd answered the upload of the program")
            .await
    }

    /// Runs `command` until `deadline`, reading at most `room` bytes of answer.
    pub async fn execute(
        &self,
        command: &str,
        deadline: Instant,
        room: usize,
    ) -> Result<Ran, KubernetesError> {
        if let Some(sandboxd) = &self.reached.sandboxd {
            let argv = shlex::split(command)
                .ok_or_else(|| self.failed(format!("cannot split the command {command:?}")))?;
            return sandboxd.execute(argv, deadline, room).await;
        }
        let ran = async {
            let answer = self
                .client
                .post(format!("{}/execute", self.reached.base))
                .headers(self.reached.headers.clone())
                .json(&json!({ "command": command }))
                .send()
                .await?;
            let status = answer.status();
            Ok::<_, reqwest::Error>((status, http::read_limited(answer, room).await?))
        };
        let (status, body) = match tokio::time::timeout_at(deadline, ran).await {
            Err(_) => {
                return Ok(Ran {
                    timed_out: true,
                    ..Ran::default()
                })
            }
            Ok(Err(e)) => {
                return Err(self.failed(format!(
                    "the run got no whole answer (the pod may have gone away): {e}"
                )))
            }
            Ok(Ok((_, http::Body::Over))) => {
                return Ok(Ran {
                    over: true,
                    ..Ran::default()
                })
            }
            Ok(Ok((status, http::Body::Complete(body)))) => (status, body),
        };
        if !status.is_success() {
            return Err(self.failed(format!(
                "the run was answered {status} {}",
                http::described(&body)
            )));
        }
        let executed: Executed = serde_json::from_slice(&body).map_err(|e| {
            self.failed(format!(
                "the run's answer is not the runtime's {{stdout, stderr, exit_code}}: {e}"
            ))
        })?;
        Ok(Ran {
            stdout: executed.stdout,
            stderr: executed.stderr,
            exit_code: Some(executed.exit_code),
            timed_out: false,
            over: false,
        })
    }
}
