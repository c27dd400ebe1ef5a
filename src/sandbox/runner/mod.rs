//! The main() protocol, shared by every provider that runs code itself.
//!
//! A run is a workspace with the user's code (`main.py` / `main.js`), a small runner script
//! and an input file holding the arguments as JSON: arguments never travel on argv or inside
//! source code, so `true/false/null`, nested objects, unicode and megabyte inputs all work.
//! The runner calls `main(**args)` (Python) or `main(args)` (JavaScript, sync or async), and
//! prints the return value after the program's own output on one line:
//! `"\n" + marker + base64(JSON {"present", "value"} or {"present": false, "error"})`. The
//! marker is random per run, so nothing a program prints by accident can pass for a result.
//! Providers then read files written to `./artifacts/` under [`ArtifactLimits`].

use std::{path::Path, time::Duration};

use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use rand::Rng;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::model::execution::{Artifact, ExecRequest, ExecStatus, Language, ReturnValue};

pub mod ahead;
pub mod remote;
pub mod script;

const PYTHON_RUNNER: &str = include_str!("runner.py");
const JAVASCRIPT_RUNNER: &str = include_str!("runner.js");
/// Appended to JavaScript code: exposes a top-level `main` to the runner without the user
/// having to export it. On its own line after the code, so line numbers in traces stay right.
const JAVASCRIPT_EXPOSE_MAIN: &str = "\n;try { if (typeof main === 'function' && typeof module.exports === 'object' && module.exports !== null) module.exports.__sandboxMain = main; } catch (_) {}\n";

/// Folder, relative to the workspace, whose files come back as artifacts.
pub const ARTIFACT_DIR: &str = "artifacts";

/// A file to place in the run's (fresh, private) workspace before starting it.
#[derive(Clone, Debug)]
pub struct WorkspaceFile {
    pub name: &'static str,
    pub contents: Vec<u8>,
}

/// Everything a provider needs to start one run: files to write into the workspace, the
/// arguments to give the interpreter (run with the workspace as its working directory), and
/// the marker to look for in stdout afterwards.
#[derive(Clone, Debug)]
pub struct Job {
    pub language: Language,
    pub files: Vec<WorkspaceFile>,
    pub interpreter_args: Vec<&'static str>,
    pub marker: String,
}

pub fn prepare(request: &ExecRequest) -> Job {
    let marker = format!(
        "__SANDBOX_RESULT_{:016x}__:",
        rand::thread_rng().gen::<u64>()
    );
    let input = json!({ "marker": marker, "arguments": request.arguments }).to_string();
    let (files, interpreter_args) = match request.language {
        Language::Python => (
            vec![
                file("main.py", request.code.clone().into_bytes()),
                file("_runner.py", PYTHON_RUNNER.into()),
            ],
            // -I: ignore PYTHON* variables and the user site; -B: write no .pyc files; -u:
            // unbuffered, so a program cut off at its deadline keeps what it printed.
            vec!["-I", "-B", "-u", "_runner.py", "_input.json"],
        ),
        Language::Javascript => (
            vec![
                file(
                    "main.js",
                    format!("{}{JAVASCRIPT_EXPOSE_MAIN}", request.code).into_bytes(),
                ),
                file("_runner.js", JAVASCRIPT_RUNNER.into()),
            ],
            vec!["_runner.js", "_input.json"],
        ),
    };
    let mut files = files;
    files.push(file("_input.json", input.into_bytes()));
    Job {
        language: request.language,
        files,
        interpreter_args,
        marker,
    }
}

fn file(name: &'static str, contents: Vec<u8>) -> WorkspaceFile {
    WorkspaceFile { name, contents }
}

#[derive(Deserialize)]
struct Envelope {
    present: bool,
    #[serde(default)]
    value: Value,
    #[serde(default)]
    error: Option<String>,
}

/// A finished run as the protocol reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub status: ExecStatus,
    /// What the program printed, byte for byte, without the result line.
    pub stdout: String,
    pub result: ReturnValue,
    /// Why a run that exited 0 still failed (e.g. an unserializable return value).
    pub error: Option<String>,
}

