//! The real binary: `admin create|reset-password`, first start, graceful shutdown.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    time::Duration,
};

use crate::helpers::{location, spawn_app_in};

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-console");

/// Runs `sandbox-console <args>` against `data_dir`, feeding `stdin`; returns (success, stdout+stderr).
fn run_cli(data_dir: &std::path::Path, args: &[&str], stdin: &str) -> (bool, String) {
    let mut child = crate::helpers::console_command(data_dir)
        .args(args)
        .env_remove("ADMIN_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// `admin create --username <name> --password-stdin` with `password` on standard input.
fn create_admin(data_dir: &std::path::Path, name: &str, password: &str) -> (bool, String) {
    run_cli(
        data_dir,
        &["admin", "create", "--username", name, "--password-stdin"],
        &format!("{password}\n"),
    )
}

#[tokio::test]
async fn admin_create_makes_an_account_that_can_sign_in() {
    let dir = tempfile::tempdir().unwrap();

    let (ok, out) = create_admin(dir.path(), "Ops", "ops password 1");
    assert!(ok, "{out}");
    assert!(out.contains("Created the administrator 'ops'"), "{out}");

    let app = spawn_app_in(dir, |_| {}).await;
    let response = app.login_as("ops", "ops password 1", "/").await;
    assert_eq!(location(&response), "/");
    let admins: i64 = sqlx::query_scalar("select count(*) from admin_user")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(admins, 1, "no extra first admin is created when one exists");
}

#[tokio::test]
async fn admin_create_refuses_duplicates_short_passwords_and_bad_names() {
    let dir = tempfile::tempdir().unwrap();
    assert!(create_admin(dir.path(), "ops", "ops password 1").0);

    let (ok, out) = create_admin(dir.path(), "OPS", "other password");
    assert!(!ok);
    assert!(out.contains("already exists"), "{out}");

    let (ok, out) = create_admin(dir.path(), "new", "short");
    assert!(!ok);
    assert!(out.contains("at least 8 characters"), "{out}");

    let (ok, out) = create_admin(dir.path(), "bad name", "long enough pw");
    assert!(!ok);
    assert!(out.contains("invalid username"), "{out}");
}

#[tokio::test]
async fn admin_reset_password_generates_a_password_that_works() {
    let dir = tempfile::tempdir().unwrap();
    assert!(create_admin(dir.path(), "ops", "old password 1").0);

    let (ok, out) = run_cli(
        dir.path(),
        &["admin", "reset-password", "--username", "ops"],
        "",
    );
    assert!(ok, "{out}");
    let password = out
        .lines()
        .find_map(|l| l.strip_prefix("Password (shown only now): "))
        .expect("a printed password")
        .to_owned();

    let app = spawn_app_in(dir, |_| {}).await;
    assert_eq!(
        location(&app.login_as("ops", "old password 1", "/").await),
        "/login?error=invalid"
    );
    assert_eq!(location(&app.login_as("ops", &password, "/").await), "/");
}

#[tokio::test]
async fn admin_reset_password_for_an_unknown_user_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();

    let (ok, out) = run_cli(
        dir.path(),
        &[
            "admin",
            "reset-password",
            "--username",
            "ghost",
            "--password-stdin",
        ],
        "whatever 123\n",
    );

    assert!(!ok);
    assert!(out.contains("no administrator named \"ghost\""), "{out}");
}

#[tokio::test]
async fn first_start_prints_a_one_time_password_that_signs_in_and_sigterm_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("ADMIN_PASSWORD")
        .env_remove("DATABASE_URL")
        .env_remove("ADMIN_USERNAME")
        .env("SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT", "false")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut password = None;
    let mut address = None;
    let mut hint = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(p) = line.trim().strip_prefix("One-time password: ") {
            password = Some(p.to_owned());
        }
        if line.contains("admin reset-password") {
            hint = Some(line.clone());
        }
        if let Some(a) = line.strip_prefix("sandbox-console listening on ") {
            address = Some(a.to_owned());
            break;
        }
    }
    let (password, address) = (
        password.expect("a printed password"),
        address.expect("a printed address"),
    );
    // The reset hint names this console's own data dir, so it works from any directory.
    let hint = hint.expect("a printed reset hint");
    assert!(
        hint.contains(&format!("--data-dir '{}'", dir.path().display())),
        "{hint}"
    );

    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .post(format!("{address}/auth/login"))
        .form(&[("username", "admin"), ("password", password.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(location(&response), "/");

    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
}
