//! The conformance suite every provider must pass, unchanged: run it against a real provider
//! or against a provider talking to a contract fake. The provider under test must be set up
//! with at most 512 MB of memory and an output cap below 100 MB. Also the check that a
//! provider's schema and its config type agree.

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Map, Value};

use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        schema::ConfigSchema,
    },
    sandbox::SandboxProvider,
};

/// Checks that a provider's form and its config type agree (no drift between them): the
/// schema's values for `given` (the required fields) deserialize into `C`, and `C` serializes
/// back to exactly those values, except optional fields without a default, which come back as
/// an empty string. Returns the config, or what disagrees.
pub fn schema_matches_config<C: Serialize + DeserializeOwned>(
    schema: &ConfigSchema,
    given: &Map<String, Value>,
) -> Result<C, String> {
    let values = schema
        .normalize(given)
        .map_err(|errors| format!("the schema refuses {given:?}: {errors:?}"))?;
    let config: C = serde_json::from_value(Value::Object(values.clone()))
        .map_err(|e| format!("the schema's values do not deserialize: {e}"))?;
    let Ok(Value::Object(round_trip)) = serde_json::to_value(&config) else {
        return Err("the config does not serialize to an object".into());
    };
    for (key, value) in &round_trip {
        let blank_optional = schema
            .field(key)
            .is_some_and(|f| f.default.is_none() && !given.contains_key(key))
            && value == &json!("");
        if values.get(key) != Some(value) && !blank_optional {
            return Err(format!(
                "{key}: the schema gives {:?}, the config {value}",
                values.get(key)
            ));
        }
    }
    if let Some(missing) = values.keys().find(|k| !round_trip.contains_key(*k)) {
        return Err(format!("{missing}: in the schema, not in the config"));
    }
    Ok(config)
}

struct Case {
    name: &'static str,
    language: Language,
    code: &'static str,
    arguments: Value,
    timeout_secs: Option<u32>,
    check: fn(&ExecutionResult) -> Result<(), String>,
}

fn expect(condition: bool, what: &str, result: &ExecutionResult) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(format!(
            "{what}; got status {:?}, result {}, stdout {:?}, stderr {:?}",
            result.status,
            result.result.value,
            truncate(&result.stdout),
            truncate(&result.stderr)
        ))
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(300).collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "python hello world",
            language: Language::Python,
            code: "def main():\n    print('hello')\n    return 'world'\n",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| expect(r.status == ExecStatus::Success && r.stdout == "hello\n" && r.result.value == json!("world"), "hello world", r),
        },
        Case {
            name: "javascript hello world",
            language: Language::Javascript,
            code: "function main() { console.log('hello'); return 'world'; }",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| expect(r.status == ExecStatus::Success && r.stdout == "hello\n" && r.result.value == json!("world"), "hello world", r),
        },
        Case {
            name: "python arguments with true, false and null",
            language: Language::Python,
            code: "def main(yes, no, nothing, nested):\n    return [yes, no, nothing, nested]\n",
            arguments: json!({ "yes": true, "no": false, "nothing": null, "nested": { "ü": [1, null] } }),
            timeout_secs: None,
            check: |r| expect(r.result.value == json!([true, false, null, { "ü": [1, null] }]), "the arguments returned intact", r),
        },
        Case {
            name: "javascript async main",
            language: Language::Javascript,
            code: "async function main(args) { await new Promise(r => setTimeout(r, 20)); return { got: args.flag }; }",
            arguments: json!({ "flag": false }),
            timeout_secs: None,
            check: |r| expect(r.status == ExecStatus::Success && r.result.value == json!({ "got": false }), "the awaited value", r),
        },
        Case {
            name: "plain script without main",
            language: Language::Python,
            code: "print(6 * 7)\n",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| expect(r.status == ExecStatus::Success && r.stdout == "42\n" && !r.result.present, "a plain script's output", r),
        },
        Case {
            name: "exception with traceback",
            language: Language::Python,
            code: "def main():\n    raise RuntimeError('conformance boom')\n",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| {
                expect(
                    r.status == ExecStatus::ProgramError && r.stderr.contains("RuntimeError: conformance boom") && r.stderr.contains("line 2"),
                    "a program error with the traceback",
                    r,
                )
            },
        },
        Case {
            name: "timeout",
            language: Language::Python,
            code: "import time\ndef main():\n    time.sleep(60)\n",
            arguments: json!({}),
            timeout_secs: Some(1),
            check: |r| expect(r.status == ExecStatus::Timeout && r.wall_time_ms < 10_000, "a timeout soon after 1 s", r),
        },
        Case {
            name: "memory limit",
            language: Language::Python,
            code: "def main():\n    hog = b'x' * (1024 ** 3)\n    return len(hog)\n",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| expect(r.status == ExecStatus::MemoryLimit, "memory_limit for a 1 GiB allocation", r),
        },
        Case {
            name: "output cap",
            language: Language::Javascript,
            code: "const chunk = 'y'.repeat(1 << 20);\nfor (let i = 0; i < 100; i++) process.stdout.write(chunk);",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| expect(r.status == ExecStatus::OutputLimit && r.stdout.len() < 100 << 20, "output_limit for 100 MB of output", r),
        },
        Case {
            name: "network blocked",
            language: Language::Python,
            code: "import socket\ndef main():\n    try:\n        socket.create_connection(('1.1.1.1', 80), timeout=2)\n        return 'connected'\n    except OSError as e:\n        return 'blocked'\n",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| expect(r.result.value == json!("blocked"), "no outbound connection", r),
        },
        Case {
            name: "artifact round-trip",
            language: Language::Python,
            code: "def main():\n    with open('artifacts/table.csv', 'w') as f:\n        f.write('a,b\\n1,2\\n')\n    return 'written'\n",
            arguments: json!({}),
            timeout_secs: None,
            check: |r| {
                let artifact = r.artifacts.iter().find(|a| a.name == "table.csv");
                expect(
                    artifact.is_some_and(|a| a.mime_type == "text/csv" && a.size == 8 && a.content_b64 == "YSxiCjEsMgo="),
                    "table.csv among the artifacts",
                    r,
                )
            },
        },
    ]
}

