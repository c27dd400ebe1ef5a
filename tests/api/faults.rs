//! Reliability under faults (issue 14): runs whose clients hang up, a full disk, a held write
//! lock, saves under traffic, concurrent saves, frozen sandbox supervisors and daemons, and a
//! burst of pages against a small database pool. Docker cases run under runc and gVisor
//! against the dockerd that `make test` starts; none of them skips.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::{
    docker_provider::{our_containers, settings as docker_settings, RUNTIMES},
    helpers::{spawn_app_in, spawn_app_stoppable, spawn_app_with, TestApp},
    metrics::metric,
    own_dockerd::OwnDockerd,
    wait::wait_until,
};

const SPIN: &str = "def main():\n    while True:\n        pass\n";
const HELLO: &str = "def main():\n    return 'hi'\n";

/// Sets `provider` active with `config` through RAGFlow's admin API.
pub async fn configure(app: &TestApp, admin: &str, provider: &str, config: Value) {
    let response = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            admin,
            &json!({"provider_type": provider, "config": config}),
        )
        .await;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(status, 200, "configure {provider}: {body}");
}

/// A client that gives up after `after`, as an agent with a short timeout does.
fn impatient(after: Duration) -> reqwest::Client {
    reqwest::Client::builder().timeout(after).build().unwrap()
}

/// Starts `count` runs of `code` on `provider` (the active one) and hangs up on each once the
/// console holds them all, running or in line (its pool metrics say so): not after a fixed
/// time, in which a busy machine may not even have read the requests.
async fn hang_up(
    app: &TestApp,
    admin: &str,
    provider: &str,
    key: &str,
    count: usize,
    code: &str,
    timeout: u32,
) {
    let client = impatient(Duration::from_secs(120));
    let mut hung = Vec::new();
    for _ in 0..count {
        let request = client
            .post(app.url("/api/v1/execute"))
            .bearer_auth(key)
            .json(&json!({"language": "python", "code": code, "timeout": timeout}));
        hung.push(tokio::spawn(request.send()));
    }
    let busy = format!("sandbox_pool_busy{{provider=\"{provider}\"}}");
    let waiting = format!("sandbox_pool_waiting{{provider=\"{provider}\"}}");
    wait_until(&format!("the console to hold all {count} runs"), || {
        let (busy, waiting) = (&busy, &waiting);
        async move {
            metric(app, admin, busy).await + metric(app, admin, waiting).await >= count as f64
        }
    })
    .await;
    for request in &hung {
        request.abort();
    }
    for request in hung {
        assert!(
            request.await.is_err_and(|e| e.is_cancelled()),
            "the client hung up before the run ended"
        );
    }
}

async fn history_rows(app: &TestApp) -> Vec<(String, String)> {
    sqlx::query_as("select status, source from execution order by id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// Waits until the history holds `count` rows (runs record when they end, not when asked).
async fn wait_for_history(app: &TestApp, count: usize, within: Duration) -> Vec<(String, String)> {
    let started = Instant::now();
    loop {
        let rows = history_rows(app).await;
        if rows.len() >= count || started.elapsed() > within {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Local sandboxes of the console on `data_dir` alive now: each keeps a private folder in
/// the console's run folder for exactly as long as it runs.
fn local_sandboxes(data_dir: &Path) -> usize {
    std::fs::read_dir(data_dir.join(crate::helpers::RUNS))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(sandbox_console::sandbox::providers::local::RUN_FOLDER_PREFIX)
                })
                .count()
        })
        .unwrap_or(0)
}

/// Samples `count()` every 50 ms until `done` is set; returns the highest value seen.
fn watch_peak(
    count: impl Fn() -> usize + Send + 'static,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut peak = 0;
        while !done.load(Ordering::SeqCst) {
            peak = peak.max(count());
            std::thread::sleep(Duration::from_millis(50));
        }
        peak
    })
}

