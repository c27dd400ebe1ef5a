//! Tenki over gRPC, as its SDKs call it: the control plane (`tenki.sandbox.v1.SandboxService`
//! at the API URL, `authorization: Bearer tk_…`) and each session's data plane
//! (`SandboxSessionDataPlaneService` at the endpoint the control plane names, with the
//! session's credential in `x-tenki-session-cert` and never the API key). `http://` URLs are
//! plain HTTP/2, others TLS with the system's roots.

use std::time::Duration;

use http::uri::PathAndQuery;
use prost::Message;
use tonic::{
    client::Grpc,
    metadata::MetadataValue,
    transport::{Channel, ClientTlsConfig, Endpoint},
    Code, Request, Status,
};
use tonic_prost::ProstCodec;

use super::proto::*;
use crate::sandbox::{runner, Error};

const CONTROL: &str = "/tenki.sandbox.v1.SandboxService/";
const DATA: &str = "/tenki.sandbox.v1.SandboxSessionDataPlaneService/";

/// A channel to `url` (connected on first use), each call bounded by `timeout`.
pub fn channel(url: &str, timeout: Option<Duration>) -> Result<Channel, String> {
    let mut endpoint = Endpoint::from_shared(url.to_owned())
        .map_err(|e| format!("{url} is not a URL: {e}"))?
        .connect_timeout(Duration::from_secs(10));
    if let Some(timeout) = timeout {
        endpoint = endpoint.timeout(timeout);
    }
    if !url.starts_with("http://") {
        endpoint = endpoint
            .tls_config(ClientTlsConfig::new().with_native_roots())
            .map_err(|e| format!("TLS for {url}: {e}"))?;
    }
    Ok(endpoint.connect_lazy())
}

/// One call's request with its header: `name: value` (a bearer token or a session credential).
fn request<T>(message: T, name: &'static str, value: &str) -> Result<Request<T>, Error> {
    let mut request = Request::new(message);
    let value = MetadataValue::try_from(value)
        .map_err(|_| Error::Backend(format!("the {name} is not a valid header value")))?;
    request.metadata_mut().insert(name, value);
    Ok(request)
}

async fn unary<Q, A>(channel: &Channel, path: String, request: Request<Q>) -> Result<A, Status>
where
    Q: Message + Send + Sync + 'static,
    A: Message + Default + Send + Sync + 'static,
{
    let mut grpc = Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = PathAndQuery::try_from(path).map_err(|e| Status::internal(e.to_string()))?;
    grpc.unary(request, path, ProstCodec::default())
        .await
        .map(|answer| answer.into_inner())
}

/// The control plane.
#[derive(Clone, Debug)]
pub struct Control {
    channel: Channel,
    bearer: String,
}

impl Control {
    pub fn new(url: &str, api_key: &str, timeout: Duration) -> Result<Self, String> {
        Ok(Control {
            channel: channel(url, Some(timeout))?,
            bearer: format!("Bearer {}", api_key.trim()),
        })
    }

    async fn call<Q, A>(&self, method: &str, message: Q) -> Result<A, Status>
    where
        Q: Message + Send + Sync + 'static,
        A: Message + Default + Send + Sync + 'static,
    {
        let request = request(message, "authorization", &self.bearer)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        unary(&self.channel, format!("{CONTROL}{method}"), request).await
    }

    pub async fn who_am_i(&self) -> Result<WhoAmIResponse, Status> {
        self.call("WhoAmI", WhoAmIRequest {}).await
    }

    pub async fn create(&self, create: CreateSessionRequest) -> Result<SessionResponse, Status> {
        self.call("CreateSession", create).await
    }

    /// Follows `WaitSession` until the session runs (or ends), within `limit`.
    pub async fn wait_running(
        &self,
        session_id: &str,
        limit: Duration,
    ) -> Result<SessionResponse, Status> {
        let work = async {
            let message = SessionIdRequest {
                session_id: session_id.to_owned(),
            };
            let request = request(message, "authorization", &self.bearer)
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let mut grpc = Grpc::new(self.channel.clone());
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            let path = PathAndQuery::from_static("/tenki.sandbox.v1.SandboxService/WaitSession");
            let mut stream = grpc
                .server_streaming::<_, SessionResponse, _>(request, path, ProstCodec::default())
                .await?
                .into_inner();
            let mut last = None;
            while let Some(update) = stream.message().await? {
                let state = update.session.as_ref().map_or(0, |s| s.state);
                if state == SESSION_RUNNING {
                    return Ok(update);
                }
                if state >= SESSION_TERMINATING
                    && state != SESSION_PAUSING
                    && state != SESSION_RESUMING
                {
                    let why = update
                        .session
                        .as_ref()
                        .map(|s| s.terminal_error.clone())
                        .unwrap_or_default();
                    return Err(Status::failed_precondition(format!(
                        "the session ended before it ran: {why}"
                    )));
                }
                last = Some(update);
            }
            Err(Status::unavailable(format!(
                "WaitSession ended while the session was not running (state {})",
                last.and_then(|u| u.session).map_or(0, |s| s.state)
            )))
        };
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(Status::deadline_exceeded(
                "the session did not start in time",
            ))
        })
    }

    pub async fn credential(&self, session_id: &str) -> Result<CredentialResponse, Status> {
        let message = SessionIdRequest {
            session_id: session_id.to_owned(),
        };
        self.call("CreateSessionCredential", message).await
    }

    pub async fn terminate(&self, session_id: &str) -> Result<(), Status> {
        let message = SessionIdRequest {
            session_id: session_id.to_owned(),
        };
        self.call::<_, SessionResponse>("TerminateSession", message)
            .await
            .map(drop)
    }
}