/// Runs every case; returns one line per failed case (empty when the provider conforms).
pub async fn run_all(provider: &dyn SandboxProvider) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases() {
        if !provider.languages().contains(&case.language) {
            failures.push(format!(
                "{}: the provider does not run {}",
                case.name, case.language
            ));
            continue;
        }
        let request = ExecRequest {
            language: case.language,
            code: case.code.into(),
            arguments: case.arguments.as_object().cloned().unwrap_or_default(),
            timeout_secs: case.timeout_secs,
        };
        let (outcome, destroyed) = crate::sandbox::run_once(provider, &request).await;
        if let Err(error) = destroyed {
            failures.push(format!(
                "{}: destroying the instance failed: {error}",
                case.name
            ));
        }
        match outcome {
            Ok(result) => {
                if let Err(why) = (case.check)(&result) {
                    failures.push(format!("{}: expected {why}", case.name));
                }
            }
            Err(error) => failures.push(format!("{}: the provider failed: {error}", case.name)),
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::model::schema::{FieldKind, FieldSpec};

    #[derive(Serialize, Deserialize)]
    #[serde(default)]
    struct Narrow {
        endpoint: String,
    }

    impl Default for Narrow {
        fn default() -> Self {
            Narrow {
                endpoint: "http://x".into(),
            }
        }
    }

    #[test]
    fn a_field_the_config_drops_or_a_default_the_form_does_not_show_is_reported() {
        let endpoint = FieldSpec::new("endpoint", FieldKind::String, "Endpoint");
        let integer = FieldKind::Integer {
            min: None,
            max: None,
        };
        let wider = ConfigSchema {
            fields: vec![
                endpoint.clone().default_value(json!("http://x")),
                FieldSpec::new("timeout", integer, "Timeout").default_value(json!(3)),
            ],
        };
        let hidden_default = ConfigSchema {
            fields: vec![endpoint.clone()],
        };
        let same = ConfigSchema {
            fields: vec![endpoint.default_value(json!("http://x"))],
        };

        let dropped = schema_matches_config::<Narrow>(&wider, &Map::new()).err();
        let hidden = schema_matches_config::<Narrow>(&hidden_default, &Map::new()).err();
        let agreed = schema_matches_config::<Narrow>(&same, &Map::new());

        assert_eq!(
            dropped.as_deref(),
            Some("timeout: in the schema, not in the config")
        );
        assert_eq!(
            hidden.as_deref(),
            Some("endpoint: the schema gives None, the config \"http://x\"")
        );
        assert_eq!(agreed.map(|c| c.endpoint).ok().as_deref(), Some("http://x"));
    }
}
