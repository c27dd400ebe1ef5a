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
    /// Every sandbox was busy for longer than the queue allows.
    PoolBusy,
    /// The provider itself failed; the program may not have run.
    ProviderError,
}

impl ExecStatus {
    pub const ALL: [ExecStatus; 8] = [
        ExecStatus::Success,
        ExecStatus::ProgramError,
        ExecStatus::Timeout,
        ExecStatus::MemoryLimit,
        ExecStatus::OutputLimit,
        ExecStatus::ProcessLimit,
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
            ExecStatus::PoolBusy => "pool_busy",
            ExecStatus::ProviderError => "provider_error",
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
    /// Provider-specific facts (instance id, runtime, ...).
    #[serde(default)]
    pub metadata: Map<String, Value>,
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
    fn results_serialize_with_snake_case_statuses() {
        let status = serde_json::to_value(ExecStatus::MemoryLimit).unwrap();
        assert_eq!(status, json!("memory_limit"));
        for status in ExecStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.id()));
        }
    }
}
