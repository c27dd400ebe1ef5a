//! Several consoles on one PostgreSQL database: three real console processes, each with its own
//! data directory and port, one schema. Runs on the PostgreSQL pass (on the SQLite pass it
//! says so and checks nothing: replicas need a shared server database).

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::{json, Value};
use sqlx::AnyPool;
use tempfile::TempDir;

use crate::{
    helpers::{
        listening_address, on_postgres, postgres_url_for, TestApp, ADMIN, BIN, PASSWORD, RUNS,
        TEST_SECRET_KEY,
    },
    wait::wait_until,
};

/// One console process; killed (SIGKILL) when dropped.
struct Replica {
    child: Child,
    address: String,
    _data_dir: TempDir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failed test shows what each console warned about.
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self._data_dir.path().join("console.log"))
                .unwrap_or_default();
            eprintln!("--- console at {} warned:\n{log}", self.address);
        }
    }
}

impl Replica {
    /// Its local sandboxes running now (each keeps a folder in its run folder meanwhile).
    fn sandboxes(&self) -> usize {
        std::fs::read_dir(self._data_dir.path().join(RUNS)).map_or(0, |dir| dir.count())
    }
}

/// Starts `names.len()` consoles on the database `url` at once (so they race for the
/// migrations and the first administrator as replicas of one deployment do).
fn start_replicas(url: &str, names: &[&str], extra: &[&str]) -> Vec<Replica> {
    let mut started: Vec<(Child, TempDir)> = names
        .iter()
        .map(|name| {
            let data_dir = tempfile::tempdir().unwrap();
            let child = Command::new(BIN)
                .args(["--listen", "127.0.0.1:0", "--replica-name", name])
                .arg("--data-dir")
                .arg(data_dir.path())
                .arg("--run-dir")
                .arg(data_dir.path().join(RUNS))
                .arg("--database-url")
                .arg(url)
                .args(extra)
                .env_remove("DATABASE_URL")
                .env("SANDBOX_CONSOLE_SECRET_KEY", TEST_SECRET_KEY)
                .env("ADMIN_USERNAME", ADMIN)
                .env("ADMIN_PASSWORD", PASSWORD)
                .env("SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT", "false")
                .env("RUST_LOG", "sandbox_console=warn")
                .stdout(Stdio::piped())
                .stderr(std::fs::File::create(data_dir.path().join("console.log")).unwrap())
                .spawn()
                .expect("the console starts");
            (child, data_dir)
        })
        .collect();
    started
        .iter_mut()
        .map(|(child, _)| listening_address(child))
        .collect::<Vec<_>>()
        .into_iter()
        .zip(started)
        .map(|(address, (child, data_dir))| Replica {
            child,
            address,
            _data_dir: data_dir,
        })
        .collect()
}

/// A client of `replica` sharing `jar`'s cookies with the other clients made from it.
fn client_of(replica: &Replica, pool: &AnyPool, like: Option<&TestApp>) -> TestApp {
    match like {
        Some(app) => app.at(&replica.address),
        None => TestApp::remote(&replica.address, pool.clone()),
    }
}

async fn execute(app: &TestApp, key: &str, code: &str) -> (u16, Value) {
    let body = json!({"language": "python", "code": code});
    crate::gateway::execute(app, key, body).await
}

/// Saves the local provider's timeout through the settings form, as `expected` version.
async fn save_timeout(app: &TestApp, expected: i64, secs: u32) -> Value {
    let (expected, secs) = (expected.to_string(), secs.to_string());
    app.call_ok(
        "save_sandbox_settings",
        &[
            ("kind", "local"),
            ("expected_version", &expected),
            ("values[timeout_secs]", &secs),
        ],
    )
    .await
}

