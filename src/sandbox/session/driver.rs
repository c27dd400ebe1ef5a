//! The host side of the session driver protocol (`driver.py`): requests as JSON lines, events
//! back until one `done`; deadlines, interrupts and the output cap are enforced here, so a
//! driver that stops answering ends its session instead of hanging its caller.

use std::{
    fmt::Debug,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::{Duration, Instant},
};

use async_trait::async_trait;
use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, Mutex};

use super::{
    CellEvent, CellOutcome, CommandOutcome, CommandSpec, EventSink, FileEntry, FileError, Session,
};
use crate::{
    model::execution::{ExecStatus, Language},
    sandbox::Error,
};

/// The Python driver, run as `python3 -I -B -c DRIVER`.
pub const PYTHON_DRIVER: &str = include_str!("driver.py");
/// The JavaScript driver, run as `node -e DRIVER`.
pub const JAVASCRIPT_DRIVER: &str = include_str!("driver.js");

/// The driver's arguments after the interpreter, for `language`.
pub fn driver_args(language: Language) -> [&'static str; 4] {
    match language {
        Language::Python => ["-I", "-B", "-c", PYTHON_DRIVER],
        // `--` ends Node's options; the driver reads no arguments.
        Language::Javascript => ["-e", JAVASCRIPT_DRIVER, "--", "session"],
    }
}

/// How long an interrupted cell has to answer before its session is ended.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(3);
/// The deadline of a file operation.
const FILE_DEADLINE: Duration = Duration::from_secs(60);

/// How requests reach a driver and how it is stopped: a jail's pipes and signals, a
/// container's attached exec.
#[async_trait]
pub trait Transport: Debug + Send + Sync {
    /// Writes one request line (a newline is added).
    async fn send(&self, line: String) -> Result<(), Error>;
    /// Interrupts what the driver is doing (SIGINT).
    fn interrupt(&self) -> Result<(), Error>;
    /// Ends the sandbox now.
    fn kill(&self);
    fn alive(&self) -> bool;
    /// Why the sandbox ended, when a limit ended it (the OOM killer: `MemoryLimit`).
    fn ended_by(&self) -> Option<ExecStatus>;
}

/// A session served by a driver over `transport`; `events` yields its JSON lines and ends when
/// the driver is gone.
#[derive(Debug)]
pub struct DriverSession<T: Transport> {
    transport: T,
    events: Mutex<mpsc::Receiver<Value>>,
    language: Language,
    max_output: usize,
    count: AtomicU64,
    ended: AtomicBool,
}

impl<T: Transport> DriverSession<T> {
    /// A session whose driver already said it is ready.
    pub fn new(
        transport: T,
        events: mpsc::Receiver<Value>,
        language: Language,
        max_output: usize,
    ) -> Self {
        DriverSession {
            transport,
            events: Mutex::new(events),
            language,
            max_output,
            count: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        }
    }

    fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.transport.kill();
    }

    /// Sends a request and collects its events up to `done`, at most `deadline` (then the
    /// driver is interrupted, and after [`INTERRUPT_GRACE`] more the session is ended).
    async fn request(
        &self,
        request: Value,
        deadline: Duration,
        sink: Option<&EventSink>,
    ) -> Result<Exchange, Error> {
        if !self.alive() {
            return Err(Error::Backend("the session has ended".into()));
        }
        let mut events = self.events.lock().await;
        let started = Instant::now();
        self.transport.send(request.to_string()).await?;
        let mut exchange = Exchange::default();
        let mut until = tokio::time::Instant::now() + deadline;
        let mut printed = 0usize;
        loop {
            match tokio::time::timeout_at(until, events.recv()).await {
                Ok(Some(event)) => {
                    let kind = event["t"].as_str().unwrap_or_default().to_owned();
                    if kind == "done" {
                        exchange.done = event;
                        break;
                    }
                    let Some(event) = cell_event(&kind, event) else {
                        continue;
                    };
                    if let CellEvent::Stdout { text, .. } | CellEvent::Stderr { text, .. } = &event
                    {
                        printed += text.len();
                        if printed > self.max_output {
                            if exchange.limit.is_none() {
                                exchange.limit = Some(ExecStatus::OutputLimit);
                                let _ = self.transport.interrupt();
                                until = tokio::time::Instant::now() + INTERRUPT_GRACE;
                            }
                            continue;
                        }
                    }
                    if let Some(sink) = sink {
                        let _ = sink.send(event.clone()).await;
                    }
                    exchange.events.push(event);
                }
                Ok(None) => {
                    self.ended.store(true, Ordering::SeqCst);
                    exchange.session_ended = true;
                    if let Some(limit) = self.transport.ended_by() {
                        exchange.limit = Some(limit);
                    }
                    break;
                }
                Err(_) if exchange.limit.is_none() => {
                    exchange.limit = Some(ExecStatus::Timeout);
                    let _ = self.transport.interrupt();
                    until = tokio::time::Instant::now() + INTERRUPT_GRACE;
                }
                Err(_) => {
                    tracing::warn!("a session's driver did not answer an interrupt; ending it");
                    self.end();
                    exchange.session_ended = true;
                    break;
                }
            }
        }
        exchange.elapsed = started.elapsed();
        Ok(exchange)
    }

    async fn file_op(&self, request: Value) -> Result<Result<Value, FileError>, Error> {
        let exchange = self.request(request, FILE_DEADLINE, None).await?;
        if exchange.session_ended {
            return Err(Error::Backend(
                "the session ended during a file operation".into(),
            ));
        }
        let done = exchange.done;
        let message = done["message"].as_str().unwrap_or_default().to_owned();
        Ok(match done["failed"].as_str() {
            None => Ok(done),
            Some("not_found") => Err(FileError::NotFound(message)),
            Some("already_exists") => Err(FileError::AlreadyExists(message)),
            Some(_) => Err(FileError::Invalid(message)),
        })
    }
}

