//! Fake of Tenki's sandbox service, as its SDKs (`tenki` 1.4.1 for Python, `tenki-sdk-go`
//! 0.7.0) call it, traced field by field in the research notes (`tenki-ucloud-wire`, part 1):
//! gRPC over HTTP/2 (here plain h2c on loopback), protobuf messages under the published field
//! numbers, the status in trailers (`grpc-status`, `grpc-message`).
//! - control plane (`tenki.sandbox.v1.SandboxService`), `authorization: Bearer tk_…`:
//!   `WhoAmI` → `{owner_type, owner_id}`; `CreateSession` → the session CREATING, no data
//!   plane yet; `WaitSession` (server stream) → CREATING, then RUNNING with
//!   `data_plane_endpoint` and `credential`; `CreateSessionCredential`; `TerminateSession` →
//!   TERMINATED, NOT_FOUND for a session it does not know; a bad key → UNAUTHENTICATED;
//! - data plane (`SandboxSessionDataPlaneService`, on its own address), `x-tenki-session-cert`
//!   checked and no `authorization` accepted: `WriteFile` `{request: {session_id, path,
//!   content}}`; `Run` (bidi): `start {session_id, cmd, cwd, stream_stdin, timeout_ms}` then
//!   `stdin_close`, answered `started {pid}`, raw `stdout` / `stderr` bytes, `exit {exit_code,
//!   timed_out, duration_ms, reason}`. The "microVM" runs `python3 FILE` or `node FILE` (a file
//!   written before, relative to `cwd`) in the local sandbox, killing it past `timeout_ms` and
//!   saying `timed_out`; another argv exits 127.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::HeaderMap,
    response::Response,
    routing::post,
    Router,
};
use prost::Message;
use sandbox_console::{
    model::execution::{ExecStatus, Language},
    sandbox::providers::local::LocalProvider,
};

use super::{
    engine, file,
    grpc::{answer, unframed},
    id, run, serve, Served, KEPT_OUTPUT,
};

pub const API_KEY: &str = "tk_0123456789abcdef";

// The messages, under Tenki's field numbers (only what the fake reads or writes).

#[derive(Clone, PartialEq, Message)]
struct Session {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(int32, tag = "2")]
    state: i32,
}

#[derive(Clone, PartialEq, Message)]
struct Credential {
    #[prost(string, tag = "1")]
    credential: String,
}

#[derive(Clone, PartialEq, Message)]
struct SessionAnswer {
    #[prost(message, optional, tag = "1")]
    session: Option<Session>,
    #[prost(string, tag = "2")]
    data_plane_endpoint: String,
    #[prost(message, optional, tag = "3")]
    credential: Option<Credential>,
}

#[derive(Clone, PartialEq, Message)]
struct CredentialAnswer {
    #[prost(message, optional, tag = "1")]
    credential: Option<Credential>,
    #[prost(string, tag = "2")]
    data_plane_endpoint: String,
}