async fn local_version(pool: &AnyPool) -> i64 {
    sqlx::query_scalar("select version from system_setting where name = 'sandbox.local'")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn three_replicas_on_one_database_agree() {
    if !on_postgres() {
        eprintln!("three_replicas_on_one_database_agree: runs on the PostgreSQL pass");
        return;
    }
    let shared = tempfile::tempdir().unwrap();
    let url = postgres_url_for(shared.path()).unwrap();
    let replicas = start_replicas(
        &url,
        &["a", "b", "c"],
        &["--api-rate-limit", "6", "--housekeeping-secs", "3600"],
    );
    let pool = sandbox_console::server::db::connect(&url).await.unwrap();
    let [a, b, c] = [&replicas[0], &replicas[1], &replicas[2]];

    // One first administrator, whoever of the three made it.
    let admins: i64 = sqlx::query_scalar("select count(*) from admin_user")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(admins, 1);

    // Signed in on A, the same cookie is a session on B and C.
    let on_a = client_of(a, &pool, None);
    on_a.login().await;
    let (on_b, on_c) = (
        client_of(b, &pool, Some(&on_a)),
        client_of(c, &pool, Some(&on_a)),
    );
    for (name, app) in [("B", &on_b), ("C", &on_c)] {
        let page = app.get("/admin/sandbox-settings").await;
        assert_eq!(
            page.status().as_u16(),
            200,
            "the session made on A is valid on {name}"
        );
    }

    // The per-key rate limit (6 a minute) counts requests spread over A, B and C.
    let limited = on_a.api_key("spread", &["execute"]).await;
    let mut statuses = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for app in [&on_a, &on_b, &on_c].repeat(3) {
        let response = app.get_with_key("/api/v1/providers", &limited).await;
        statuses.push(response.status().as_u16());
        if response.status().is_success() {
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["replica"]["admission"], "per_replica", "{body}");
            assert_eq!(body["replica"]["database"], "postgresql", "{body}");
            names.insert(body["replica"]["name"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        6,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(names, ["a", "b", "c"].map(String::from).into());

    // A save on B applies on C's next run: 2.5 s of work passes under the default timeout,
    // and is cut at the 1 s saved on B.
    let runner = on_a.api_key("runner", &["execute"]).await;
    let slow = "import time\ndef main():\n    time.sleep(2.5)\n    return 'done'\n";
    let (status, before) = execute(&on_c, &runner, slow).await;
    assert_eq!(
        (status, before["status"].as_str()),
        (200, Some("success")),
        "{before}"
    );
    let version = local_version(&pool).await;
    let saved = save_timeout(&on_b, version, 1).await;
    assert_eq!(saved["Saved"]["version"], version + 1, "{saved}");
    let (status, after) = execute(&on_c, &runner, slow).await;
    assert_eq!(
        (status, after["status"].as_str()),
        (200, Some("timeout")),
        "{after}"
    );

    // Two saves of the same version, on A and on C at once: one wins, one gets the conflict.
    let version = local_version(&pool).await;
    let (first, second) = tokio::join!(
        save_timeout(&on_a, version, 20),
        save_timeout(&on_c, version, 30)
    );
    let outcomes = [&first, &second];
    assert_eq!(
        outcomes.iter().filter(|o| o.get("Saved").is_some()).count(),
        1,
        "{first} {second}"
    );
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.get("Conflict").is_some())
            .count(),
        1,
        "{first} {second}"
    );
    assert_eq!(local_version(&pool).await, version + 1);

    // The housekeeping jobs ran once for the three of them (each claimed its first round).
    for job in ["retention", "sweep"] {
        let (runs, by) = sandbox_console::server::db::background_job::runs(&pool, job)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("the {job} job ran"));
        assert_eq!(runs, 1, "{job} ran once, by {by}");
        assert!(["a", "b", "c"].contains(&by.as_str()), "{by}");
    }

    // A run that A finishes before it dies stays in the history under A's name.
    let on_a_code = "def main():\n    return 'on a'\n";
    let (status, body) = execute(&on_a, &runner, on_a_code).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("success")),
        "{body}"
    );

    // kill -9 A while runs are under way on all three: B and C keep serving, and every run
    // they answered is in the history.
    let keys = [
        on_a.api_key("runs-a", &["execute"]).await,
        on_a.api_key("runs-b", &["execute"]).await,
        on_a.api_key("runs-c", &["execute"]).await,
    ];
    let mut runs = Vec::new();
    for (n, (app, key)) in [&on_a, &on_b, &on_c].into_iter().zip(&keys).enumerate() {
        for i in 0..4 {
            let app = app.same_session();
            let key = key.clone();
            let code = format!(
                "import time\ndef main():\n    time.sleep(5)\n    return 'replica {n} run {i}'\n"
            );
            let body = json!({"language": "python", "code": code.clone()});
            // Requests to the replica that is killed fail; they must not panic the task.
            let run = tokio::spawn(async move {
                let response = app
                    .client
                    .post(app.url("/api/v1/execute"))
                    .bearer_auth(&key)
                    .json(&body)
                    .send()
                    .await
                    .ok()?;
                let status = response.status().as_u16();
                Some((status, response.json::<Value>().await.ok()?))
            });
            runs.push((n, code, run));
        }
    }
    wait_until("runs to be under way on all three", || {
        let under_way = replicas.iter().all(|replica| replica.sandboxes() > 0);
        async move { under_way }
    })
    .await;
    let mut replicas = replicas;
    let mut killed = replicas.remove(0);
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let mut answered = Vec::new();
    for (n, code, run) in runs {
        let answer = run.await.unwrap();
        if n == 0 {
            continue;
        }
        let (status, body) = answer.expect("B and C answer");
        assert_eq!(
            (status, body["status"].as_str()),
            (200, Some("success")),
            "{body}"
        );
        answered.push((n, code));
    }
    assert_eq!(answered.len(), 8);
    for app in [&on_b, &on_c] {
        assert_eq!(app.get("/readyz").await.status().as_u16(), 200);
        let (status, body) = execute(app, &runner, "def main():\n    return 1\n").await;
        assert_eq!(
            (status, body["status"].as_str()),
            (200, Some("success")),
            "{body}"
        );
    }
    answered.push((0, on_a_code.to_owned()));
    for (n, code) in &answered {
        let hash = sandbox_console::server::db::execution::sha256(code);
        let mut rows = Vec::new();
        for _ in 0..50 {
            rows = sqlx::query_scalar::<_, String>(
                "select replica from execution where code_sha256 = $1",
            )
            .bind(&hash)
            .fetch_all(&pool)
            .await
            .unwrap();
            if !rows.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ran_on = ["a", "b", "c"][*n];
        assert_eq!(
            rows,
            [ran_on],
            "the history has the run {code:?}, from {ran_on}"
        );
    }
    // The history page of any replica shows every replica's runs, names the replica of each,
    // and filters by it.
    let page = on_c.call_ok("execution_history", &[]).await;
    let names: std::collections::BTreeSet<&str> = page["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"].into(), "{}", page["replicas"]);
    let only_b = on_c
        .call_ok("execution_history", &[("filter[replica]", "b")])
        .await;
    let entries = only_b["entries"].as_array().unwrap();
    assert!(entries.len() >= 5, "{only_b}");
    assert!(entries.iter().all(|run| run["replica"] == "b"), "{only_b}");
    let html = on_b
        .get("/admin/history?replica=c")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(r#"data-testid="history-replica">c<"#),
        "the page names the replica"
    );
    assert!(
        !html.contains(r#"data-testid="history-replica">b<"#),
        "filtered to c"
    );

    // The sign-in limit (5 failures of one account from one address) counts failures spread
    // over the replicas: after 2 on B and 3 on C, even the right password waits, on both.
    let guesser = TestApp::remote(&on_b.address, pool.clone());
    for (n, app) in [&on_b, &on_b, &on_c, &on_c, &on_c].into_iter().enumerate() {
        let response = guesser
            .at(&app.address)
            .login_json(ADMIN, "wrong guess")
            .await;
        assert_eq!(response.status().as_u16(), 401, "failure {n}");
    }
    for app in [&on_b, &on_c] {
        let response = guesser.at(&app.address).login_json(ADMIN, PASSWORD).await;
        assert_eq!(
            response.status().as_u16(),
            429,
            "the limit holds on every replica"
        );
    }
}

/// A command run against the shared database seals secrets as the replicas do, or refuses:
/// without SANDBOX_CONSOLE_SECRET_KEY it would make a key of its own that no replica has.
#[test]
fn commands_on_postgresql_need_the_shared_secret_key() {
    let data_dir = tempfile::tempdir().unwrap();
    let Some(url) = postgres_url_for(data_dir.path()) else {
        eprintln!("commands_on_postgresql_need_the_shared_secret_key: runs on the PostgreSQL pass");
        return;
    };
    let refused = Command::new(BIN)
        .args([
            "configure",
            "--provider",
            "local",
            "--set",
            "timeout_secs=5",
        ])
        .arg("--data-dir")
        .arg(data_dir.path())
        .arg("--database-url")
        .arg(&url)
        .env_remove("SANDBOX_CONSOLE_SECRET_KEY")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("SANDBOX_CONSOLE_SECRET_KEY"), "{stderr}");
    assert!(!data_dir.path().join("secret.key").exists());
}
