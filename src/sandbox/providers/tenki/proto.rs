//! The messages of Tenki's gRPC services (`tenki.sandbox.v1`) this provider sends and reads,
//! written by hand with prost's derive: only the fields used, under the field numbers of
//! Tenki's published schema (as its Python SDK 1.4.1 and Go SDK 0.7.0 ship it); a field left
//! out is one this provider neither sets nor reads, which protobuf allows.

use std::collections::HashMap;

/// `google.protobuf.Duration`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Duration {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WhoAmIRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WhoAmIResponse {
    #[prost(string, tag = "1")]
    pub owner_type: String,
    #[prost(string, tag = "2")]
    pub owner_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateSessionRequest {
    #[prost(string, tag = "1")]
    pub owner_id: String,
    #[prost(string, tag = "2")]
    pub owner_type: String,
    #[prost(bool, optional, tag = "3")]
    pub allow_inbound: Option<bool>,
    #[prost(bool, optional, tag = "4")]
    pub allow_outbound: Option<bool>,
    #[prost(message, optional, tag = "5")]
    pub max_duration: Option<Duration>,
    #[prost(int32, optional, tag = "6")]
    pub cpu_cores: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub memory_mb: Option<i32>,
    #[prost(map = "string, string", tag = "8")]
    pub metadata: HashMap<String, String>,
    /// The image (`registry_ref`); unset for Tenki's default image.
    #[prost(string, optional, tag = "18")]
    pub registry_ref: Option<String>,
    #[prost(int32, optional, tag = "21")]
    pub disk_size_gb: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SessionCredential {
    #[prost(string, tag = "1")]
    pub credential: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SandboxSession {
    #[prost(string, tag = "1")]
    pub id: String,
    /// [`SESSION_RUNNING`] and the others of `SessionState`.
    #[prost(int32, tag = "2")]
    pub state: i32,
    #[prost(string, tag = "34")]
    pub terminal_error: String,
}

pub const SESSION_RUNNING: i32 = 3;
/// This state and those after it, except pausing and resuming, end a session.
pub const SESSION_TERMINATING: i32 = 5;
pub const SESSION_PAUSING: i32 = 7;
pub const SESSION_RESUMING: i32 = 8;

/// `CreateSessionResponse`, `WaitSessionResponse` and `CreateSessionCredentialResponse` share
/// these numbers for the session, the data plane's address and its credential, except the
/// last, which has no session: see [`CredentialResponse`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct SessionResponse {
    #[prost(message, optional, tag = "1")]
    pub session: Option<SandboxSession>,
    #[prost(string, tag = "2")]
    pub data_plane_endpoint: String,
    #[prost(message, optional, tag = "3")]
    pub credential: Option<SessionCredential>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SessionIdRequest {
    #[prost(string, tag = "1")]
    pub session_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CredentialResponse {
    #[prost(message, optional, tag = "1")]
    pub credential: Option<SessionCredential>,
    #[prost(string, tag = "2")]
    pub data_plane_endpoint: String,
}

// The data plane: every request and answer in an envelope, field 1.

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunStart {
    #[prost(string, tag = "1")]
    pub session_id: String,
    #[prost(string, repeated, tag = "2")]
    pub cmd: Vec<String>,
    #[prost(string, tag = "3")]
    pub cwd: String,
    #[prost(bool, tag = "6")]
    pub stream_stdin: bool,
    #[prost(uint32, tag = "7")]
    pub timeout_ms: u32,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum RunRequestPayload {
    #[prost(message, tag = "1")]
    Start(RunStart),
    #[prost(bool, tag = "4")]
    StdinClose(bool),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunRequest {
    #[prost(oneof = "RunRequestPayload", tags = "1, 4")]
    pub payload: Option<RunRequestPayload>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunRequestFrame {
    #[prost(message, optional, tag = "1")]
    pub frame: Option<RunRequest>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunStarted {
    #[prost(uint64, tag = "1")]
    pub pid: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunExit {
    #[prost(int32, tag = "1")]
    pub exit_code: i32,
    #[prost(string, tag = "2")]
    pub signal: String,
    #[prost(bool, tag = "3")]
    pub timed_out: bool,
    #[prost(uint64, tag = "4")]
    pub duration_ms: u64,
    #[prost(string, tag = "5")]
    pub reason: String,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum RunResponsePayload {
    #[prost(message, tag = "1")]
    Started(RunStarted),
    #[prost(bytes, tag = "2")]
    Stdout(Vec<u8>),
    #[prost(bytes, tag = "3")]
    Stderr(Vec<u8>),
    #[prost(message, tag = "4")]
    Exit(RunExit),
    #[prost(bool, tag = "6")]
    Keepalive(bool),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunResponse {
    #[prost(oneof = "RunResponsePayload", tags = "1, 2, 3, 4, 6")]
    pub payload: Option<RunResponsePayload>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RunResponseFrame {
    #[prost(message, optional, tag = "1")]
    pub frame: Option<RunResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteFileRequest {
    #[prost(string, tag = "1")]
    pub session_id: String,
    #[prost(string, tag = "2")]
    pub path: String,
    #[prost(bytes, tag = "3")]
    pub content: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteFileResponse {
    #[prost(string, tag = "1")]
    pub path: String,
    #[prost(int64, tag = "2")]
    pub size_bytes: i64,
}

/// A data-plane message in its envelope (`…{Method}Request { X request = 1 }`, `…{Method}Response
/// { Y response = 1 }`).
macro_rules! envelope {
    ($name:ident, $inner:ty) => {
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct $name {
            #[prost(message, optional, tag = "1")]
            pub inner: Option<$inner>,
        }
    };
}

envelope!(WriteFileEnvelope, WriteFileRequest);
envelope!(WriteFileAnswer, WriteFileResponse);
