//! Sessions: a sandbox held for a caller between calls, with one long-lived interpreter in it
//! (globals and imports persist from cell to cell), a workspace of files, and commands.
//!
//! A provider that can hold a sandbox opens sessions ([`crate::sandbox::SandboxProvider::open_session`]);
//! the others say they run stateless only. What a session is made of is the provider's: a
//! jail with a driver process (`local`), and next a held container (`docker`) or an
//! agent-sandbox claim (`kubernetes`). The driver protocol ([`driver`]) is shared: JSON lines
//! in, events out, one `done` per request.

pub mod driver;

use std::{fmt::Debug, time::Duration};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::{
    model::execution::{ExecStatus, Language},
    sandbox::Error,
};

/// The most a cell may print, its stdout and stderr together; past it the cell is
/// interrupted and reported as `output_limit`.
pub const CELL_OUTPUT_CAP: usize = 16 * 1024 * 1024;

/// What a session is opened with.
#[derive(Clone, Debug)]
pub struct SessionSpec {
    pub language: Language,
    /// The longest the session may live, whatever it does.
    pub lifetime: Duration,
}

/// One thing a cell produced, as it happens.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CellEvent {
    Stdout {
        text: String,
        /// Nanoseconds since the epoch, when the driver read it.
        timestamp: i64,
    },
    Stderr {
        text: String,
        timestamp: i64,
    },
    /// A rich result: a MIME bundle (`text`, `png` as base64, `html`, ...). `is_main_result`
    /// for the value of the cell's last expression; false for a figure it drew.
    Result {
        #[serde(flatten)]
        data: Map<String, Value>,
        is_main_result: bool,
    },
    /// The exception that ended the cell.
    Error {
        name: String,
        value: String,
        traceback: String,
    },
}

/// A finished cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellOutcome {
    /// `success`, `program_error` (an exception), `timeout` (interrupted at its deadline),
    /// `memory_limit` or `output_limit`; the session may be dead after the last two.
    pub status: ExecStatus,
    /// The session's count of cells run, this one included.
    pub execution_count: u64,
    pub events: Vec<CellEvent>,
    pub wall_time_ms: u64,
    /// The session did not survive the cell (it was killed, or its interpreter died).
    pub session_ended: bool,
}

impl CellOutcome {
    /// The text form of the cell's main result (its last expression's value), if it has one.
    pub fn main_text(&self) -> Option<&str> {
        self.events.iter().find_map(|event| match event {
            CellEvent::Result {
                data,
                is_main_result: true,
            } => data.get("text").and_then(Value::as_str),
            _ => None,
        })
    }

    /// Everything the cell printed on one stream.
    pub fn text(&self, stderr: bool) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                CellEvent::Stdout { text, .. } if !stderr => Some(text.as_str()),
                CellEvent::Stderr { text, .. } if stderr => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A command to run in the session's sandbox.
#[derive(Clone, Debug, Deserialize)]
pub struct CommandSpec {
    /// The program and its arguments (no shell unless asked for: `["/bin/sh", "-c", line]`).
    pub argv: Vec<String>,
    /// Relative to the session's home when not absolute.
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: Map<String, Value>,
    /// Seconds; the cell deadline of the provider when absent.
    #[serde(default)]
    pub timeout_secs: Option<u32>,
}

/// A finished command.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommandOutcome {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
}

/// One file or folder of a session's workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub name: String,
    /// Absolute, inside the sandbox.
    pub path: String,
    /// `file`, `dir` or `symlink`.
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    pub mode: u32,
    /// Seconds since the epoch.
    pub mtime: i64,
}

/// A file operation refused inside the sandbox.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    Invalid(String),
}

/// Where a cell's events go while it runs (a streaming answer), besides its outcome.
pub type EventSink = mpsc::Sender<CellEvent>;

/// A held sandbox. Requests on one session run one at a time, in order.
#[async_trait]
pub trait Session: Debug + Send + Sync {
    fn language(&self) -> Language;

    /// Whether the sandbox is still there (its interpreter alive, its lifetime not over).
    fn alive(&self) -> bool;

    /// Runs `code` in the session's interpreter, in code context `context` (each has its own
    /// globals; `default` unless the caller made others), at most `deadline`: past it the cell
    /// is interrupted, and if the interpreter does not answer soon after, the session is ended.
    async fn run_cell(
        &self,
        context: &str,
        code: &str,
        deadline: Duration,
        sink: Option<EventSink>,
    ) -> Result<CellOutcome, Error>;

    /// Forgets a code context's globals (its next cell starts afresh).
    async fn reset_context(&self, context: &str) -> Result<(), Error>;

    /// Interrupts the running cell, if any (as Ctrl-C would).
    async fn interrupt(&self) -> Result<(), Error>;

    async fn command(
        &self,
        command: &CommandSpec,
        deadline: Duration,
    ) -> Result<CommandOutcome, Error>;

    async fn write_file(
        &self,
        path: &str,
        contents: &[u8],
    ) -> Result<Result<FileEntry, FileError>, Error>;

    async fn read_file(&self, path: &str) -> Result<Result<Vec<u8>, FileError>, Error>;

    async fn list(
        &self,
        path: &str,
        depth: u32,
    ) -> Result<Result<Vec<FileEntry>, FileError>, Error>;

    async fn stat(&self, path: &str) -> Result<Result<FileEntry, FileError>, Error>;

    async fn make_dir(&self, path: &str) -> Result<Result<FileEntry, FileError>, Error>;

    async fn remove(&self, path: &str) -> Result<Result<(), FileError>, Error>;

    async fn rename(&self, from: &str, to: &str) -> Result<Result<FileEntry, FileError>, Error>;

    /// Ends the session: its sandbox and everything in it are gone when this returns.
    async fn close(&self);
}