/// Splits the result line off stdout and decides success or program error from the exit code
/// and the envelope. Deadline, memory and output limits are the provider's to report: it
/// knows why it killed a process.
pub fn interpret(job: &Job, exit_code: i32, stdout: &str) -> Outcome {
    let Some((printed, line)) = split_result_line(stdout, &job.marker) else {
        let status = if exit_code == 0 {
            ExecStatus::Success
        } else {
            ExecStatus::ProgramError
        };
        return Outcome {
            status,
            stdout: stdout.to_owned(),
            result: ReturnValue::absent(),
            error: None,
        };
    };
    let envelope = BASE64
        .decode(line.trim())
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Envelope>(&bytes).ok());
    match envelope {
        Some(Envelope {
            present: true,
            value,
            ..
        }) if exit_code == 0 => Outcome {
            status: ExecStatus::Success,
            stdout: printed,
            result: ReturnValue::of(value),
            error: None,
        },
        Some(Envelope { error, .. }) => Outcome {
            status: ExecStatus::ProgramError,
            stdout: printed,
            result: ReturnValue::absent(),
            error: error.or_else(|| Some(format!("the program exited with code {exit_code}"))),
        },
        None => Outcome {
            status: ExecStatus::ProgramError,
            stdout: printed,
            result: ReturnValue::absent(),
            error: Some("the runner's result line was damaged".into()),
        },
    }
}

/// Splits the last result line (`"\n" + marker + base64`) off stdout: what the program
/// printed, and the base64 text of the line.
pub fn split_result_line<'a>(stdout: &'a str, marker: &str) -> Option<(String, &'a str)> {
    let needle = format!("\n{marker}");
    let at = stdout.rfind(&needle)?;
    let rest = &stdout[at + needle.len()..];
    let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
    Some((format!("{}{after}", &stdout[..at]), line))
}

/// Appends what of `data` fits under `cap` bytes to `into`; says whether some did not. Every
/// provider that reads a program's output as it streams keeps it this way.
pub fn keep_capped(into: &mut Vec<u8>, data: &[u8], cap: usize) -> bool {
    let room = cap.saturating_sub(into.len());
    into.extend_from_slice(&data[..data.len().min(room)]);
    data.len() > room
}

/// Cuts `text` to at most `max` bytes on a character boundary; says whether it was cut.
pub fn cap_text(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// A finished run's verdict, for every provider: the limit that ended it (the provider knows)
/// wins over the protocol's status, the program's own error is appended to `stderr` once, and
/// the return value is kept only for a success. Returns the status, stdout and return value.
pub fn settle(
    outcome: Outcome,
    limit: Option<ExecStatus>,
    stderr: &mut String,
) -> (ExecStatus, String, ReturnValue) {
    if let Some(error) = &outcome.error {
        if !stderr.contains(error.as_str()) {
            stderr.push_str(error);
            stderr.push('\n');
        }
    }
    let status = limit.unwrap_or(outcome.status);
    let result = match status {
        ExecStatus::Success => outcome.result,
        _ => ReturnValue::absent(),
    };
    (status, outcome.stdout, result)
}

/// How many artifact files come back, and how large each may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArtifactLimits {
    pub max_count: usize,
    pub max_bytes: u64,
}

impl Default for ArtifactLimits {
    fn default() -> Self {
        ArtifactLimits {
            max_count: 10,
            max_bytes: 10 * 1024 * 1024,
        }
    }
}

/// The kinds of file returned as artifacts, by extension.
const ARTIFACT_TYPES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("svg", "image/svg+xml"),
    ("pdf", "application/pdf"),
    ("csv", "text/csv"),
    ("json", "application/json"),
    ("html", "text/html"),
    ("txt", "text/plain"),
];

/// The extensions of [`ARTIFACT_TYPES`], for sandboxes that pre-filter inside.
pub const ARTIFACT_EXTENSIONS: [&str; 9] = [
    "png", "jpg", "jpeg", "svg", "pdf", "csv", "json", "html", "txt",
];

/// The MIME type for an artifact name, or why the file is not returned: plain names only
/// (no folders, no hidden files, no `..`), and only the listed kinds of file.
pub fn artifact_mime(name: &str) -> Result<&'static str, String> {
    if name.is_empty()
        || name.len() > 128
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0'])
        || name.contains("..")
    {
        return Err(format!("{name:?}: not a plain file name"));
    }
    let extension = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    ARTIFACT_TYPES
        .iter()
        .find(|(ext, _)| *ext == extension)
        .map(|(_, mime)| *mime)
        .ok_or_else(|| {
            format!(
                "{name:?}: only {} files are returned",
                ARTIFACT_EXTENSIONS.join(", ")
            )
        })
}

/// One entry of a run's artifacts folder, as listed (by the host or from inside a container).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactFile {
    pub name: String,
    /// A regular file (not a symlink, folder or device).
    pub regular: bool,
    pub size: u64,
}

