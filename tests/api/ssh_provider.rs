//! The `ssh` provider against a real OpenSSH server (`scripts/sshd.sh up`: Debian's sshd on a
//! loopback port, a test account, its password, an Ed25519 key and a PEM RSA key behind a
//! passphrase): the conformance suite, both ways of signing in, a wrong password and an
//! unknown host key refused clearly, a deadline that leaves no process of the run, artifacts
//! with a symlink refused, and no run folder left. Each test works in a folder of its own.

use std::{os::unix::fs::MetadataExt, path::PathBuf};

use rand::Rng;
use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    sandbox::{
        providers::ssh::{self, SshProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Value};

/// The test sshd's directory, as `scripts/sshd.sh` made it.
pub struct Sshd {
    state: PathBuf,
}

impl Sshd {
    pub fn get() -> Sshd {
        let state = PathBuf::from(
            std::env::var("SANDBOX_CONSOLE_SSHD_STATE")
                .unwrap_or_else(|_| "/tmp/sandbox-console-sshd".into()),
        );
        assert!(
            state.join("sshd.pid").exists(),
            "no test sshd in {}: start it with scripts/sshd.sh up (make test does)",
            state.display()
        );
        Sshd { state }
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.state.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .trim()
            .to_owned()
    }

    pub fn port(&self) -> u16 {
        self.read("port").parse().unwrap()
    }

    /// A work folder of this test's own, owned by the test account.
    pub fn work_dir(&self) -> tempfile::TempDir {
        let owner = std::fs::metadata(self.state.join("home")).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("ssh-provider-")
            .tempdir_in("/tmp")
            .unwrap();
        std::os::unix::fs::chown(dir.path(), Some(owner.uid()), Some(owner.gid())).unwrap();
        dir
    }

    /// Settings signing in with the password, `extra` on top.
    pub fn settings(&self, work_dir: &tempfile::TempDir, extra: Value) -> Value {
        let mut config = json!({
            "host": "127.0.0.1",
            "port": self.port(),
            "username": self.read("account"),
            "password": self.read("password"),
            "known_hosts": self.read("known_hosts"),
            "python_bin": "/usr/bin/python3.11",
            "node_bin": "node",
            "work_dir": work_dir.path().to_str().unwrap(),
        });
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap_or_default());
        config
    }

    pub fn provider(&self, work_dir: &tempfile::TempDir, extra: Value) -> SshProvider {
        let settings = self.settings(work_dir, extra);
        ssh::build_provider(settings.as_object().unwrap()).expect("valid settings")
    }
}

fn request(language: Language, code: &str, timeout_secs: Option<u32>) -> ExecRequest {
    ExecRequest {
        language,
        code: code.into(),
        arguments: Default::default(),
        timeout_secs,
    }
}

fn left_in(dir: &tempfile::TempDir) -> Vec<String> {
    std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn ssh_passes_the_conformance_suite_against_a_real_sshd_and_leaves_no_run_folder() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    let provider = sshd.provider(&work, json!({}));

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert!(health.message.contains("Python 3.11"), "{}", health.message);
    assert!(health.details["node_version"]
        .as_str()
        .unwrap()
        .starts_with('v'));
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(
        left_in(&work),
        Vec::<String>::new(),
        "every run's folder removed"
    );
}

#[tokio::test]
async fn a_key_signs_in_and_an_encrypted_pem_key_with_its_passphrase_only() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    let ed25519 = sshd.provider(
        &work,
        json!({ "password": "", "private_key": sshd.read("client_ed25519") }),
    );
    let rsa = sshd.provider(
        &work,
        json!({ "password": "", "private_key": sshd.read("client_rsa"), "passphrase": sshd.read("passphrase") }),
    );
    let code = "import os\ndef main():\n    return os.getcwd()\n";

    let by_ed25519 = crate::helpers::run_once(&ed25519, &request(Language::Python, code, None))
        .await
        .unwrap();
    let by_rsa = crate::helpers::run_once(&rsa, &request(Language::Python, code, None))
        .await
        .unwrap();
    let settings = sshd.settings(
        &work,
        json!({ "password": "", "private_key": sshd.read("client_rsa"), "passphrase": "wrong" }),
    );
    let Err(Error::ConfigInvalid { errors }) = ssh::build(settings.as_object().unwrap()) else {
        panic!("a wrong passphrase was accepted")
    };

    for result in [&by_ed25519, &by_rsa] {
        assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
        let folder = result.result.value.as_str().unwrap();
        assert!(
            folder.starts_with(&format!("{}/sandbox-console-", work.path().display())),
            "{folder}"
        );
    }
    assert_eq!(
        errors["private_key"],
        "The passphrase does not open this key."
    );
}

#[tokio::test]
async fn a_wrong_password_is_refused_clearly() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    let provider = sshd.provider(&work, json!({ "password": "not-the-password" }));

    let health = provider.health().await;
    let error = crate::helpers::run_once(&provider, &request(Language::Python, "print(1)", None))
        .await
        .unwrap_err();

    assert!(!health.healthy);
    let account = sshd.read("account");
    assert_eq!(
        health.message,
        format!("{account}@127.0.0.1:{} refused the password", sshd.port())
    );
    assert!(matches!(error, Error::Unauthenticated(_)), "{error}");
}

