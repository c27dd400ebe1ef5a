//! The gateway commands of the real binary: providers, configure, exec, api-key.

use std::{io::Write, path::Path};

use serde_json::Value;

use crate::helpers::spawn_app_in;

/// Runs `sandbox-console <args> --data-dir <dir>` with extra environment; (exit code, stdout, stderr).
fn run(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = crate::helpers::console_command(data_dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn program(dir: &Path, name: &str, code: &str) -> String {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(code.as_bytes())
        .unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn configure_reads_the_environment_and_refuses_bad_values() {
    let data = tempfile::tempdir().unwrap();

    let (code, out, err) = run(
        data.path(),
        &[
            "configure",
            "--provider",
            "local",
            "--from-env",
            "--set",
            "memory_mb=300",
            "--activate",
        ],
        &[("SANDBOX_LOCAL_TIMEOUT_SECS", "7")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("timeout_secs from SANDBOX_LOCAL_TIMEOUT_SECS"),
        "{err}"
    );
    let (code, out, _) = run(data.path(), &["providers", "--json"], &[]);
    assert_eq!(code, 0);
    let providers: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(providers[0]["kind"], "local");
    assert_eq!(providers[0]["active"], true);
    // RAGFlow's seven kinds and ours (docker), in the settings page's order.
    let kinds: Vec<_> = providers
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "local",
            "docker",
            "self_managed",
            "ssh",
            "aliyun_codeinterpreter",
            "e2b",
            "tenki",
            "ucloud_agent_sandbox",
            "kubernetes"
        ]
    );

    let (code, _, err) = run(
        data.path(),
        &[
            "configure",
            "--provider",
            "local",
            "--set",
            "timeout_secs=0",
        ],
        &[],
    );
    assert_eq!(code, 64);
    assert!(
        err.contains("Nothing was saved") && err.contains("timeout_secs"),
        "{err}"
    );
    let (code, _, err) = run(data.path(), &["configure", "--provider", "nope"], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("available: local"), "{err}");
    let (code, _, err) = run(
        data.path(),
        &["configure", "--provider", "local", "--set", "colour=red"],
        &[],
    );
    assert_ne!(code, 0);
    assert!(err.contains("no setting \"colour\""), "{err}");

    // What was saved is what a server on the same data directory runs with.
    let pool = crate::helpers::open_database(data.path()).await;
    let stored: String =
        sqlx::query_scalar("select value from system_setting where name = 'sandbox.local'")
            .fetch_one(&pool)
            .await
            .unwrap();
    let setting: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        (
            setting["timeout_secs"].as_i64(),
            setting["memory_mb"].as_i64()
        ),
        (Some(7), Some(300))
    );
}

#[test]
fn exec_runs_a_file_with_arguments_and_its_exit_code_follows_the_status() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let hello = program(
        files.path(),
        "hello.py",
        "def main(name):\n    print('hi', name)\n    return {'n': len(name)}\n",
    );
    let failing = program(
        files.path(),
        "fail.js",
        "function main() { throw new Error('nope'); }\n",
    );
    let endless = program(files.path(), "loop.py", "while True:\n    pass\n");

    let (code, out, err) = run(
        data.path(),
        &["exec", &hello, "--args", r#"{"name": "Ada"}"#],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, "hi Ada\n{\"n\":3}\n");
    assert!(err.contains("success"), "{err}");

    let (code, out, _) = run(
        data.path(),
        &["exec", &hello, "--args", r#"{"name": "Bo"}"#, "--json"],
        &[],
    );
    assert_eq!(code, 0);
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["result"]["value"]["n"], 2);
    assert_eq!(result["metadata"]["provider"], "local");

    let (code, _, err) = run(data.path(), &["exec", &failing], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Error: nope"), "{err}");

    let (code, _, _) = run(data.path(), &["exec", &endless, "--timeout", "1"], &[]);
    assert_eq!(code, 124);

    let (code, _, err) = run(data.path(), &["exec", &hello, "--args", "[1]"], &[]);
    assert_eq!(code, 64);
    assert!(err.contains("JSON object"), "{err}");
    let (code, _, err) = run(data.path(), &["exec", "/nonexistent/x.txt"], &[]);
    assert_eq!(code, 64, "{err}");
}

#[tokio::test]
async fn a_key_created_on_the_command_line_works_against_the_server() {
    let data = tempfile::tempdir().unwrap();
    let (code, key, err) = run(
        data.path(),
        &[
            "api-key",
            "create",
            "--name",
            "cli-agent",
            "--scope",
            "execute,admin",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let key = key.trim().to_owned();
    assert!(err.contains("shown only now"));
    let (_, listed, _) = run(data.path(), &["api-key", "list"], &[]);
    assert!(
        listed.contains("cli-agent") && !listed.contains(&key),
        "{listed}"
    );
    let app = spawn_app_in(data, |_| {}).await;

    let response = app
        .get_with_key("/api/v1/admin/sandbox/providers", &key)
        .await;

    assert_eq!(response.status().as_u16(), 200);
    let rows: Vec<(String, String)> = sqlx::query_as("select caller, source from execution")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert!(rows.is_empty());
}

/// The local provider's stored settings row: (version, value).
async fn stored_local(data: &Path) -> (i64, Value) {
    let pool = crate::helpers::open_database(data).await;
    let (version, value): (i64, String) =
        sqlx::query_as("select version, value from system_setting where name = 'sandbox.local'")
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    (version, serde_json::from_str(&value).unwrap())
}

#[tokio::test]
async fn configure_refuses_unknown_keys_and_variables_and_takes_ragflows_names() {
    let data = tempfile::tempdir().unwrap();

    let (unknown_set, _, set_err) = run(
        data.path(),
        &[
            "configure",
            "--provider",
            "local",
            "--set",
            "work_dir=/tmp/x",
        ],
        &[],
    );
    let (unknown_env, _, env_err) = run(
        data.path(),
        &["configure", "--provider", "local", "--from-env"],
        &[("SANDBOX_LOCAL_TIMOUT_SECS", "7")],
    );
    let (twice, _, twice_err) = run(
        data.path(),
        &["configure", "--provider", "local", "--from-env"],
        &[
            ("SANDBOX_LOCAL_TIMEOUT_SECS", "7"),
            ("SANDBOX_LOCAL_TIMEOUT", "8"),
        ],
    );
    let (unchanged, _) = stored_local(data.path()).await;
    let (aliased, out, err) = run(
        data.path(),
        &[
            "configure",
            "--provider",
            "local",
            "--set",
            "timeout=9",
            "--from-env",
        ],
        &[("SANDBOX_LOCAL_MAX_MEMORY_MB", "300")],
    );
    let (saved_version, saved) = stored_local(data.path()).await;

    assert_ne!(unknown_set, 0);
    assert!(
        set_err.contains("\"work_dir\"") && set_err.contains("timeout_secs (also timeout)"),
        "names the key and the known ones: {set_err}"
    );
    assert_ne!(unknown_env, 0);
    assert!(
        env_err.contains("SANDBOX_LOCAL_TIMOUT_SECS name no local setting"),
        "{env_err}"
    );
    assert_ne!(twice, 0);
    assert!(twice_err.contains("Set one of them"), "{twice_err}");
    assert_eq!(
        unchanged, 1,
        "nothing was saved over the first start's defaults"
    );
    assert_eq!(aliased, 0, "{out}{err}");
    assert_eq!(saved_version, 2);
    assert_eq!(
        (saved["timeout_secs"].as_i64(), saved["memory_mb"].as_i64()),
        (Some(9), Some(300)),
        "RAGFlow's names land on our settings: {saved}"
    );
}

/// The CLI meets the limits of every other door: a program over 1 MiB or a timeout past
/// 600 s is refused with exit code 64 before anything runs (no history row).
#[tokio::test]
async fn exec_refuses_programs_and_timeouts_past_the_limits_every_door_has() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let limit = sandbox_console::model::execution::MAX_CODE_BYTES;
    let at_limit = program(
        files.path(),
        "at.py",
        &format!("print('fits')\n{}", "#".repeat(limit - 14)),
    );
    let over = program(files.path(), "over.py", &"#".repeat(limit + 1));
    // Two-byte characters: the first byte past the limit is half of one.
    let over_wide = program(files.path(), "wide.py", &"é".repeat(limit / 2 + 1));
    let hello = program(files.path(), "hello.py", "print('hi')\n");

    let (fits, out, err) = run(data.path(), &["exec", &at_limit], &[]);
    let (too_big, _, big_err) = run(data.path(), &["exec", &over], &[]);
    let (too_wide, _, wide_err) = run(data.path(), &["exec", &over_wide], &[]);
    let mut piped = crate::helpers::console_command(data.path())
        .args(["exec", "-", "--language", "python"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Far more than the limit: the CLI stops reading past it.
    let mut stdin = piped.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'#'; 64 * 1024];
        for _ in 0..(4 * limit / chunk.len()) {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let piped = piped.wait_with_output().unwrap();
    writer.join().unwrap();
    let (long, _, long_err) = run(data.path(), &["exec", &hello, "--timeout", "601"], &[]);
    let (zero, _, _) = run(data.path(), &["exec", &hello, "--timeout", "0"], &[]);

    assert_eq!(fits, 0, "exactly the limit runs: {out}{err}");
    assert_eq!(out, "fits\n");
    assert_eq!(too_big, 64, "{big_err}");
    assert!(
        big_err.contains(&format!("larger than {limit} bytes")),
        "{big_err}"
    );
    assert_eq!(too_wide, 64, "{wide_err}");
    assert!(
        wide_err.contains(&format!("larger than {limit} bytes")),
        "{wide_err}"
    );
    assert_eq!(
        piped.status.code(),
        Some(64),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert_eq!((long, zero), (64, 64));
    assert!(long_err.contains("from 1 to 600"), "{long_err}");
    let pool = crate::helpers::open_database(data.path()).await;
    let runs: i64 = sqlx::query_scalar("select count(*) from execution")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(runs, 1, "only the program at the limit ran");
}

/// `probe` (the image's HEALTHCHECK) exits 0 while the console on --listen is ready and 1,
/// saying why, once nothing answers there; a bad path is refused before any request.
#[tokio::test]
async fn probe_says_whether_the_console_on_its_listen_address_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::helpers::console_command(dir.path())
        .args(["--listen", "127.0.0.1:0"])
        .env("ADMIN_PASSWORD", "correct horse battery")
        .env("SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT", "false")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let address = crate::helpers::listening_address(&mut server);
    let listen = address.trim_start_matches("http://").to_owned();
    let probe = |extra: &[&str]| {
        let mut args = vec!["--listen", &listen, "probe"];
        args.extend_from_slice(extra);
        let output = std::process::Command::new(crate::helpers::BIN)
            .args(&args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, out, err) = probe(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("/readyz: 200 OK") && out.contains("ready"),
        "{out}"
    );
    let (code, out, err) = probe(&["--path", "/healthz"]);
    assert_eq!(code, 0, "{out}{err}");
    // A path the console does not serve without a session is not "ready".
    let (code, _, err) = probe(&["--path", "/api/v1/providers"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("answered 401"), "{err}");
    let (code, _, err) = probe(&["--path", "readyz"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("--path must be a plain absolute path"),
        "{err}"
    );

    server.kill().unwrap();
    server.wait().unwrap();
    let (code, out, err) = probe(&["--timeout", "2"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("did not answer"), "{err}");
}
