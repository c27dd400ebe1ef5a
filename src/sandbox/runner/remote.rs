//! The main() protocol for services that run a snippet in a long-lived interpreter (AgentRun,
//! E2B) and do not call `main()` themselves: the user's code travels inside a small wrapper
//! program, with the arguments as base64 JSON (never pasted into source), so such a service
//! runs the same code the same way as the local provider (plain scripts, async `main`,
//! `true/false/null` arguments, a JSON return value). The wrapper prints the result envelope
//! after a random marker, with the artifacts; [`finish_snippet`] reads it back.
//!
//! (RAGFlow's executor manager calls `main()` itself and vets the code it is sent; the
//! `self_managed` provider sends the user's code as it is.)

use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use rand::Rng;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{
    cap_text, select_artifacts, settle, split_result_line, ArtifactFile, ArtifactLimits, Outcome,
    ARTIFACT_EXTENSIONS,
};
use crate::model::execution::{
    Artifact, ExecRequest, ExecStatus, ExecutionResult, Language, ReturnValue,
};

const SNIPPET_PYTHON: &str = include_str!("snippet.py");
const SNIPPET_JAVASCRIPT: &str = include_str!("snippet.js");
const JOB_SLOT: &str = "__SANDBOX_JOB__";

/// A snippet to send, and the marker its result line starts with.
#[derive(Clone, Debug)]
pub struct Snippet {
    pub code: String,
    pub marker: String,
}

/// The wrapper program for a snippet service. `memory_bytes` (Python only) caps what the run
/// may allocate on top of what the interpreter already holds.
pub fn snippet(
    request: &ExecRequest,
    memory_bytes: Option<u64>,
    limits: ArtifactLimits,
) -> Snippet {
    let marker = format!(
        "__SANDBOX_RESULT_{:016x}__:",
        rand::thread_rng().gen::<u64>()
    );
    let job = json!({
        "marker": marker,
        "code": request.code,
        "arguments": request.arguments,
        "memory_bytes": memory_bytes,
        "artifacts": {
            "max_count": limits.max_count,
            "max_bytes": limits.max_bytes,
            "extensions": ARTIFACT_EXTENSIONS,
        },
    });
    let template = match request.language {
        Language::Python => SNIPPET_PYTHON,
        Language::Javascript => SNIPPET_JAVASCRIPT,
    };
    Snippet {
        code: template.replacen(JOB_SLOT, &BASE64.encode(job.to_string()), 1),
        marker,
    }
}

#[derive(Deserialize)]
struct SnippetEnvelope {
    present: bool,
    #[serde(default)]
    value: Value,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    artifacts: Vec<SentArtifact>,
}

#[derive(Deserialize)]
struct SentArtifact {
    name: String,
    #[serde(default)]
    regular: bool,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    content_b64: Option<String>,
}

/// A snippet's run read back: the protocol's outcome, the name of the exception that ended
/// it (if any), and the artifacts under the usual rules.
#[derive(Clone, Debug, PartialEq)]
struct SnippetRun {
    outcome: Outcome,
    exception: Option<String>,
    artifacts: Vec<Artifact>,
    skipped_artifacts: Vec<String>,
}

/// Reads what a snippet printed. `failed` says the service itself reported an error for the
/// run (an exception outside the wrapper, a dead interpreter).
fn read_snippet(
    snippet: &Snippet,
    stdout: &str,
    failed: bool,
    limits: ArtifactLimits,
) -> SnippetRun {
    let outcome = |status, stdout: String, result, error: Option<&str>| Outcome {
        status,
        stdout,
        result,
        error: error.map(str::to_owned),
    };
    let Some((printed, line)) = split_result_line(stdout, &snippet.marker) else {
        // The wrapper never finished: the interpreter died or the service cut the run short.
        let why = (!failed).then_some("the sandbox ended the run before it reported a result");
        return SnippetRun {
            outcome: outcome(
                ExecStatus::ProgramError,
                stdout.to_owned(),
                ReturnValue::absent(),
                why,
            ),
            exception: None,
            artifacts: Vec::new(),
            skipped_artifacts: Vec::new(),
        };
    };
    let Some(envelope) = BASE64
        .decode(line.trim())
        .ok()
        .and_then(|bytes| serde_json::from_slice::<SnippetEnvelope>(&bytes).ok())
    else {
        return SnippetRun {
            outcome: outcome(
                ExecStatus::ProgramError,
                printed,
                ReturnValue::absent(),
                Some("the wrapper's result line was damaged"),
            ),
            exception: None,
            artifacts: Vec::new(),
            skipped_artifacts: Vec::new(),
        };
    };
    let status = if failed || envelope.error.is_some() {
        ExecStatus::ProgramError
    } else {
        ExecStatus::Success
    };
    let result = match (&status, envelope.present) {
        (ExecStatus::Success, true) => ReturnValue::of(envelope.value),
        _ => ReturnValue::absent(),
    };
    let files = envelope
        .artifacts
        .iter()
        .map(|a| ArtifactFile {
            name: a.name.clone(),
            regular: a.regular,
            size: a.size,
        })
        .collect();
    let sent = &envelope.artifacts;
    let (artifacts, skipped_artifacts) = select_artifacts(files, limits, |name| {
        let content = sent
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.content_b64.as_deref())
            .ok_or("the sandbox did not send its content")?;
        BASE64
            .decode(content)
            .map_err(|e| format!("damaged content: {e}"))
    });
    SnippetRun {
        outcome: outcome(status, printed, result, envelope.error.as_deref()),
        exception: envelope.name,
        artifacts,
        skipped_artifacts,
    }
}