/// What came back for one request.
#[derive(Debug, Default)]
struct Exchange {
    done: Value,
    events: Vec<CellEvent>,
    limit: Option<ExecStatus>,
    session_ended: bool,
    elapsed: Duration,
}

fn cell_event(kind: &str, mut event: Value) -> Option<CellEvent> {
    let text = |event: &Value, key: &str| event[key].as_str().unwrap_or_default().to_owned();
    Some(match kind {
        "stdout" => CellEvent::Stdout {
            text: text(&event, "text"),
            timestamp: event["ts"].as_i64().unwrap_or_default(),
        },
        "stderr" => CellEvent::Stderr {
            text: text(&event, "text"),
            timestamp: event["ts"].as_i64().unwrap_or_default(),
        },
        "result" => CellEvent::Result {
            data: event["data"]
                .as_object_mut()
                .map(std::mem::take)
                .unwrap_or_default(),
            is_main_result: event["main"].as_bool().unwrap_or(false),
        },
        "error" => CellEvent::Error {
            name: text(&event, "name"),
            value: text(&event, "value"),
            traceback: text(&event, "traceback"),
        },
        _ => return None,
    })
}

fn entry(value: &Value) -> FileEntry {
    serde_json::from_value(value.clone()).unwrap_or(FileEntry {
        name: String::new(),
        path: String::new(),
        kind: "file".into(),
        size: 0,
        mode: 0,
        mtime: 0,
    })
}

#[async_trait]
impl<T: Transport> Session for DriverSession<T> {
    fn language(&self) -> Language {
        self.language
    }

    fn alive(&self) -> bool {
        !self.ended.load(Ordering::SeqCst) && self.transport.alive()
    }

    async fn run_cell(
        &self,
        context: &str,
        code: &str,
        deadline: Duration,
        sink: Option<EventSink>,
    ) -> Result<CellOutcome, Error> {
        let request = json!({"op": "cell", "code": code, "context": context});
        let exchange = self.request(request, deadline, sink.as_ref()).await?;
        let count = exchange.done["count"].as_u64();
        let execution_count = match count {
            Some(n) => {
                self.count.store(n, Ordering::SeqCst);
                n
            }
            None => self.count.fetch_add(1, Ordering::SeqCst) + 1,
        };
        let failed = exchange.done["ok"] == json!(false)
            || exchange
                .events
                .iter()
                .any(|e| matches!(e, CellEvent::Error { .. }));
        let status = match exchange.limit {
            Some(limit) => limit,
            None if exchange.session_ended => ExecStatus::ProgramError,
            None if failed => ExecStatus::ProgramError,
            None => ExecStatus::Success,
        };
        Ok(CellOutcome {
            status,
            execution_count,
            events: exchange.events,
            wall_time_ms: exchange.elapsed.as_millis() as u64,
            session_ended: exchange.session_ended,
        })
    }

    async fn reset_context(&self, context: &str) -> Result<(), Error> {
        let request = json!({"op": "reset", "context": context});
        self.file_op(request)
            .await?
            .map_err(|e| Error::Backend(e.to_string()))?;
        Ok(())
    }

    async fn interrupt(&self) -> Result<(), Error> {
        self.transport.interrupt()
    }