#[tokio::test]
async fn an_unknown_host_key_is_refused_and_the_refusal_shows_the_line_to_add() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    // Another host's key under this host's name, and no line at all.
    let other = "[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    let elsewhere = sshd.provider(&work, json!({ "known_hosts": other }));
    let none = sshd.provider(&work, json!({ "known_hosts": "" }));
    let changed = sshd.provider(
        &work,
        json!({ "known_hosts": format!("[127.0.0.1]:{} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", sshd.port()) }),
    );

    let unknown = elsewhere.health().await;
    let empty = none.health().await;
    let impostor = changed.health().await;
    let run = crate::helpers::run_once(&none, &request(Language::Python, "print(1)", None)).await;

    let line = sshd.read("known_hosts");
    for report in [&unknown, &empty] {
        assert!(!report.healthy);
        assert!(
            report.message.contains("does not list"),
            "{}",
            report.message
        );
        assert!(
            report.message.ends_with(&line),
            "{}\nwants {line}",
            report.message
        );
    }
    assert!(
        impostor.message.contains("another host key"),
        "{}",
        impostor.message
    );
    assert!(matches!(run, Err(Error::Unauthenticated(_))), "{run:?}");
    assert_eq!(left_in(&work), Vec::<String>::new());
}

/// Whether a process with `token` on its command line is alive on this machine.
fn alive(token: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|line| String::from_utf8_lossy(&line).contains(token))
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn a_deadline_kills_the_whole_run_on_the_host() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    let provider = sshd.provider(&work, json!({}));
    let token = format!("3000.{}", rand::thread_rng().gen_range(100_000..999_999));
    // A child in the run's group, another in a group of its own, and a loop.
    let code = format!(
        "import subprocess, time\n\
         def main():\n\
         \x20   subprocess.Popen(['sleep', '{token}'])\n\
         \x20   subprocess.Popen(['sleep', '{token}'], process_group=0, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
         \x20   print('started', flush=True)\n\
         \x20   while True:\n\
         \x20       time.sleep(0.1)\n"
    );

    let result = crate::helpers::run_once(&provider, &request(Language::Python, &code, Some(5)))
        .await
        .unwrap();

    assert_eq!(result.status, ExecStatus::Timeout, "{}", result.stderr);
    assert_eq!(result.stdout, "started\n");
    // A SIGKILLed process is gone within moments; one that was missed sleeps for 50 minutes.
    crate::wait::wait_until("no process of the run left on the host", || async {
        !alive(&token)
    })
    .await;
    assert_eq!(left_in(&work), Vec::<String>::new());
}

#[tokio::test]
async fn artifacts_come_back_under_the_rules_and_a_symlink_is_never_read() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    let provider = sshd.provider(&work, json!({ "max_artifact_bytes": 1000 }));
    let code = "import os\n\
                def main():\n\
                \x20   open('artifacts/table.csv', 'w').write('a,b\\n1,2\\n')\n\
                \x20   open('artifacts/big.png', 'wb').write(b'x' * 2000)\n\
                \x20   open('artifacts/tool.exe', 'wb').write(b'MZ')\n\
                \x20   os.symlink('/etc/passwd', 'artifacts/passwd.csv')\n\
                \x20   return 'written'\n";

    let result = crate::helpers::run_once(&provider, &request(Language::Python, code, None))
        .await
        .unwrap();

    assert_eq!(result.status, ExecStatus::Success, "{}", result.stderr);
    let names: Vec<_> = result.artifacts.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["table.csv"]);
    let skipped = result.metadata["skipped_artifacts"].to_string();
    for why in [
        "\\\"passwd.csv\\\": not a regular file",
        "\\\"big.png\\\": 2000 bytes",
        "\\\"tool.exe\\\": only",
    ] {
        assert!(skipped.contains(why), "{why} in {skipped}");
    }
    assert!(!result
        .artifacts
        .iter()
        .any(|a| a.content_b64.contains("cm9vd")));
}

#[tokio::test]
async fn a_missing_work_folder_and_a_missing_interpreter_are_named() {
    let sshd = Sshd::get();
    let work = sshd.work_dir();
    let gone = format!("{}/not-there", work.path().display());
    let provider = sshd.provider(
        &work,
        json!({ "work_dir": gone, "node_bin": "/nonexistent/node" }),
    );

    let health = provider.health().await;
    let error = crate::helpers::run_once(&provider, &request(Language::Python, "print(1)", None))
        .await
        .unwrap_err();

    assert!(!health.healthy);
    assert!(
        health.message.contains("/nonexistent/node"),
        "{}",
        health.message
    );
    assert!(
        health.message.contains(&format!("a writable {gone}")),
        "{}",
        health.message
    );
    let text = error.to_string();
    assert!(text.contains("does the work folder exist"), "{text}");
}
