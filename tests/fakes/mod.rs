//! In-process fakes of the remote services the console cannot reach from here, each following
//! its documented wire contract field by field (see each file's header for the source). They
//! run their users' programs for real, in the local provider's sandbox, so a provider talking
//! to a fake passes the same conformance suite as the local provider. Used by the integration
//! tests and, as one process (`cargo run --example fake_services`), by the browser tests.
//! Never part of the product: nothing here can be selected in the UI.

#![allow(dead_code)] // Each user of this module uses a different part of it.

pub mod agentrun;
pub mod e2b;
pub mod executor_manager;
pub mod grpc;
pub mod kubernetes;
pub mod tenki;
pub mod ucloud;

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::{to_bytes, Body},
    extract::{Request, State},
    http::HeaderMap,
    middleware::{self, Next},
    response::Response,
    Router,
};
use sandbox_console::{
    model::execution::Language,
    sandbox::environment::Resolved,
    sandbox::{
        providers::local::{LocalConfig, LocalProvider, RawRun},
        runner::WorkspaceFile,
        Error,
    },
};
use tokio::net::TcpListener;

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Every request a fake received, in order.
#[derive(Clone, Default)]
pub struct Journal(Arc<Mutex<Vec<Recorded>>>);

impl Journal {
    pub fn all(&self) -> Vec<Recorded> {
        self.0.lock().unwrap().clone()
    }

    pub fn to(&self, method: &str, path_prefix: &str) -> Vec<Recorded> {
        self.all()
            .into_iter()
            .filter(|r| r.method == method && r.path.starts_with(path_prefix))
            .collect()
    }
}

async fn record(State(journal): State<Journal>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, 64 << 20).await.unwrap_or_default();
    journal.0.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers.clone(),
        body: bytes.to_vec(),
    });
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// A fake serving on loopback.
pub struct Served {
    pub address: SocketAddr,
    pub journal: Journal,
}

impl Served {
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// Serves `router` on `listener`, recording every request.
pub async fn serve_on(listener: TcpListener, router: Router) -> Served {
    let journal = Journal::default();
    let address = listener.local_addr().unwrap();
    let app = router.layer(middleware::from_fn_with_state(journal.clone(), record));
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    Served { address, journal }
}

pub async fn serve(router: Router) -> Served {
    serve_on(TcpListener::bind("127.0.0.1:0").await.unwrap(), router).await
}

/// What the E2B and AgentRun fakes keep of a program's output (neither service documents a
/// cap): more than any answer limit of the providers under test, so an answer too big for them
/// still comes, and little enough that a fake does not spend a core on 100 MB of it. RAGFlow's
/// executor has no cap, and its fake keeps 256 MiB.
pub const KEPT_OUTPUT: u64 = 16 << 20;

/// The machine behind every fake: programs run in the local provider's sandbox (no network,
/// read-only root, limits), as the remote services run them in theirs.
pub fn engine(memory_mb: u32, max_output_bytes: u64) -> Arc<LocalProvider> {
    Arc::new(LocalProvider::new(
        LocalConfig {
            memory_mb,
            max_output_bytes,
            timeout_secs: 600,
            max_concurrent_runs: 4,
            queue_wait_secs: 60,
            ..LocalConfig::default()
        },
        Resolved::Bare,
    ))
}

/// Runs files in the engine, as a remote service's runtime would.
pub async fn run(
    engine: &LocalProvider,
    language: Language,
    files: Vec<WorkspaceFile>,
    args: Vec<&'static str>,
    timeout: Duration,
) -> Result<RawRun, Error> {
    engine.run_program(language, files, args, timeout).await
}

/// A kernel's cell as a program for the engine, with the interpreter's arguments: Python as a
/// script (its folder importable), JavaScript as the body of an async function, so a cell may
/// `await` at the top level as in a kernel (the way Node's REPL does it).
pub fn kernel_cell(language: Language, code: String) -> (Vec<WorkspaceFile>, Vec<&'static str>) {
    match language {
        Language::Python => (vec![file("cell.py", code)], vec!["-B", "cell.py"]),
        Language::Javascript => (
            vec![file(
                "cell.js",
                format!("(async () => {{\n{code}\n}})().catch((e) => {{ console.error(e && e.stack ? e.stack : String(e)); process.exitCode = 1; }});\n"),
            )],
            vec!["cell.js"],
        ),
    }
}

pub fn file(name: &'static str, contents: impl Into<Vec<u8>>) -> WorkspaceFile {
    WorkspaceFile {
        name,
        contents: contents.into(),
    }
}

/// A fresh id such as services hand out.
pub fn id(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}
