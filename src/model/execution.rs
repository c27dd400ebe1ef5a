//! The execution model every provider speaks: a request to run code, and its typed result.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A language user code can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    Javascript,
}

impl Language {
    pub const ALL: [Language; 2] = [Language::Python, Language::Javascript];

    pub fn id(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Javascript => "javascript",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// Accepts the names RAGFlow and its clients use (`python3`, `nodejs`, `js`, ...).
impl FromStr for Language {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "python" | "python3" | "py" => Ok(Language::Python),
            "javascript" | "js" | "nodejs" | "node" => Ok(Language::Javascript),
            other => Err(format!(
                "unsupported language {other:?}: use python or javascript"
            )),
        }
    }
}

/// A request to run `code`. Its `main()` (if any) is called with `arguments`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecRequest {
    pub language: Language,
    pub code: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Seconds; the provider's configured timeout applies when absent.
    #[serde(default)]
    pub timeout_secs: Option<u32>,
}

/// Largest program accepted, in bytes of UTF-8, whichever door it comes through.
pub const MAX_CODE_BYTES: usize = 1024 * 1024;
/// Longest timeout a caller may ask for; the provider's own limit applies as well.
pub const MAX_TIMEOUT_SECS: u32 = 600;

/// What makes a request one that no provider is asked to run. Each door words it its own
/// way (a REST error, FastAPI's 422, a form message, an exit code).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestProblem {
    #[error("code is {bytes} bytes; the limit is {MAX_CODE_BYTES}")]
    CodeTooLarge { bytes: usize },
    #[error("timeout must be a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}")]
    TimeoutOutOfRange { secs: u64 },
    #[error("there is no environment named {name:?}; GET /api/v1/environments lists them")]
    UnknownEnvironment { name: String },
    #[error("environment {name:?} has no ready build yet; build it first (or wait for its build)")]
    EnvironmentNotReady { name: String },
    #[error("the active provider ({provider}) does not mount package environments")]
    EnvironmentsUnsupported { provider: String },
}

impl ExecRequest {
    /// The limits every request meets, checked by the service for every caller.
    pub fn check(&self) -> Result<(), RequestProblem> {
        if self.code.len() > MAX_CODE_BYTES {
            return Err(RequestProblem::CodeTooLarge {
                bytes: self.code.len(),
            });
        }
        match self.timeout_secs {
            Some(secs) if !(1..=MAX_TIMEOUT_SECS).contains(&secs) => {
                Err(RequestProblem::TimeoutOutOfRange { secs: secs.into() })
            }
            _ => Ok(()),
        }
    }

    /// A timeout as a door read it (any whole number), for [`ExecRequest::check`] to judge.
    pub fn timeout_from(secs: u64) -> u32 {
        u32::try_from(secs).unwrap_or(u32::MAX)
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    /// The program finished with exit code 0.
    Success,
    /// The program failed: an exception, a non-zero exit, an unusable return value.
    ProgramError,
    /// The deadline passed and the program was killed.
    Timeout,
    MemoryLimit,
    OutputLimit,
    ProcessLimit,
    /// The run moved more bytes over the network than its provider allows; its connections
    /// were cut.
    EgressLimit,
    /// Every sandbox was busy for longer than the queue allows.
    PoolBusy,
    /// The provider itself failed; the program may not have run.
    ProviderError,
}

impl ExecStatus {
    pub const ALL: [ExecStatus; 9] = [
        ExecStatus::Success,
        ExecStatus::ProgramError,
        ExecStatus::Timeout,
        ExecStatus::MemoryLimit,
        ExecStatus::OutputLimit,
        ExecStatus::ProcessLimit,
        ExecStatus::EgressLimit,
        ExecStatus::PoolBusy,
        ExecStatus::ProviderError,
    ];

    /// The name used on the wire and in the history (`memory_limit`, ...).
    pub fn id(self) -> &'static str {
        match self {
            ExecStatus::Success => "success",
            ExecStatus::ProgramError => "program_error",
            ExecStatus::Timeout => "timeout",
            ExecStatus::MemoryLimit => "memory_limit",
            ExecStatus::OutputLimit => "output_limit",
            ExecStatus::ProcessLimit => "process_limit",
            ExecStatus::EgressLimit => "egress_limit",
            ExecStatus::PoolBusy => "pool_busy",
            ExecStatus::ProviderError => "provider_error",
        }
    }
}

