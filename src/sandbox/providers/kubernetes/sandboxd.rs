//! agent-sandbox's sandboxd as the runtime in a claimed pod (`packages/sandboxd` at 2fd412d):
//! files written with REST `PUT /v1/files/{path}` (raw bytes, `application/octet-stream`, the
//! path percent-encoded whole, 204 when written) on the runtime port, and programs run with
//! gRPC `process.v1.ProcessService/Execute` (`ProcessConfig {command, env_vars, cwd}` →
//! `{exit_code, stdout, stderr}`, no shell, no timeout of its own) on the gRPC port, plain
//! HTTP/2 at the pod's IP. The messages are written by hand with prost's derive, under the
//! field numbers of `spec/process/v1/process.proto`.
//!
//! sandboxd v0.5.6 listens on 127.0.0.1 only; a pod reached at its IP needs one that listens
//! on the pod's addresses (`--listen-host 0.0.0.0`, the default after v0.5.6).

use std::{collections::HashMap, time::Duration};

use http::uri::PathAndQuery;
use tokio::time::Instant;
use tonic::{
    client::Grpc,
    transport::{Channel, Endpoint},
    Code, Request,
};
use tonic_prost::ProstCodec;

use super::{error::KubernetesError, runtime::Ran};

const EXECUTE: &str = "/process.v1.ProcessService/Execute";

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessConfig {
    #[prost(string, repeated, tag = "1")]
    pub command: Vec<String>,
    #[prost(map = "string, string", tag = "2")]
    pub env_vars: HashMap<String, String>,
    #[prost(string, optional, tag = "3")]
    pub cwd: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecuteRequest {
    #[prost(message, optional, tag = "1")]
    pub config: Option<ProcessConfig>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecuteResponse {
    #[prost(int32, tag = "1")]
    pub exit_code: i32,
    #[prost(bytes = "vec", tag = "2")]
    pub stdout: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    pub stderr: Vec<u8>,
}

/// One pod's sandboxd process service.
#[derive(Clone, Debug)]
pub struct Sandboxd {
    channel: Channel,
    sandbox: String,
}

impl Sandboxd {
    /// The service at `ip`:`port` (connected on first use).
    pub fn at(
        ip: &str,
        port: u16,
        sandbox: &str,
        connect: Duration,
    ) -> Result<Self, KubernetesError> {
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.to_owned()
        };
        let endpoint = Endpoint::from_shared(format!("http://{host}:{port}"))
            .map_err(|e| KubernetesError::Runtime {
                sandbox: sandbox.to_owned(),
                message: format!("sandboxd's address: {e}"),
            })?
            .connect_timeout(connect);
        Ok(Sandboxd {
            channel: endpoint.connect_lazy(),
            sandbox: sandbox.to_owned(),
        })
    }

    fn failed(&self, message: String) -> KubernetesError {
        KubernetesError::Runtime {
            sandbox: self.sandbox.clone(),
            message,
        }
    }

    /// Runs `argv` (no shell) in sandboxd's root folder until `deadline`, reading at most
    /// `room` bytes of answer.
    pub async fn execute(
        &self,
        argv: Vec<String>,
        deadline: Instant,
        room: usize,
    ) -> Result<Ran, KubernetesError> {
        let mut grpc = Grpc::new(self.channel.clone()).max_decoding_message_size(room);
        let call = async {
            grpc.ready()
                .await
                .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
            let request = Request::new(ExecuteRequest {
                config: Some(ProcessConfig {
                    command: argv,
                    env_vars: HashMap::new(),
                    cwd: None,
                }),
            });
            grpc.unary::<_, ExecuteResponse, _>(
                request,
                PathAndQuery::from_static(EXECUTE),
                ProstCodec::default(),
            )
            .await
        };
        match tokio::time::timeout_at(deadline, call).await {
            Err(_) => Ok(Ran {
                timed_out: true,
                ..Ran::default()
            }),
            Ok(Ok(answer)) => {
                let answer = answer.into_inner();
                Ok(Ran {
                    stdout: String::from_utf8_lossy(&answer.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&answer.stderr).into_owned(),
                    exit_code: Some(answer.exit_code.into()),
                    timed_out: false,
                    over: false,
                })
            }
            // The answer was bigger than the room (tonic refuses to decode it).
            Ok(Err(status))
                if matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted) =>
            {
                Ok(Ran {
                    over: true,
                    ..Ran::default()
                })
            }
            Ok(Err(status)) => Err(self.failed(format!(
                "sandboxd's Execute failed: {:?}: {}",
                status.code(),
                super::http::one_line(status.message())
            ))),
        }
    }
}

/// The REST path of a file: the whole relative path percent-encoded (slashes too), as
/// sandboxd's Python client sends it.
pub fn file_path(name: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(name.as_bytes()).collect();
    // form encoding writes a space as '+'; a path wants %20.
    format!("/v1/files/{}", encoded.replace('+', "%20"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_path_is_encoded_whole() {
        assert_eq!(file_path("a b/c.py"), "/v1/files/a%20b%2Fc.py");
        assert_eq!(file_path("main.py"), "/v1/files/main.py");
    }
}