    async fn command(
        &self,
        command: &CommandSpec,
        deadline: Duration,
    ) -> Result<CommandOutcome, Error> {
        if command.argv.is_empty() {
            return Err(Error::Backend("a command needs a program to run".into()));
        }
        let secs = deadline.as_secs_f64();
        let request = json!({
            "op": "command",
            "argv": command.argv,
            "cwd": command.cwd,
            "env": Value::Object(command.env.clone()),
            "timeout": secs,
        });
        // The driver stops the command at its deadline; this one is the backstop.
        let exchange = self
            .request(request, deadline + INTERRUPT_GRACE, None)
            .await?;
        if exchange.session_ended {
            return Err(Error::Backend(
                "the session ended during the command".into(),
            ));
        }
        let done = exchange.done;
        let bytes = |key: &str| {
            BASE64
                .decode(done[key].as_str().unwrap_or_default())
                .unwrap_or_default()
        };
        if let Some(message) = done["failed"].as_str().map(|_| done["message"].clone()) {
            return Ok(CommandOutcome {
                exit_code: 127,
                stdout: Vec::new(),
                stderr: message.as_str().unwrap_or_default().as_bytes().to_vec(),
                timed_out: false,
            });
        }
        Ok(CommandOutcome {
            exit_code: done["exit_code"].as_i64().unwrap_or(-1) as i32,
            stdout: bytes("stdout"),
            stderr: bytes("stderr"),
            timed_out: done["timed_out"].as_bool().unwrap_or(false)
                || exchange.limit == Some(ExecStatus::Timeout),
        })
    }

    async fn write_file(
        &self,
        path: &str,
        contents: &[u8],
    ) -> Result<Result<FileEntry, FileError>, Error> {
        let request = json!({"op": "write", "path": path, "data": BASE64.encode(contents)});
        Ok(self
            .file_op(request)
            .await?
            .map(|done| entry(&done["entry"])))
    }

    async fn read_file(&self, path: &str) -> Result<Result<Vec<u8>, FileError>, Error> {
        let done = self.file_op(json!({"op": "read", "path": path})).await?;
        Ok(done.and_then(|done| {
            BASE64
                .decode(done["data"].as_str().unwrap_or_default())
                .map_err(|e| FileError::Invalid(e.to_string()))
        }))
    }

    async fn list(
        &self,
        path: &str,
        depth: u32,
    ) -> Result<Result<Vec<FileEntry>, FileError>, Error> {
        let done = self
            .file_op(json!({"op": "list", "path": path, "depth": depth.max(1)}))
            .await?;
        Ok(done.map(|done| {
            done["entries"]
                .as_array()
                .map(|entries| entries.iter().map(entry).collect())
                .unwrap_or_default()
        }))
    }

    async fn stat(&self, path: &str) -> Result<Result<FileEntry, FileError>, Error> {
        let done = self.file_op(json!({"op": "stat", "path": path})).await?;
        Ok(done.map(|done| entry(&done["entry"])))
    }

    async fn make_dir(&self, path: &str) -> Result<Result<FileEntry, FileError>, Error> {
        let done = self.file_op(json!({"op": "mkdir", "path": path})).await?;
        Ok(done.map(|done| entry(&done["entry"])))
    }

    async fn remove(&self, path: &str) -> Result<Result<(), FileError>, Error> {
        let done = self.file_op(json!({"op": "remove", "path": path})).await?;
        Ok(done.map(|_| ()))
    }

    async fn rename(&self, from: &str, to: &str) -> Result<Result<FileEntry, FileError>, Error> {
        let request = json!({"op": "move", "path": from, "destination": to});
        Ok(self
            .file_op(request)
            .await?
            .map(|done| entry(&done["entry"])))
    }

    async fn close(&self) {
        self.end();
    }
}

/// Waits for the driver's first event, which must say it is ready (with its pid); anything
/// else, no event within `within`, or the driver gone first is the session's failure to open.
pub async fn ready(events: &mut mpsc::Receiver<Value>, within: Duration) -> Result<Value, Error> {
    match tokio::time::timeout(within, events.recv()).await {
        Ok(Some(event)) if event["t"] == "ready" => Ok(event),
        Ok(Some(event)) => Err(Error::Backend(format!(
            "the session's interpreter did not start: {}",
            event["text"].as_str().unwrap_or_default().trim()
        ))),
        Ok(None) => Err(Error::Backend(
            "the session's interpreter exited at start".into(),
        )),
        Err(_) => Err(Error::Backend(
            "the session's interpreter did not start in time".into(),
        )),
    }
}

/// A `done` or event line as the driver writes it, for transports that read raw lines.
pub fn parse_line(line: &str) -> Option<Value> {
    serde_json::from_str::<Value>(line)
        .ok()
        .filter(|v| v.is_object())
        .or_else(|| {
            // A line the driver did not write (it cannot happen: only the driver writes to
            // this descriptor) is kept as stderr text rather than lost.
            let mut event = Map::new();
            event.insert("t".into(), json!("stderr"));
            event.insert("text".into(), json!(format!("{line}\n")));
            Some(Value::Object(event))
        })
}