/// Node runs the wrapper as a module (it awaits at the top level); `require` as in CommonJS.
const NODE_PREAMBLE: &str =
    "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n";

/// The wrapper as a file for a service that runs programs (Tenki, UCloud's envd), not
/// snippets: its name, the interpreter that runs it, its contents.
pub fn as_program_file(
    language: Language,
    snippet: &Snippet,
) -> (&'static str, &'static str, String) {
    match language {
        Language::Python => ("main.py", "python3", snippet.code.clone()),
        Language::Javascript => (
            "main.mjs",
            "node",
            format!("{NODE_PREAMBLE}{}", snippet.code),
        ),
    }
}

/// The rest of a wrapper run's result, the same for every provider that runs the wrapper: its
/// wall time since `started`, the instance's facts plus `extra`, and the notes on skipped
/// artifacts.
pub fn stamp(
    result: &mut ExecutionResult,
    started: std::time::Instant,
    metadata: &Map<String, Value>,
    extra: &[(&str, Value)],
    skipped: Vec<String>,
) {
    result.wall_time_ms = started.elapsed().as_millis() as u64;
    result.metadata = metadata.clone();
    for (key, value) in extra {
        result.metadata.insert((*key).to_owned(), value.clone());
    }
    if !skipped.is_empty() {
        result
            .metadata
            .insert("skipped_artifacts".into(), json!(skipped));
    }
}

/// How long the wrapper's result line may be: every artifact it may carry, base64, and room
/// for the rest of the envelope.
pub fn result_room(limits: ArtifactLimits) -> usize {
    limits.max_count * (limits.max_bytes as usize) / 3 * 4 + (1 << 20)
}

/// What a snippet service reported about one run.
#[derive(Debug, Default)]
pub struct SnippetOutput {
    pub stdout: String,
    pub stderr: String,
    /// The service reported a failure (an error event, a dead interpreter, no end of run).
    pub failed: bool,
    /// The name of the exception the service reported, if any.
    pub exception: Option<String>,
    /// A limit the provider itself saw: its deadline passed, or the output went over its cap
    /// while it was read.
    pub limit: Option<ExecStatus>,
}