#[derive(Clone, PartialEq, Message)]
struct SessionId {
    #[prost(string, tag = "1")]
    session_id: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Duration_ {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
}

/// What the fake keeps of a `CreateSessionRequest`, for the tests to check.
#[derive(Clone, PartialEq, Message)]
pub struct Create {
    #[prost(string, tag = "1")]
    pub owner_id: String,
    #[prost(string, tag = "2")]
    pub owner_type: String,
    #[prost(bool, optional, tag = "3")]
    pub allow_inbound: Option<bool>,
    #[prost(bool, optional, tag = "4")]
    pub allow_outbound: Option<bool>,
    #[prost(message, optional, tag = "5")]
    pub max_duration: Option<Duration_>,
    #[prost(int32, optional, tag = "6")]
    pub cpu_cores: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub memory_mb: Option<i32>,
    #[prost(map = "string, string", tag = "8")]
    pub metadata: HashMap<String, String>,
    #[prost(string, optional, tag = "18")]
    pub registry_ref: Option<String>,
    #[prost(int32, optional, tag = "21")]
    pub disk_size_gb: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct WhoAmI {
    #[prost(string, tag = "1")]
    owner_type: String,
    #[prost(string, tag = "2")]
    owner_id: String,
}

#[derive(Clone, PartialEq, Message)]
struct Write {
    #[prost(string, tag = "1")]
    session_id: String,
    #[prost(string, tag = "2")]
    path: String,
    #[prost(bytes, tag = "3")]
    content: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
struct WriteEnvelope {
    #[prost(message, optional, tag = "1")]
    request: Option<Write>,
}

#[derive(Clone, PartialEq, Message)]
struct Written {
    #[prost(string, tag = "1")]
    path: String,
    #[prost(int64, tag = "2")]
    size_bytes: i64,
}

#[derive(Clone, PartialEq, Message)]
struct WrittenEnvelope {
    #[prost(message, optional, tag = "1")]
    response: Option<Written>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Start {
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
pub enum In {
    #[prost(message, tag = "1")]
    Start(Start),
    #[prost(bool, tag = "4")]
    StdinClose(bool),
}

#[derive(Clone, PartialEq, Message)]
struct InFrame {
    #[prost(oneof = "In", tags = "1, 4")]
    payload: Option<In>,
}

#[derive(Clone, PartialEq, Message)]
struct InEnvelope {
    #[prost(message, optional, tag = "1")]
    frame: Option<InFrame>,
}

#[derive(Clone, PartialEq, Message)]
struct Started {
    #[prost(uint64, tag = "1")]
    pid: u64,
}

#[derive(Clone, PartialEq, Message)]
struct Exit {
    #[prost(int32, tag = "1")]
    exit_code: i32,
    #[prost(string, tag = "2")]
    signal: String,
    #[prost(bool, tag = "3")]
    timed_out: bool,
    #[prost(uint64, tag = "4")]
    duration_ms: u64,
    #[prost(string, tag = "5")]
    reason: String,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Out {
    #[prost(message, tag = "1")]
    Started(Started),
    #[prost(bytes, tag = "2")]
    Stdout(Vec<u8>),
    #[prost(bytes, tag = "3")]
    Stderr(Vec<u8>),
    #[prost(message, tag = "4")]
    Exit(Exit),
}

#[derive(Clone, PartialEq, Message)]
struct OutFrame {
    #[prost(oneof = "Out", tags = "1, 2, 3, 4")]
    payload: Option<Out>,
}

#[derive(Clone, PartialEq, Message)]
struct OutEnvelope {
    #[prost(message, optional, tag = "1")]
    frame: Option<OutFrame>,
}

/// One session: its credential and its files.
struct Sandbox {
    credential: String,
    files: HashMap<String, Vec<u8>>,
}

#[derive(Clone)]
struct Fake {
    sessions: Arc<Mutex<HashMap<String, Sandbox>>>,
    creates: Arc<Mutex<Vec<Create>>>,
    starts: Arc<Mutex<Vec<Start>>>,
    data_url: Arc<Mutex<String>>,
    engine: Arc<LocalProvider>,
}

pub struct Tenki {
    pub control: Served,
    pub data: Served,
    fake: Fake,
}

impl Tenki {
    pub fn url(&self) -> String {
        self.control.url()
    }

    /// Sessions started and not terminated.
    pub fn live_sessions(&self) -> usize {
        self.fake.sessions.lock().unwrap().len()
    }

    pub fn creates(&self) -> Vec<Create> {
        self.fake.creates.lock().unwrap().clone()
    }

    pub fn starts(&self) -> Vec<Start> {
        self.fake.starts.lock().unwrap().clone()
    }
}

pub async fn start() -> Tenki {
    let fake = Fake {
        sessions: Arc::default(),
        creates: Arc::default(),
        starts: Arc::default(),
        data_url: Arc::default(),
        engine: engine(512, KEPT_OUTPUT),
    };
    let control = Router::new()
        .route("/tenki.sandbox.v1.SandboxService/{method}", post(control))
        .with_state(fake.clone());
    let data = Router::new()
        .route(
            "/tenki.sandbox.v1.SandboxSessionDataPlaneService/{method}",
            post(data_plane),
        )
        .with_state(fake.clone());
    let control = serve(control).await;
    let data = serve(data).await;
    *fake.data_url.lock().unwrap() = data.url();
    Tenki {
        control,
        data,
        fake,
    }
}

const UNAUTHENTICATED: u8 = 16;
const NOT_FOUND: u8 = 5;
const UNIMPLEMENTED: u8 = 12;

async fn control(
    State(fake): State<Fake>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {API_KEY}")) {
        return answer(Vec::new(), UNAUTHENTICATED, "invalid or expired API key");
    }
    let message = unframed(&body)
        .first()
        .copied()
        .unwrap_or_default()
        .to_vec();
    let session = |id: &str, state: i32| {
        Some(Session {
            id: id.to_owned(),
            state,
        })
    };
    match method.as_str() {
        "WhoAmI" => answer(
            vec![WhoAmI {
                owner_type: "USER".into(),
                owner_id: "fake-owner".into(),
            }
            .encode_to_vec()],
            0,
            "",
        ),
        "CreateSession" => {
            let Ok(create) = Create::decode(message.as_slice()) else {
                return answer(Vec::new(), 3, "bad CreateSessionRequest");
            };
            fake.creates.lock().unwrap().push(create);
            let id = id("sess-");
            fake.sessions.lock().unwrap().insert(
                id.clone(),
                Sandbox {
                    credential: super::id("cert-"),
                    files: HashMap::new(),
                },
            );
            let created = SessionAnswer {
                session: session(&id, 1),
                ..Default::default()
            };
            answer(vec![created.encode_to_vec()], 0, "")
        }
        "WaitSession" | "CreateSessionCredential" => {
            let id = SessionId::decode(message.as_slice())
                .unwrap_or_default()
                .session_id;
            let Some(credential) = fake
                .sessions
                .lock()
                .unwrap()
                .get(&id)
                .map(|s| s.credential.clone())
            else {
                return answer(Vec::new(), NOT_FOUND, "session not found");
            };
            let endpoint = fake.data_url.lock().unwrap().clone();
            let credential = Some(Credential { credential });
            if method == "CreateSessionCredential" {
                let answered = CredentialAnswer {
                    credential,
                    data_plane_endpoint: endpoint,
                };
                return answer(vec![answered.encode_to_vec()], 0, "");
            }
            let creating = SessionAnswer {
                session: session(&id, 1),
                ..Default::default()
            };
            let running = SessionAnswer {
                session: session(&id, 3),
                data_plane_endpoint: endpoint,
                credential,
            };
            answer(
                vec![creating.encode_to_vec(), running.encode_to_vec()],
                0,
                "",
            )
        }
        "TerminateSession" => {
            let id = SessionId::decode(message.as_slice())
                .unwrap_or_default()
                .session_id;
            match fake.sessions.lock().unwrap().remove(&id) {
                Some(_) => answer(
                    vec![SessionAnswer {
                        session: session(&id, 6),
                        ..Default::default()
                    }
                    .encode_to_vec()],
                    0,
                    "",
                ),
                None => answer(Vec::new(), NOT_FOUND, "session not found"),
            }
        }
        _ => answer(Vec::new(), UNIMPLEMENTED, "unknown method"),
    }
}

async fn data_plane(
    State(fake): State<Fake>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if headers.contains_key("authorization") {
        return answer(
            Vec::new(),
            UNAUTHENTICATED,
            "the data plane takes a session credential, not an API key",
        );
    }
    let cert = headers
        .get("x-tenki-session-cert")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let messages = unframed(&body);
    match method.as_str() {
        "WriteFile" => {
            let write = WriteEnvelope::decode(messages.first().copied().unwrap_or_default())
                .ok()
                .and_then(|e| e.request)
                .unwrap_or_default();
            let mut sessions = fake.sessions.lock().unwrap();
            let Some(found) = sessions
                .get_mut(&write.session_id)
                .filter(|s| s.credential == cert)
            else {
                return answer(Vec::new(), UNAUTHENTICATED, "invalid session credential");
            };
            let size = write.content.len() as i64;
            found.files.insert(write.path.clone(), write.content);
            let written = WrittenEnvelope {
                response: Some(Written {
                    path: write.path,
                    size_bytes: size,
                }),
            };
            answer(vec![written.encode_to_vec()], 0, "")
        }
        "Run" => {
            let frames: Vec<In> = messages
                .iter()
                .filter_map(|m| InEnvelope::decode(*m).ok()?.frame?.payload)
                .collect();
            let Some(In::Start(start)) = frames.first().cloned() else {
                return answer(Vec::new(), 3, "the first frame must be start");
            };
            fake.starts.lock().unwrap().push(start.clone());
            let program = {
                let sessions = fake.sessions.lock().unwrap();
                let Some(found) = sessions
                    .get(&start.session_id)
                    .filter(|s| s.credential == cert)
                else {
                    return answer(Vec::new(), UNAUTHENTICATED, "invalid session credential");
                };
                match start
                    .cmd
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .as_slice()
                {
                    ["python3", name] => Some((
                        Language::Python,
                        found.files.get(&format!("{}/{name}", start.cwd)).cloned(),
                    )),
                    ["node", name] => Some((
                        Language::Javascript,
                        found.files.get(&format!("{}/{name}", start.cwd)).cloned(),
                    )),
                    _ => None,
                }
            };
            let out = |payload: Out| {
                OutEnvelope {
                    frame: Some(OutFrame {
                        payload: Some(payload),
                    }),
                }
                .encode_to_vec()
            };
            let mut replies = vec![out(Out::Started(Started { pid: 4242 }))];
            let exit = match program {
                Some((language, Some(contents))) => {
                    let (files, args) = match language {
                        Language::Python => {
                            (vec![file("main.py", contents)], vec!["-B", "main.py"])
                        }
                        Language::Javascript => {
                            (vec![file("main.mjs", contents)], vec!["main.mjs"])
                        }
                    };
                    let limit = Duration::from_millis(start.timeout_ms.max(1).into());
                    match run(&fake.engine, language, files, args, limit).await {
                        Ok(raw) => {
                            for chunk in raw.stdout.as_bytes().chunks(32 * 1024) {
                                replies.push(out(Out::Stdout(chunk.to_vec())));
                            }
                            for chunk in raw.stderr.as_bytes().chunks(32 * 1024) {
                                replies.push(out(Out::Stderr(chunk.to_vec())));
                            }
                            let timed_out = raw.limit == Some(ExecStatus::Timeout);
                            // Killed by a signal: the guest names it ([NC] the exit code that
                            // comes with it; -1 here).
                            let killed = raw.exit_code.is_none() && !timed_out;
                            Exit {
                                exit_code: raw.exit_code.unwrap_or(-1),
                                signal: if killed {
                                    "SIGKILL".into()
                                } else {
                                    String::new()
                                },
                                timed_out,
                                duration_ms: raw.elapsed.as_millis() as u64,
                                reason: match (timed_out, killed) {
                                    (true, _) => "timeout",
                                    (_, true) => "signal",
                                    _ => "exit",
                                }
                                .into(),
                            }
                        }
                        Err(error) => return answer(replies, 13, &error.to_string()),
                    }
                }
                _ => {
                    replies.push(out(Out::Stderr(
                        format!("exec {:?}: not found\n", start.cmd).into_bytes(),
                    )));
                    Exit {
                        exit_code: 127,
                        reason: "exit".into(),
                        ..Default::default()
                    }
                }
            };
            replies.push(out(Out::Exit(exit)));
            answer(replies, 0, "")
        }
        _ => answer(Vec::new(), UNIMPLEMENTED, "unknown method"),
    }
}