#[tokio::test]
async fn local_runs_whose_clients_hang_up_stay_inside_the_limit_and_are_recorded() {
    let app = spawn_app_with(|_| {}).await;
    let admin = app.api_key("ops", &["admin"]).await;
    configure(
        &app,
        &admin,
        "local",
        json!({"max_concurrent_runs": 2, "queue_wait_secs": 60, "timeout_secs": 6}),
    )
    .await;
    let key = app.api_key("agent", &["execute"]).await;
    let runs = app.data_dir.path().to_owned();
    let done = Arc::new(AtomicBool::new(false));
    let peak = watch_peak(move || local_sandboxes(&runs), done.clone());
    let busy_peak = Arc::new(AtomicUsize::new(0));
    let busy_watch = {
        let (app, admin, busy_peak, done) = (
            app.sibling(),
            admin.clone(),
            busy_peak.clone(),
            done.clone(),
        );
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                let busy = metric(&app, &admin, "sandbox_pool_busy{provider=\"local\"}").await;
                busy_peak.fetch_max(busy as usize, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    hang_up(&app, &admin, "local", &key, 6, SPIN, 6).await;
    let normal = app
        .post_json(
            "/api/v1/execute",
            &key,
            &json!({"language": "python", "code": HELLO}),
        )
        .await;
    let normal_status = normal.status().as_u16();
    let rows = wait_for_history(&app, 7, Duration::from_secs(60)).await;
    done.store(true, Ordering::SeqCst);
    let peak = peak.join().unwrap();
    busy_watch.await.unwrap();

    assert_eq!(normal_status, 200, "the patient client's run answers");
    assert!(
        peak <= 2,
        "at most max_concurrent_runs = 2 sandboxes at once, saw {peak}"
    );
    assert_eq!(
        busy_peak.load(Ordering::SeqCst),
        2,
        "the pool metric counts the hung-up runs as busy while they run"
    );
    assert_eq!(rows.len(), 7, "every run has its history row: {rows:?}");
    let timeouts = rows
        .iter()
        .filter(|(status, _)| status == "timeout")
        .count();
    assert_eq!(
        timeouts, 6,
        "the hung-up runs ran to their own limit: {rows:?}"
    );
    assert_eq!(
        metric(
            &app,
            &admin,
            "sandbox_executions_total{provider=\"local\",status=\"timeout\",source=\"rest\"}"
        )
        .await,
        6.0,
        "and are counted"
    );
    assert_eq!(
        local_sandboxes(app.data_dir.path()),
        0,
        "no sandbox is left"
    );
}

#[tokio::test]
async fn docker_runs_whose_clients_hang_up_stay_in_the_pool_and_nothing_outlives_the_console() {
    for runtime in RUNTIMES {
        let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |_| {}).await;
        let admin = app.api_key("ops", &["admin"]).await;
        configure(
            &app,
            &admin,
            "docker",
            Value::Object(docker_settings(
                runtime,
                json!({"timeout_secs": 3, "queue_wait_secs": 60}),
            )),
        )
        .await;
        let key = app.api_key("agent", &["execute"]).await;
        let done = Arc::new(AtomicBool::new(false));
        // Two per language: four containers at most, whatever the clients do.
        let peak = watch_peak(|| our_containers().len(), done.clone());

        hang_up(&app, &admin, "docker", &key, 4, SPIN, 3).await;
        let rows = wait_for_history(&app, 4, Duration::from_secs(90)).await;
        // Strict mode replaces each used container in the background: the watch goes on
        // until the pool is whole again.
        wait_until("the pool to be refilled to 2 per language", || {
            let whole = our_containers().len() == 4;
            async move { whole }
        })
        .await;
        done.store(true, Ordering::SeqCst);
        let peak = peak.join().unwrap();
        let during = our_containers().len();
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();

        assert!(
            peak <= 4,
            "{runtime}: a pool of 2 per language never has more than 4 containers, saw {peak}"
        );
        assert_eq!(
            rows.len(),
            4,
            "{runtime}: every hung-up run has its history row: {rows:?}"
        );
        assert!(
            rows.iter().all(|(status, _)| status == "timeout"),
            "{runtime}: each ran to its own deadline: {rows:?}"
        );
        assert!(during <= 4, "{runtime}: {during} containers after the runs");
        assert_eq!(
            our_containers(),
            Vec::<String>::new(),
            "{runtime}: nothing outlives the console"
        );
    }
}

/// A tmpfs of `size` mounted on a fresh folder, lazily unmounted when dropped.
pub struct Tmpfs {
    dir: TempDir,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            status.success(),
            "mounting a tmpfs needs root (CI runs as root)"
        );
        Tmpfs { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system: writes until it is full.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while file.write_all(&chunk).is_ok() {}
        let small = [0u8; 512];
        while file.write_all(&small).is_ok() {}
        let _ = file.sync_all();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-console");

/// The console's CLI on `data_dir`: (exit code, stdout, stderr).
fn cli(data_dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = crate::helpers::console_command(data_dir)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("the console binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A failure told in one `error: …` line (log lines aside), with no backtrace or panic.
fn one_error_line(stderr: &str) -> bool {
    stderr.lines().filter(|l| l.starts_with("error: ")).count() == 1
        && !stderr.contains("backtrace")
        && !stderr.contains("panicked")
}

async fn key_works(app: &TestApp, key: &str) -> bool {
    app.get_with_key("/api/v1/providers", key)
        .await
        .status()
        .is_success()
}

#[tokio::test]
async fn a_full_disk_never_reports_a_write_that_did_not_happen() {
    if crate::helpers::sqlite_only("a full disk under the database file") {
        return;
    }
    let disk = Tmpfs::mount("24m");
    let data = tempfile::tempdir_in(disk.path()).unwrap();
    let data_path = data.path().to_owned();
    // Runs keep their folders off the full disk: only the database's writes are in question.
    let runs = tempfile::tempdir().unwrap();
    let app = spawn_app_in(data, |config| config.run_dir = Some(runs.path().to_owned())).await;
    let runner = app.api_key("runner", &["execute"]).await;
    let doomed = app.api_key("doomed", &["execute"]).await;
    let ops = app.api_key("ops", &["admin"]).await;
    // Used once now, so their last use is fresh and needs no write while the disk is full.
    assert!(key_works(&app, &runner).await && key_works(&app, &doomed).await);
    let filler = disk.fill();

    let ragflow = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &ops,
            &json!({"provider_type": "local", "config": {"timeout_secs": 8}}),
        )
        .await;
    let ragflow_status = ragflow.status().as_u16();
    let ragflow_body: Value = ragflow.json().await.unwrap_or(Value::Null);

    let (revoke_code, revoke_out, revoke_err) =
        cli(&data_path, &["api-key", "revoke", "--name", "doomed"]);
    let still_works = key_works(&app, &doomed).await;
    let (create_code, create_out, create_err) = cli(
        &data_path,
        &["api-key", "create", "--name", "ghost", "--scope", "execute"],
    );
    let ghost_works = create_code == 0 && key_works(&app, create_out.trim()).await;
    let (configure_code, _, configure_err) = cli(
        &data_path,
        &[
            "configure",
            "--provider",
            "local",
            "--set",
            "timeout_secs=7",
        ],
    );
    let ready = app.get("/readyz").await.status().as_u16();
    // Runs still answer while the disk is full; their rows wait for room.
    let before = history_rows(&app).await.len();
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(
            app.post_json(
                "/api/v1/execute",
                &runner,
                &json!({"language": "python", "code": HELLO}),
            )
            .await
            .status()
            .as_u16(),
        );
    }
    std::fs::remove_file(filler).unwrap();
    let rows = wait_for_history(&app, before + 5, Duration::from_secs(30)).await;

    assert!(
        !(revoke_code == 0 && still_works),
        "`api-key revoke` exited 0 ({revoke_out}) while the key kept working"
    );
    assert!(
        revoke_code == 0 || one_error_line(&revoke_err),
        "a failed revoke says so in one line: {revoke_err}"
    );
    assert!(
        create_code != 0 || ghost_works,
        "`api-key create` exited 0 but the key does not exist ({create_err})"
    );
    assert_ne!(configure_code, 0, "configure cannot save on a full disk");
    assert!(
        one_error_line(&configure_err),
        "configure fails in one clear line, no backtrace: {configure_err}"
    );
    assert_eq!(ready, 503, "a console that cannot write is not ready");
    assert_eq!(
        (ragflow_status, ragflow_body["code"].clone()),
        (500, json!(500)),
        "RAGFlow's admin API answers a failed save as a server error in its envelope: {ragflow_body}"
    );
    assert!(
        runs.iter().all(|s| *s == 200),
        "runs answer on a full disk: {runs:?}"
    );
    assert_eq!(
        rows.len(),
        before + 5,
        "the rows of the runs made on a full disk are written once there is room"
    );
    assert_eq!(
        app.get("/readyz").await.status().as_u16(),
        200,
        "ready again"
    );
}

#[tokio::test]
async fn a_held_write_lock_loses_no_history_and_makes_the_console_unready() {
    if crate::helpers::sqlite_only("another process's write lock") {
        return;
    }
    let app = spawn_app_with(|_| {}).await;
    app.login().await;
    let key = app.api_key("agent", &["execute"]).await;
    assert!(key_works(&app, &key).await);
    let file = app.data_dir.path().join("sandbox-console.db");
    let before = history_rows(&app).await.len();
    // Another process's `BEGIN EXCLUSIVE`, held for longer than the 5 s busy timeout.
    let mut holder = Command::new("/usr/bin/python3.11")
        .arg("-c")
        .arg(
            "import sqlite3, sys, time\n\
             db = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)\n\
             db.execute('begin exclusive')\n\
             print('locked', flush=True)\n\
             time.sleep(9)\n\
             db.execute('rollback')\n",
        )
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
    }

    let mut runs = Vec::new();
    for _ in 0..3 {
        let app = app.sibling();
        let key = key.clone();
        runs.push(tokio::spawn(async move {
            app.post_json(
                "/api/v1/execute",
                &key,
                &json!({"language": "python", "code": HELLO}),
            )
            .await
            .status()
            .as_u16()
        }));
    }
    let ready = app.get("/readyz").await.status().as_u16();
    let page = app.get("/admin/history").await;
    let page_status = page.status().as_u16();
    let page_body = page.text().await.unwrap();
    let mut statuses = Vec::new();
    for run in runs {
        statuses.push(run.await.unwrap());
    }
    holder.wait().unwrap();
    let rows = wait_for_history(&app, before + 3, Duration::from_secs(30)).await;

    assert_eq!(
        statuses,
        [200, 200, 200],
        "runs answer while the lock is held"
    );
    assert_eq!(ready, 503, "a console that cannot write is not ready");
    assert!(
        page_status == 200 || (page_status >= 500 && page_body.contains("<h1>")),
        "a page answers with content or a real error page, never an empty error: {page_status} {page_body:?}"
    );
    assert_eq!(rows.len(), before + 3, "no history row is lost: {rows:?}");
    assert_eq!(
        app.get("/readyz").await.status().as_u16(),
        200,
        "ready again"
    );
}

#[tokio::test]
async fn saving_docker_settings_under_a_stream_of_runs_fails_no_run() {
    for runtime in RUNTIMES {
        let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |_| {}).await;
        let admin = app.api_key("ops", &["admin"]).await;
        let key = app.api_key("agent", &["execute"]).await;
        configure(
            &app,
            &admin,
            "docker",
            Value::Object(docker_settings(runtime, json!({"queue_wait_secs": 60}))),
        )
        .await;
        let saving = Arc::new(AtomicBool::new(true));
        let answered = Arc::new(AtomicUsize::new(0));
        let mut streams = Vec::new();
        for stream in 0..4 {
            // A run may queue for the whole queue wait (60 s) behind pools the saves replace.
            let app = app.patient_sibling(Duration::from_secs(180));
            let (key, saving) = (key.clone(), saving.clone());
            let answered = answered.clone();
            streams.push(tokio::spawn(async move {
                let mut answers = Vec::new();
                while saving.load(Ordering::SeqCst) {
                    let (path, body) = if stream % 2 == 0 {
                        (
                            "/api/v1/execute",
                            json!({"language": "python", "code": HELLO}),
                        )
                    } else {
                        (
                            "/run",
                            json!({"language": "python", "code_b64": base64_of(HELLO)}),
                        )
                    };
                    let response = app.post_json(path, &key, &body).await;
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    answers.push((path, status, body));
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                answers
            }));
        }
        // Twenty saves at least, a second apart, and on until twenty runs have answered
        // meanwhile, however slowly a busy machine runs them.
        let started = Instant::now();
        let mut save = 0;
        while save < 20 || answered.load(Ordering::SeqCst) < 20 {
            assert!(
                started.elapsed() < crate::wait::PATIENCE * 3,
                "{runtime}: only {} runs answered during {save} saves",
                answered.load(Ordering::SeqCst)
            );
            configure(
                &app,
                &admin,
                "docker",
                Value::Object(docker_settings(
                    runtime,
                    json!({"queue_wait_secs": 60, "timeout_secs": 5 + save % 2}),
                )),
            )
            .await;
            save += 1;
            tokio::time::sleep(Duration::from_millis(1000)).await;
        }
        saving.store(false, Ordering::SeqCst);
        let mut answers = Vec::new();
        for stream in streams {
            answers.extend(stream.await.unwrap());
        }
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();

        let failed: Vec<_> = answers
            .iter()
            .filter(|(path, status, body)| {
                *status != 200
                    || if *path == "/run" {
                        body["exit_code"] != 0
                    } else {
                        body["status"] != "success"
                    }
            })
            .collect();
        assert!(
            failed.is_empty(),
            "{runtime}: {} of {} runs failed around saves: {:?}",
            failed.len(),
            answers.len(),
            failed.iter().take(3).collect::<Vec<_>>()
        );
        assert_eq!(
            our_containers(),
            Vec::<String>::new(),
            "{runtime}: nothing left"
        );
    }
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn concurrent_admin_saves_leave_the_latest_stored_settings_running() {
    let app = spawn_app_with(|_| {}).await;
    let admin = app.api_key("ops", &["admin"]).await;
    let other = app.api_key("ops2", &["admin"]).await;
    for pair in 0..40 {
        let (a, b) = (app.sibling(), app.sibling());
        let (ka, kb) = (admin.clone(), other.clone());
        let first = tokio::spawn(async move {
            configure(&a, &ka, "local", json!({"max_concurrent_runs": 3})).await
        });
        let second = tokio::spawn(async move {
            configure(&b, &kb, "local", json!({"max_concurrent_runs": 4})).await
        });
        first.await.unwrap();
        second.await.unwrap();
        let stored: (String, String) = sqlx::query_as(
            "select value, updated_by from system_setting where name = 'sandbox.local'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let stored_runs = serde_json::from_str::<Value>(&stored.0).unwrap()["max_concurrent_runs"]
            .as_u64()
            .unwrap();
        let running = metric(&app, &admin, "sandbox_pool_size{provider=\"local\"}").await as u64;
        let audited: String = sqlx::query_scalar(
            "select actor from settings_audit where setting = 'sandbox.local' order by id desc limit 1",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(
            running, stored_runs,
            "pair {pair}: the running provider is built from the stored latest version"
        );
        assert_eq!(
            audited, stored.1,
            "pair {pair}: the newest audit row names who wrote the stored version"
        );
    }
}

/// The processes `pid`'s threads started.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|task| {
            std::fs::read_to_string(task.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn is_program(pid: u32) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    comm.starts_with("python") || comm.starts_with("node")
}

/// Whether a python or node program runs somewhere under `pid`.
fn runs_a_program(pid: u32) -> bool {
    children_of(pid)
        .into_iter()
        .any(|child| is_program(child) || runs_a_program(child))
}

/// Stops (SIGSTOP) the sandbox supervisors under `root`: its children that are not programs
/// themselves and already run one (so a process is never caught between fork and exec).
fn freeze_supervisors(root: u32) -> Vec<u32> {
    let mut frozen = Vec::new();
    for child in children_of(root) {
        if !is_program(child) && runs_a_program(child) {
            Command::new("kill")
                .args(["-STOP", &child.to_string()])
                .status()
                .unwrap();
            frozen.push(child);
        }
    }
    frozen
}

#[tokio::test]
async fn a_frozen_local_sandbox_supervisor_is_killed_at_the_outer_deadline() {
    let app = spawn_app_with(|_| {}).await;
    let key = app.api_key("agent", &["execute"]).await;
    let started = Instant::now();
    let run = {
        let (app, key) = (app.sibling(), key.clone());
        tokio::spawn(async move {
            let response = app
                .post_json(
                    "/api/v1/execute",
                    &key,
                    &json!({"language": "python", "code": SPIN, "timeout": 2}),
                )
                .await;
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        })
    };
    let mut frozen = Vec::new();
    wait_until("the sandbox supervisor to start", || {
        frozen = freeze_supervisors(std::process::id());
        let found = !frozen.is_empty();
        async move { found }
    })
    .await;
    let (status, body) = run.await.unwrap();
    let took = started.elapsed();

    assert!(!frozen.is_empty(), "found the sandbox supervisor to freeze");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "timeout", "{body}");
    assert!(
        took < Duration::from_secs(15),
        "a 2 s run with a frozen supervisor ends at its outer deadline, not {took:?}"
    );
    assert_eq!(
        local_sandboxes(app.data_dir.path()),
        0,
        "the frozen sandbox is gone"
    );
}

#[tokio::test]
async fn a_page_burst_against_a_small_database_pool_is_queued_or_refused_never_500() {
    let app = spawn_app_with(|config| {
        config.database_connections = 2;
        config.max_page_requests = 2;
        config.page_queue_secs = 3;
        // 200 at once from this one address: the database pool's queue is under test here,
        // not the per-address cap (`fair_limits`).
        config.max_connections_per_address = 256;
    })
    .await;
    app.login().await;
    let mut loads = Vec::new();
    for i in 0..200 {
        let app = app.same_session();
        let path = [
            "/",
            "/admin/history",
            "/admin/sandbox-settings",
            "/admin/api-keys",
        ][i % 4];
        loads.push(tokio::spawn(async move {
            let response = app.get(path).await;
            let retry = response.headers().contains_key("retry-after");
            (response.status().as_u16(), retry)
        }));
    }
    let mut statuses = std::collections::BTreeMap::new();
    let mut busy_without_retry = 0;
    for load in loads {
        let (status, retry) = load.await.unwrap();
        *statuses.entry(status).or_insert(0) += 1;
        if status == 503 && !retry {
            busy_without_retry += 1;
        }
    }
    assert!(
        statuses.keys().all(|s| *s == 200 || *s == 503),
        "only pages or 503s: {statuses:?}"
    );
    assert!(statuses.get(&200).copied().unwrap_or(0) > 0, "{statuses:?}");
    assert_eq!(busy_without_retry, 0, "every 503 says when to retry");
}

#[tokio::test]
async fn a_frozen_dockerd_holds_neither_runs_nor_pages() {
    let daemon = OwnDockerd::start();
    let app = spawn_app_with(|_| {}).await;
    app.login().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    daemon.signal("-STOP");
    configure(
        &app,
        &admin,
        "docker",
        Value::Object(docker_settings(
            "runc",
            json!({"docker_host": daemon.host(), "queue_wait_secs": 5, "timeout_secs": 2}),
        )),
    )
    .await;

    let started = Instant::now();
    let run = app
        .post_json(
            "/api/v1/execute",
            &key,
            &json!({"language": "python", "code": HELLO, "timeout": 2}),
        )
        .await;
    let run_status = run.status().as_u16();
    let run_took = started.elapsed();
    let started = Instant::now();
    let page = app.get("/admin/sandbox-settings").await;
    let page_status = page.status().as_u16();
    let page_body = page.text().await.unwrap();
    let page_took = started.elapsed();
    let started = Instant::now();
    let providers = app.get_with_key("/api/v1/providers", &key).await;
    let providers_status = providers.status().as_u16();
    let providers_took = started.elapsed();
    drop(daemon);

    assert!(
        matches!(run_status, 429 | 502 | 504),
        "the run fails typed: {run_status}"
    );
    // The outer deadline: the queue wait (5 s), the run (2 s) and 20 s for the rest.
    assert!(
        run_took < Duration::from_secs(35),
        "a 2 s run against a frozen daemon ends at its outer deadline, not {run_took:?}"
    );
    assert_eq!(page_status, 200);
    assert!(
        page_body.contains("did not answer its health check"),
        "the page says the backend is not answering"
    );
    assert!(
        page_took < Duration::from_secs(10),
        "the settings page does not wait on the frozen daemon: {page_took:?}"
    );
    assert_eq!(providers_status, 200);
    assert!(
        providers_took < Duration::from_secs(10),
        "{providers_took:?}"
    );
}

/// A child process that is killed and reaped when dropped (a failing test leaves none).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn sigterm_ends_within_the_grace_with_half_sent_requests_and_long_runs() {
    let data = tempfile::tempdir().unwrap();
    let (code, key, err) = cli(
        data.path(),
        &["api-key", "create", "--name", "agent", "--scope", "execute"],
    );
    assert_eq!(code, 0, "{err}");
    let key = key.trim().to_owned();
    let (code, _, err) = cli(
        data.path(),
        &[
            "configure",
            "--provider",
            "local",
            "--set",
            "timeout_secs=60",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut server = Reaped(
        crate::helpers::console_command(data.path())
            .args(["--listen", "127.0.0.1:0", "--shutdown-grace-secs", "3"])
            .env("ADMIN_PASSWORD", "correct horse battery")
            .env("SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT", "false")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let server = &mut server.0;
    let address = crate::helpers::listening_address(server);
    let host = address.trim_start_matches("http://").to_owned();
    // A request whose body never finishes.
    let mut half = tokio::net::TcpStream::connect(&host).await.unwrap();
    {
        use tokio::io::AsyncWriteExt;
        half.write_all(
            format!(
                "POST /api/v1/execute HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {key}\r\n\
                 content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"language\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    }
    // A run that would take 25 s.
    let long = {
        let (address, key) = (address.clone(), key.clone());
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(format!("{address}/api/v1/execute"))
                .bearer_auth(key)
                .json(&json!({"language": "python", "code": "import time\ndef main():\n    time.sleep(25)\n", "timeout": 30}))
                .send()
                .await;
            response.map(|r| r.status().as_u16()).ok()
        })
    };
    wait_until("the long run to start its sandbox", || {
        let started = local_sandboxes(data.path()) == 1;
        async move { started }
    })
    .await;
    let stopping = Instant::now();
    Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    let mut exited = None;
    while stopping.elapsed() < Duration::from_secs(30) {
        if let Some(status) = server.try_wait().unwrap() {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = stopping.elapsed();
    let long = long.await.unwrap();
    drop(half);
    let pool = crate::helpers::open_database(data.path()).await;
    let rows: Vec<(String, Option<String>)> = sqlx::query_as("select status, error from execution")
        .fetch_all(&pool)
        .await
        .unwrap();

    let exited = exited.expect("the console exits after SIGTERM");
    assert!(exited.success(), "{exited:?}");
    assert!(
        took < Duration::from_secs(12),
        "grace 3 s, then cancel and exit: took {took:?}"
    );
    assert_eq!(long, Some(503), "the cancelled run is answered");
    assert_eq!(
        rows.len(),
        1,
        "the cancelled run is in the history: {rows:?}"
    );
    assert!(
        rows[0]
            .1
            .as_deref()
            .unwrap_or_default()
            .contains("shutting down"),
        "{rows:?}"
    );
    assert_eq!(local_sandboxes(data.path()), 0, "its sandbox is gone");
}

#[test]
fn read_only_commands_create_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .current_dir(cwd.path())
            .env_remove("SANDBOX_CONSOLE_DATA_DIR")
            .env_remove("DATABASE_URL")
            .output()
            .unwrap()
    };
    let providers = run(&["providers"]);
    let keys = run(&["api-key", "list"]);
    let left: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().flatten().collect();

    assert!(providers.status.success(), "{providers:?}");
    let listed = String::from_utf8_lossy(&providers.stdout);
    assert!(
        listed.contains("local") && listed.contains("docker"),
        "{listed}"
    );
    assert!(
        !listed.contains("(active)"),
        "nothing is configured yet: {listed}"
    );
    assert!(keys.status.success(), "{keys:?}");
    assert!(left.is_empty(), "read-only commands created {left:?}");

    // With a database (the default one, ./data, on either pass), they read it and change
    // nothing in it.
    let configured = run(&[
        "configure",
        "--provider",
        "local",
        "--set",
        "timeout_secs=9",
        "--activate",
    ]);
    assert!(configured.status.success(), "{configured:?}");
    let files = |dir: &Path| -> Vec<(String, u64)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        files.sort();
        files
    };
    // SQLite's companions of a WAL database (the shared-memory index and the log) are left
    // by whichever connection closes last, or not: a reader may leave them, empty.
    let without_companions = |files: Vec<(String, u64)>| -> Vec<(String, u64)> {
        files
            .into_iter()
            .filter(|(name, size)| {
                !(name.ends_with(".db-shm") || name.ends_with(".db-wal") && *size == 0)
            })
            .collect()
    };
    let before = without_companions(files(&cwd.path().join("data")));
    let providers = run(&["providers"]);
    let listed = String::from_utf8_lossy(&providers.stdout);
    assert!(listed.contains("local (active)"), "{listed}");
    assert_eq!(
        without_companions(files(&cwd.path().join("data"))),
        before,
        "nothing is written: the same files, the same sizes, an empty log"
    );
}