impl ExecStatus {
    /// The status in words, for people.
    pub fn label(self) -> &'static str {
        match self {
            ExecStatus::Success => "Success",
            ExecStatus::ProgramError => "Program error",
            ExecStatus::Timeout => "Timed out",
            ExecStatus::MemoryLimit => "Memory limit",
            ExecStatus::OutputLimit => "Output limit",
            ExecStatus::ProcessLimit => "Process limit",
            ExecStatus::EgressLimit => "Network limit",
            ExecStatus::PoolBusy => "All sandboxes busy",
            ExecStatus::ProviderError => "Provider error",
        }
    }

    /// One sentence on what the status means.
    pub fn hint(self) -> &'static str {
        match self {
            ExecStatus::Success => "The code ran to the end.",
            ExecStatus::ProgramError => "The code raised an error or exited with a non-zero code.",
            ExecStatus::Timeout => "The code ran past its time limit and was stopped.",
            ExecStatus::MemoryLimit => {
                "The code used more memory than the provider allows and was stopped."
            }
            ExecStatus::OutputLimit => {
                "The code printed more than the output limit; the output was cut."
            }
            ExecStatus::ProcessLimit => {
                "The code started more processes or threads than the provider allows."
            }
            ExecStatus::EgressLimit => {
                "The code moved more bytes over the network than the provider allows."
            }
            ExecStatus::PoolBusy => "Every sandbox was busy; nothing ran. Try again.",
            ExecStatus::ProviderError => "The provider failed; the code may not have run.",
        }
    }
}

impl Language {
    /// The language's name, for people.
    pub fn label(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Javascript => "JavaScript",
        }
    }
}

/// What `main()` returned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReturnValue {
    /// `false` when the code had no `main()` (a plain script).
    pub present: bool,
    pub value: Value,
    /// The JSON type of `value`: null, boolean, number, string, array or object.
    #[serde(rename = "type")]
    pub json_type: String,
}

impl ReturnValue {
    pub fn absent() -> Self {
        ReturnValue {
            present: false,
            value: Value::Null,
            json_type: "null".into(),
        }
    }

    pub fn of(value: Value) -> Self {
        let json_type = match &value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        ReturnValue {
            present: true,
            value,
            json_type: json_type.into(),
        }
    }
}

/// A file the program wrote into `./artifacts/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub name: String,
    pub mime_type: String,
    pub size: u64,
    pub content_b64: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    pub status: ExecStatus,
    /// What the program printed (the runner's own result line removed).
    pub stdout: String,
    pub stderr: String,
    /// `None` when the process was killed or never ran.
    pub exit_code: Option<i32>,
    pub wall_time_ms: u64,
    pub result: ReturnValue,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// How long the run waited for a sandbox (a free run slot, a warm container), for
    /// providers that queue runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_wait_ms: Option<u64>,
    /// Provider-specific facts (instance id, runtime, ...).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// What the run did on the network, for providers on an allow-list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<crate::model::egress::EgressReport>,
}

/// One run as the service reports it: which provider ran it, and what came back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The kind of the provider that ran it.
    pub provider: String,
    pub result: ExecutionResult,
}

impl Run {
    /// The result as the CLI's `--json` and the trial panel have always shown it: the
    /// provider's kind under `metadata.provider`.
    pub fn into_shown(self) -> ExecutionResult {
        let mut result = self.result;
        result
            .metadata
            .insert("provider".into(), Value::String(self.provider));
        result
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn languages_accept_the_names_ragflow_clients_send() {
        for (name, language) in [
            ("python3", Language::Python),
            ("Python", Language::Python),
            ("nodejs", Language::Javascript),
            ("js", Language::Javascript),
        ] {
            assert_eq!(name.parse::<Language>(), Ok(language), "{name}");
        }
        assert!("ruby"
            .parse::<Language>()
            .unwrap_err()
            .contains("python or javascript"));
    }

    #[test]
    fn return_values_know_their_json_type() {
        let types: Vec<_> = [
            json!(null),
            json!(true),
            json!(1.5),
            json!("s"),
            json!([]),
            json!({}),
        ]
        .into_iter()
        .map(|v| ReturnValue::of(v).json_type)
        .collect();
        assert_eq!(
            types,
            ["null", "boolean", "number", "string", "array", "object"]
        );
        assert!(!ReturnValue::absent().present);
    }

    #[test]
    fn requests_over_a_limit_name_their_problem() {
        let request = |code: &str, timeout_secs| ExecRequest {
            language: Language::Python,
            code: code.into(),
            arguments: Map::new(),
            timeout_secs,
        };
        assert_eq!(request("x", None).check(), Ok(()));
        assert_eq!(request("x", Some(MAX_TIMEOUT_SECS)).check(), Ok(()));
        assert_eq!(
            request("x", Some(0)).check(),
            Err(RequestProblem::TimeoutOutOfRange { secs: 0 })
        );
        assert_eq!(
            request("x", Some(ExecRequest::timeout_from(1 << 40))).check(),
            Err(RequestProblem::TimeoutOutOfRange {
                secs: u32::MAX.into()
            })
        );
        let big = "#".repeat(MAX_CODE_BYTES + 1);
        assert_eq!(
            request(&big, None).check(),
            Err(RequestProblem::CodeTooLarge {
                bytes: MAX_CODE_BYTES + 1
            })
        );
    }

    #[test]
    fn results_serialize_with_snake_case_statuses() {
        let status = serde_json::to_value(ExecStatus::MemoryLimit).unwrap();
        assert_eq!(status, json!("memory_limit"));
        for status in ExecStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.id()));
        }
    }
}