/// One snippet run's result, the same for every snippet provider: the wrapper's envelope read
/// off stdout, the provider's limit first, then `MemoryError` as `memory_limit`, stdout and
/// stderr cut at `cap` (`output_limit`), exit code 0 or 1 for success or a program error.
/// Returns the result (the caller sets the wall time and its metadata) and the notes on
/// artifacts that were skipped.
pub fn finish_snippet(
    snippet: &Snippet,
    output: SnippetOutput,
    cap: usize,
    limits: ArtifactLimits,
) -> (ExecutionResult, Vec<String>) {
    let read = read_snippet(snippet, &output.stdout, output.failed, limits);
    let mut stderr = output.stderr;
    let exception = read.exception.clone().or(output.exception);
    let limit = output.limit.or_else(|| {
        (exception.as_deref() == Some("MemoryError")).then_some(ExecStatus::MemoryLimit)
    });
    let (mut status, mut stdout, result) = settle(read.outcome, limit, &mut stderr);
    let cut = cap_text(&mut stdout, cap) | cap_text(&mut stderr, cap);
    if cut && matches!(status, ExecStatus::Success | ExecStatus::ProgramError) {
        status = ExecStatus::OutputLimit;
    }
    let result = ExecutionResult {
        exit_code: match status {
            ExecStatus::Success => Some(0),
            ExecStatus::ProgramError => Some(1),
            _ => None,
        },
        result: match status {
            ExecStatus::Success => result,
            _ => ReturnValue::absent(),
        },
        status,
        stdout,
        stderr,
        wall_time_ms: 0,
        artifacts: read.artifacts,
        queue_wait_ms: None,
        metadata: Map::new(),
        egress: None,
    };
    (result, read.skipped_artifacts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(language: Language, code: &str) -> ExecRequest {
        ExecRequest {
            language,
            code: code.into(),
            arguments: json!({ "flag": true, "nothing": null })
                .as_object()
                .cloned()
                .unwrap(),
            timeout_secs: None,
        }
    }

    #[test]
    fn arguments_travel_as_base64_json_never_as_source() {
        let request = request(
            Language::Python,
            "def main(flag, nothing):\n    return flag\n",
        );

        let snippet = snippet(&request, Some(1 << 20), ArtifactLimits::default());

        assert!(!snippet.code.contains(JOB_SLOT), "the job slot is filled");
        assert!(
            !snippet.code.contains("\"flag\""),
            "no argument is pasted: {}",
            snippet.code
        );
        assert!(
            !snippet.code.contains("def main(flag"),
            "the user's code is not pasted"
        );
        assert!(snippet.marker.starts_with("__SANDBOX_RESULT_"));
    }

    fn run(path: &str, program: &str) -> (String, String, i32) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(path);
        std::fs::write(&file, program).unwrap();
        let (interpreter, args): (&str, Vec<&str>) = if path.ends_with(".py") {
            ("/usr/bin/python3.11", vec!["-I", "-B"])
        } else {
            ("/usr/bin/node", vec!["--input-type=module", "-e", program])
        };
        let mut command = std::process::Command::new(interpreter);
        command.current_dir(dir.path()).args(&args);
        if path.ends_with(".py") {
            command.arg(&file);
        }
        let out = command.output().unwrap();
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
            out.status.code().unwrap_or(-1),
        )
    }

    #[test]
    fn the_python_snippet_calls_main_and_returns_its_value_and_artifacts() {
        let request = request(
            Language::Python,
            "import asyncio\nasync def main(flag, nothing):\n    print('hi')\n    open('artifacts/a.csv', 'w').write('x,y\\n')\n    await asyncio.sleep(0)\n    return [flag, nothing, 'ü']\n",
        );
        let snippet = snippet(&request, Some(64 << 20), ArtifactLimits::default());

        let (stdout, stderr, code) = run("cell.py", &snippet.code);
        let read = read_snippet(&snippet, &stdout, false, ArtifactLimits::default());

        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            read.outcome.status,
            ExecStatus::Success,
            "{stdout} {stderr}"
        );
        assert_eq!(read.outcome.stdout, "hi\n");
        assert_eq!(read.outcome.result.value, json!([true, null, "ü"]));
        assert_eq!(read.artifacts.len(), 1);
        assert_eq!(read.artifacts[0].content_b64, BASE64.encode("x,y\n"));
    }

    #[test]
    fn the_python_snippet_reports_an_exception_by_name_and_a_memory_hog_as_memory_error() {
        let failing = request(
            Language::Python,
            "def main(**_):\n    raise KeyError('k')\n",
        );
        let hog = request(
            Language::Python,
            "def main(**_):\n    return len(b'x' * (1024 ** 3))\n",
        );
        let limits = ArtifactLimits::default();

        let failing = snippet(&failing, None, limits);
        let hog = snippet(&hog, Some(64 << 20), limits);
        let (out1, err1, _) = run("cell.py", &failing.code);
        let (out2, err2, _) = run("cell.py", &hog.code);

        let read1 = read_snippet(&failing, &out1, false, limits);
        let read2 = read_snippet(&hog, &out2, false, limits);
        assert_eq!(read1.outcome.status, ExecStatus::ProgramError);
        assert_eq!(read1.exception.as_deref(), Some("KeyError"));
        assert!(
            err1.contains("KeyError: 'k'") && err1.contains("line 2"),
            "{err1}"
        );
        assert_eq!(
            read2.exception.as_deref(),
            Some("MemoryError"),
            "{out2} {err2}"
        );
    }

    #[test]
    fn the_javascript_snippet_awaits_main_and_a_plain_script_has_no_result() {
        let asynchronous = request(
            Language::Javascript,
            "async function main(args) { await new Promise(r => setTimeout(r, 5)); console.log('hi'); return { got: args.flag }; }",
        );
        let plain = request(Language::Javascript, "console.log(6 * 7)");
        let limits = ArtifactLimits::default();

        let asynchronous = snippet(&asynchronous, None, limits);
        let plain = snippet(&plain, None, limits);
        let (out1, err1, _) = run("cell.mjs", &asynchronous.code);
        let (out2, _, _) = run("cell.mjs", &plain.code);

        let read1 = read_snippet(&asynchronous, &out1, false, limits);
        let read2 = read_snippet(&plain, &out2, false, limits);
        assert_eq!(read1.outcome.status, ExecStatus::Success, "{out1} {err1}");
        assert_eq!(read1.outcome.result.value, json!({ "got": true }));
        assert_eq!(read1.outcome.stdout, "hi\n");
        assert_eq!(read2.outcome.status, ExecStatus::Success);
        assert_eq!(read2.outcome.stdout, "42\n");
        assert!(!read2.outcome.result.present);
    }

    #[test]
    fn a_snippet_that_never_reports_is_a_program_error() {
        let snippet = snippet(
            &request(Language::Python, "pass"),
            None,
            ArtifactLimits::default(),
        );

        let read = read_snippet(&snippet, "partial output", false, ArtifactLimits::default());

        assert_eq!(read.outcome.status, ExecStatus::ProgramError);
        assert_eq!(read.outcome.stdout, "partial output");
    }
}