/// The artifact rules, in name order: plain names of the listed kinds, regular files of 1 to
/// `max_bytes`, at most `max_count`. `read` fetches a file that passed; every other entry is
/// skipped with a note saying why.
pub fn select_artifacts(
    mut files: Vec<ArtifactFile>,
    limits: ArtifactLimits,
    mut read: impl FnMut(&str) -> Result<Vec<u8>, String>,
) -> (Vec<Artifact>, Vec<String>) {
    let mut artifacts = Vec::new();
    let mut skipped = Vec::new();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    for file in files {
        let name = file.name;
        let mime = match artifact_mime(&name) {
            Ok(mime) if file.regular => mime,
            Ok(_) => {
                skipped.push(format!("{name:?}: not a regular file"));
                continue;
            }
            Err(reason) => {
                skipped.push(reason);
                continue;
            }
        };
        if file.size == 0 || file.size > limits.max_bytes {
            skipped.push(format!(
                "{name:?}: {} bytes (allowed: 1 to {})",
                file.size, limits.max_bytes
            ));
            continue;
        }
        if artifacts.len() == limits.max_count {
            skipped.push(format!(
                "{name:?}: more than {} artifacts",
                limits.max_count
            ));
            continue;
        }
        match read(&name) {
            Ok(bytes) if bytes.len() as u64 <= limits.max_bytes => artifacts.push(Artifact {
                size: bytes.len() as u64,
                content_b64: BASE64.encode(&bytes),
                mime_type: mime.to_owned(),
                name,
            }),
            Ok(bytes) => skipped.push(format!(
                "{name:?}: grew to {} bytes while being read",
                bytes.len()
            )),
            Err(error) => skipped.push(format!("{name:?}: {error}")),
        }
    }
    (artifacts, skipped)
}

/// The names [`select_artifacts`] would read from `files`, for providers that fetch them
/// asynchronously before selecting (the same rules, one place).
pub fn wanted_artifacts(files: &[ArtifactFile], limits: ArtifactLimits) -> Vec<String> {
    let mut wanted = Vec::new();
    select_artifacts(files.to_vec(), limits, |name| {
        wanted.push(name.to_owned());
        Ok(vec![0])
    });
    wanted
}

/// Reads the artifacts a run left in `workspace/artifacts` (symlinks and non-regular files
/// are skipped).
pub fn collect_artifacts(workspace: &Path, limits: ArtifactLimits) -> (Vec<Artifact>, Vec<String>) {
    let folder = workspace.join(ARTIFACT_DIR);
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return (Vec::new(), Vec::new());
    };
    let files = entries
        .flatten()
        .filter_map(|entry| {
            let meta = entry.path().symlink_metadata().ok()?;
            Some(ArtifactFile {
                name: entry.file_name().to_string_lossy().into_owned(),
                regular: meta.file_type().is_file(),
                size: meta.len(),
            })
        })
        .collect();
    select_artifacts(files, limits, |name| {
        std::fs::read(folder.join(name)).map_err(|e| e.to_string())
    })
}

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
const SIGXFSZ: i32 = 25;

/// Which limit, if any, ended a run, from how its process ended: the signal that killed it (if
/// any), its exit code, how long it ran against its deadline, whether its output went over the
/// cap, and what it printed on stderr. Shared by every provider that runs processes itself.
pub fn classify(
    signal: Option<i32>,
    exit_code: Option<i32>,
    elapsed: Duration,
    timeout: Duration,
    output_over: bool,
    stderr: &str,
) -> Option<ExecStatus> {
    if output_over {
        return Some(ExecStatus::OutputLimit);
    }
    // A fork bomb usually exhausts memory too; the process limit is what it ran into first.
    let processes = [
        "BlockingIOError: [Errno 11]",
        "Resource temporarily unavailable",
        "spawn EAGAIN",
    ];
    if exit_code != Some(0) && processes.iter().any(|m| stderr.contains(m)) {
        return Some(ExecStatus::ProcessLimit);
    }
    match signal {
        Some(SIGXCPU) => return Some(ExecStatus::Timeout),
        Some(SIGKILL) if elapsed + Duration::from_millis(100) >= timeout => {
            return Some(ExecStatus::Timeout)
        }
        // A SIGKILL before the deadline comes from the cgroup's out-of-memory killer.
        Some(SIGKILL) => return Some(ExecStatus::MemoryLimit),
        Some(SIGXFSZ) => return Some(ExecStatus::OutputLimit),
        _ => {}
    }
    if exit_code == Some(0) {
        return None;
    }
    let memory = [
        "MemoryError",
        "JavaScript heap out of memory",
        "Fatal process OOM",
        "Cannot allocate memory",
        "allocation failed",
    ];
    memory
        .iter()
        .any(|m| stderr.contains(m))
        .then_some(ExecStatus::MemoryLimit)
}

#[cfg(test)]
mod tests;
