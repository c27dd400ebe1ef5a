//! A session's cells and commands as history rows (and metrics), tied to the session.

use serde_json::{Map, Value};

use super::Held;
use crate::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, ReturnValue},
    sandbox::{
        session::{CellEvent, CellOutcome, CommandOutcome, CommandSpec},
        Error as SandboxError,
    },
    server::{db::execution::Caller, sandbox::SandboxService},
};

fn request(held: &Held, code: String) -> ExecRequest {
    ExecRequest {
        language: held.language,
        code,
        arguments: Map::new(),
        timeout_secs: None,
    }
}

fn result(
    status: ExecStatus,
    stdout: String,
    stderr: String,
    exit_code: Option<i32>,
    wall_time_ms: u64,
    value: Option<Value>,
) -> ExecutionResult {
    ExecutionResult {
        status,
        stdout,
        stderr,
        exit_code,
        wall_time_ms,
        result: value.map_or_else(ReturnValue::absent, ReturnValue::of),
        artifacts: Vec::new(),
        queue_wait_ms: None,
        metadata: Map::new(),
        egress: None,
    }
}

/// Records one cell.
pub(super) async fn cell(
    sandbox: &SandboxService,
    held: &Held,
    caller: &Caller,
    code: &str,
    outcome: &Result<CellOutcome, SandboxError>,
) {
    let outcome = outcome.as_ref().map_err(clone_error).map(|cell| {
        let mut stderr = cell.text(true);
        for event in &cell.events {
            if let CellEvent::Error { traceback, .. } = event {
                stderr.push_str(traceback);
            }
        }
        let main = cell.main_text().map(|text| Value::String(text.to_owned()));
        let exit_code = match cell.status {
            ExecStatus::Success => Some(0),
            ExecStatus::ProgramError if !cell.session_ended => Some(1),
            _ => None,
        };
        result(
            cell.status,
            cell.text(false),
            stderr,
            exit_code,
            cell.wall_time_ms,
            main,
        )
    });
    sandbox
        .record_run(
            caller,
            &held.provider,
            &request(held, code.to_owned()),
            &outcome,
            Some(&held.id),
        )
        .await;
}

/// Records one command (its argv as the code).
pub(super) async fn command(
    sandbox: &SandboxService,
    held: &Held,
    caller: &Caller,
    command: &CommandSpec,
    outcome: &Result<CommandOutcome, SandboxError>,
) {
    let code = shell_words(&command.argv);
    let outcome = outcome.as_ref().map_err(clone_error).map(|done| {
        let status = match (done.timed_out, done.exit_code) {
            (true, _) => ExecStatus::Timeout,
            (false, 0) => ExecStatus::Success,
            _ => ExecStatus::ProgramError,
        };
        result(
            status,
            String::from_utf8_lossy(&done.stdout).into_owned(),
            String::from_utf8_lossy(&done.stderr).into_owned(),
            Some(done.exit_code),
            0,
            None,
        )
    });
    sandbox
        .record_run(
            caller,
            &held.provider,
            &request(held, code),
            &outcome,
            Some(&held.id),
        )
        .await;
}

/// The argv as one line a shell would read back the same (for the history).
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The history keeps the text of a provider failure; the error itself stays with the caller.
fn clone_error(error: &SandboxError) -> SandboxError {
    SandboxError::Backend(error.to_string())
}
