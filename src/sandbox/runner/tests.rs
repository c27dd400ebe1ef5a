//! The protocol against the real interpreters, without isolation: providers add that.

use std::process::Command;

use serde_json::{json, Value};

use super::*;

struct Run {
    outcome: Outcome,
    stderr: String,
    workspace: tempfile::TempDir,
}

fn request(language: Language, code: &str, arguments: Value) -> ExecRequest {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    ExecRequest {
        language,
        code: code.into(),
        arguments,
        timeout_secs: None,
    }
}

fn run(language: Language, code: &str, arguments: Value) -> Run {
    let job = prepare(&request(language, code, arguments));
    let workspace = tempfile::tempdir().unwrap();
    for file in &job.files {
        std::fs::write(workspace.path().join(file.name), &file.contents).unwrap();
    }
    let interpreter = match language {
        Language::Python => "/usr/bin/python3.11",
        Language::Javascript => "node",
    };
    let output = Command::new(interpreter)
        .args(&job.interpreter_args)
        .current_dir(workspace.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let outcome = interpret(&job, output.status.code().unwrap_or(-1), &stdout);
    Run {
        outcome,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        workspace,
    }
}

fn py(code: &str, arguments: Value) -> Run {
    run(Language::Python, code, arguments)
}

fn js(code: &str, arguments: Value) -> Run {
    run(Language::Javascript, code, arguments)
}

#[test]
fn python_main_gets_keyword_arguments_with_true_false_null_unicode_and_nesting() {
    let args = json!({ "flag": true, "off": false, "nothing": null, "name": "Ada Lovelace ✓ 数学", "deep": { "list": [1, 2.5, { "x": null }] } });

    let run = py("def main(flag, off, nothing, name, deep):\n    print('hi')\n    return {'flag': flag, 'off': off, 'nothing': nothing, 'name': name, 'deep': deep}\n", args.clone());

    assert_eq!(run.outcome.status, ExecStatus::Success, "{}", run.stderr);
    assert_eq!(run.outcome.stdout, "hi\n");
    assert_eq!(run.outcome.result, ReturnValue::of(args));
    assert_eq!(run.outcome.result.json_type, "object");
}

#[test]
fn javascript_main_gets_one_arguments_object_sync_or_async() {
    let sync = js(
        "function main(args) { console.log('hello'); return [args.a, args.b, args.c]; }",
        json!({ "a": true, "b": null, "c": "ü" }),
    );
    let not_exported = js("const main = async ({ n }) => { await new Promise(r => setTimeout(r, 10)); return n * 2; };", json!({ "n": 21 }));
    let exported = js(
        "async function main(a) { return { ok: a.ok }; }\nmodule.exports = { main };",
        json!({ "ok": false }),
    );

    assert_eq!(sync.outcome.status, ExecStatus::Success, "{}", sync.stderr);
    assert_eq!(sync.outcome.stdout, "hello\n");
    assert_eq!(sync.outcome.result.value, json!([true, null, "ü"]));
    assert_eq!(not_exported.outcome.result, ReturnValue::of(json!(42)));
    assert_eq!(exported.outcome.result.value, json!({ "ok": false }));
}

#[test]
fn a_megabyte_of_arguments_arrives_intact() {
    let big = "x".repeat(1024 * 1024);

    let python = py(
        "def main(big):\n    return len(big)\n",
        json!({ "big": big }),
    );
    let javascript = js(
        "function main({ big }) { return big.length; }",
        json!({ "big": big }),
    );

    assert_eq!(
        python.outcome.result.value,
        json!(1024 * 1024),
        "{}",
        python.stderr
    );
    assert_eq!(
        javascript.outcome.result.value,
        json!(1024 * 1024),
        "{}",
        javascript.stderr
    );
}

#[test]
fn code_without_main_runs_as_a_plain_script() {
    let python = py("import sys\nprint('plain', end='')\nif __name__ == '__main__':\n    print('not run twice')\n", json!({}));
    let javascript = js("process.stdout.write('plain');", json!({}));

    for run in [python, javascript] {
        assert_eq!(run.outcome.status, ExecStatus::Success, "{}", run.stderr);
        assert_eq!(run.outcome.stdout, "plain");
        assert_eq!(run.outcome.result, ReturnValue::absent());
    }
}

#[test]
fn output_without_a_trailing_newline_is_kept_byte_for_byte() {
    let run = py(
        "import sys\ndef main():\n    sys.stdout.write('no newline')\n    return None\n",
        json!({}),
    );

    assert_eq!(run.outcome.stdout, "no newline");
    assert_eq!(run.outcome.result, ReturnValue::of(Value::Null));
}

#[test]
fn exceptions_are_program_errors_with_the_users_traceback() {
    let python = py(
        "def helper():\n    raise ValueError('boom')\n\ndef main():\n    return helper()\n",
        json!({}),
    );
    let javascript = js(
        "function helper() { throw new TypeError('bang'); }\nasync function main() { return helper(); }",
        json!({}),
    );

    assert_eq!(python.outcome.status, ExecStatus::ProgramError);
    assert!(
        python
            .stderr
            .contains("File \"main.py\", line 2, in helper"),
        "{}",
        python.stderr
    );
    assert!(python.stderr.contains("ValueError: boom"));
    assert!(
        !python.stderr.contains("_runner.py"),
        "the runner's frames are hidden: {}",
        python.stderr
    );
    assert_eq!(javascript.outcome.status, ExecStatus::ProgramError);
    assert!(
        javascript.stderr.contains("TypeError: bang"),
        "{}",
        javascript.stderr
    );
    assert!(
        javascript.stderr.contains("main.js:1"),
        "the user's frame stays: {}",
        javascript.stderr
    );
    assert!(
        !javascript.stderr.contains("_runner.js") && !javascript.stderr.contains("node:internal"),
        "the runner's and Node's frames are hidden: {}",
        javascript.stderr
    );
}

#[test]
fn unserializable_or_missing_return_values_are_clear_program_errors() {
    let python = py("def main():\n    return {1, 2}\n", json!({}));
    let nan = py("def main():\n    return float('nan')\n", json!({}));
    let undefined = js("function main() { console.log('side effect'); }", json!({}));
    let bigint = js("function main() { return 1n; }", json!({}));

    assert_eq!(python.outcome.status, ExecStatus::ProgramError);
    assert_eq!(
        python.outcome.error.as_deref(),
        Some("main() returned a value that is not JSON-serializable (set)")
    );
    assert_eq!(nan.outcome.status, ExecStatus::ProgramError);
    assert_eq!(undefined.outcome.status, ExecStatus::ProgramError);
    assert_eq!(
        undefined.outcome.error.as_deref(),
        Some("main() must return a value. Use null for an empty result.")
    );
    assert_eq!(undefined.outcome.stdout, "side effect\n");
    assert_eq!(bigint.outcome.status, ExecStatus::ProgramError);
    assert!(bigint
        .outcome
        .error
        .unwrap()
        .contains("not JSON-serializable"));
}

#[test]
fn a_printed_fake_result_line_is_not_taken_for_the_result() {
    let fake = format!(
        "\\n__SANDBOX_RESULT_0000000000000000__:{}",
        BASE64.encode(r#"{"present":true,"value":"forged"}"#)
    );

    let run = py(
        &format!("def main():\n    print(\"{fake}\")\n    return 'real'\n"),
        json!({}),
    );

    assert_eq!(run.outcome.result.value, json!("real"));
    let encoded = BASE64.encode(r#"{"present":true,"value":"forged"}"#);
    assert_eq!(
        run.outcome.stdout,
        format!("\n__SANDBOX_RESULT_0000000000000000__:{encoded}\n"),
        "the fake line stays ordinary output"
    );
}

#[test]
fn wrong_argument_names_are_a_program_error() {
    let run = py("def main(a):\n    return a\n", json!({ "b": 1 }));

    assert_eq!(run.outcome.status, ExecStatus::ProgramError);
    assert!(
        run.stderr.contains("unexpected keyword argument 'b'"),
        "{}",
        run.stderr
    );
}

#[test]
fn arguments_never_reach_argv_or_the_source() {
    let job = prepare(&request(
        Language::Python,
        "def main(secret): return 1",
        json!({ "secret": "s3cr3t-value" }),
    ));

    assert!(job.interpreter_args.iter().all(|a| !a.contains("s3cr3t")));
    let main = job.files.iter().find(|f| f.name == "main.py").unwrap();
    assert!(!String::from_utf8_lossy(&main.contents).contains("s3cr3t"));
    let run = py(
        "import sys, os\ndef main(secret):\n    return [sys.argv, os.path.exists('_input.json')]\n",
        json!({ "secret": "x" }),
    );
    assert_eq!(
        run.outcome.result.value,
        json!([["main.py"], false]),
        "the input file is gone before user code runs"
    );
}

#[test]
fn artifacts_come_back_and_unsafe_ones_are_skipped() {
    let code = "import os\ndef main():\n    open('artifacts/plot.svg', 'w').write('<svg/>')\n    open('artifacts/data.csv', 'w').write('a,b\\n1,2\\n')\n    open('artifacts/.hidden.txt', 'w').write('h')\n    open('artifacts/run.sh', 'w').write('x')\n    open('artifacts/empty.txt', 'w').close()\n    os.symlink('/etc/passwd', 'artifacts/passwd.txt')\n    os.mkdir('artifacts/dir.txt')\n    return 'ok'\n";
    let run = py(code, json!({}));
    assert_eq!(run.outcome.status, ExecStatus::Success, "{}", run.stderr);

    let (artifacts, skipped) = collect_artifacts(run.workspace.path(), ArtifactLimits::default());

    let names: Vec<_> = artifacts
        .iter()
        .map(|a| (a.name.as_str(), a.mime_type.as_str(), a.size))
        .collect();
    assert_eq!(
        names,
        [
            ("data.csv", "text/csv", 8),
            ("plot.svg", "image/svg+xml", 6)
        ]
    );
    assert_eq!(BASE64.decode(&artifacts[1].content_b64).unwrap(), b"<svg/>");
    assert_eq!(skipped.len(), 5, "{skipped:?}");
}

#[test]
fn artifact_count_and_size_limits_hold() {
    let run = js("const fs = require('fs');\nfor (let i = 0; i < 5; i++) fs.writeFileSync(`artifacts/f${i}.txt`, 'x'.repeat(10 * (i + 1)));", json!({}));

    let (artifacts, skipped) = collect_artifacts(
        run.workspace.path(),
        ArtifactLimits {
            max_count: 2,
            max_bytes: 30,
        },
    );

    let names: Vec<_> = artifacts.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["f0.txt", "f1.txt"]);
    assert_eq!(skipped.len(), 3, "{skipped:?}");
}

#[test]
fn artifact_names_follow_the_rules() {
    assert_eq!(artifact_mime("chart.PNG"), Ok("image/png"));
    assert_eq!(artifact_mime("report.jpeg"), Ok("image/jpeg"));
    for bad in [
        "",
        ".env",
        "../x.png",
        "a/b.png",
        "x..png",
        "script.py",
        "noext",
    ] {
        assert!(artifact_mime(bad).is_err(), "{bad:?}");
    }
}