/// One session's data plane.
pub struct Data {
    channel: Channel,
    credential: String,
    pub session_id: String,
}

/// How a command ended.
#[derive(Debug, Default)]
pub struct Ran {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: Option<RunExit>,
    pub timed_out: bool,
    pub over: bool,
}

impl Data {
    pub fn new(
        endpoint: &str,
        credential: &str,
        session_id: &str,
        timeout: Duration,
    ) -> Result<Self, String> {
        Ok(Data {
            channel: channel(endpoint, Some(timeout))?,
            credential: credential.to_owned(),
            session_id: session_id.to_owned(),
        })
    }

    async fn call<Q, A>(&self, method: &str, message: Q) -> Result<A, Status>
    where
        Q: Message + Send + Sync + 'static,
        A: Message + Default + Send + Sync + 'static,
    {
        let request = request(message, "x-tenki-session-cert", &self.credential)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        unary(&self.channel, format!("{DATA}{method}"), request).await
    }

    pub async fn write(&self, path: &str, content: Vec<u8>) -> Result<(), Status> {
        let message = WriteFileEnvelope {
            inner: Some(WriteFileRequest {
                session_id: self.session_id.clone(),
                path: path.to_owned(),
                content,
            }),
        };
        self.call::<_, WriteFileAnswer>("WriteFile", message)
            .await
            .map(drop)
    }

    /// Runs `cmd` (argv, no shell) in `cwd`: `start`, then `stdin_close`, then its output until
    /// `exit`, the deadline, or either stream over `cap`.
    pub async fn run(
        &self,
        cmd: Vec<String>,
        cwd: &str,
        timeout: Duration,
        cap: usize,
    ) -> Result<Ran, Status> {
        let frames = vec![
            RunRequestFrame {
                frame: Some(RunRequest {
                    payload: Some(RunRequestPayload::Start(RunStart {
                        session_id: self.session_id.clone(),
                        cmd,
                        cwd: cwd.to_owned(),
                        stream_stdin: true,
                        timeout_ms: timeout.as_millis() as u32,
                    })),
                }),
            },
            RunRequestFrame {
                frame: Some(RunRequest {
                    payload: Some(RunRequestPayload::StdinClose(true)),
                }),
            },
        ];
        // The guest enforces `timeout_ms` and says so in `exit`; this is the backstop.
        let deadline = tokio::time::Instant::now() + timeout + Duration::from_secs(5);
        let mut ran = Ran::default();
        let work = async {
            let request = request(
                futures_util::stream::iter(frames),
                "x-tenki-session-cert",
                &self.credential,
            )
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let mut grpc = Grpc::new(self.channel.clone());
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            let path =
                PathAndQuery::from_static("/tenki.sandbox.v1.SandboxSessionDataPlaneService/Run");
            let mut stream = grpc
                .streaming::<_, _, RunResponseFrame, _>(request, path, ProstCodec::default())
                .await?
                .into_inner();
            while let Some(frame) = stream.message().await? {
                let payload = frame.frame.and_then(|f| f.payload);
                match payload {
                    Some(RunResponsePayload::Stdout(bytes)) => {
                        ran.over |= runner::keep_capped(&mut ran.stdout, &bytes, cap)
                    }
                    Some(RunResponsePayload::Stderr(bytes)) => {
                        ran.over |= runner::keep_capped(&mut ran.stderr, &bytes, cap)
                    }
                    Some(RunResponsePayload::Exit(exit)) => {
                        ran.timed_out |= exit.timed_out;
                        ran.exit = Some(exit);
                        break;
                    }
                    _ => {}
                }
                if ran.over {
                    break;
                }
            }
            Ok::<_, Status>(())
        };
        match tokio::time::timeout_at(deadline, work).await {
            Ok(Ok(())) => Ok(ran),
            Ok(Err(status)) if status.code() == Code::DeadlineExceeded => {
                ran.timed_out = true;
                Ok(ran)
            }
            Ok(Err(status)) => Err(status),
            Err(_) => {
                ran.timed_out = true;
                Ok(ran)
            }
        }
    }
}
