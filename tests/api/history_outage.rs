//! No history row is lost to a database that refuses writes for a while (2026-12-06 probe,
//! R2-1): rows wait in the spool on the console's disk, drain in batches at the database's
//! speed once it takes writes again (while runs keep coming), and a stop in the middle of the
//! backlog keeps them for the next start. On SQLite another process holds the write lock; on
//! PostgreSQL another session holds the history table locked (writes hang, as on a frozen
//! server), or the server goes away under runs in flight (its socket closes, as when it is
//! stopped) and comes back.

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Value};

use crate::helpers::{on_postgres, open_database, spawn_app_stoppable, TestApp};

const HELLO: &str = "def main():\n    return 'hi'\n";

/// Another process's hold on the history's writes, released on drop or by `release`.
enum Hold {
    Sqlite(std::process::Child),
    Postgres(sqlx::pool::PoolConnection<sqlx::Any>),
}

impl Hold {
    async fn take(data_dir: &std::path::Path) -> Hold {
        if on_postgres() {
            let pool = open_database(data_dir).await;
            let mut connection = pool.acquire().await.unwrap();
            sqlx::query("begin")
                .execute(&mut *connection)
                .await
                .unwrap();
            sqlx::query("lock table execution in access exclusive mode")
                .execute(&mut *connection)
                .await
                .unwrap();
            return Hold::Postgres(connection);
        }
        let file = data_dir.join("sandbox-console.db");
        let mut holder = std::process::Command::new("/usr/bin/python3.11")
            .arg("-c")
            .arg(
                "import sqlite3, sys\n\
                 db = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)\n\
                 db.execute('begin exclusive')\n\
                 print('locked', flush=True)\n\
                 sys.stdin.readline()\n\
                 db.execute('rollback')\n",
            )
            .arg(&file)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Hold::Sqlite(holder)
    }

    async fn release(self) {
        match self {
            Hold::Sqlite(mut holder) => {
                drop(holder.stdin.take());
                holder.wait().unwrap();
            }
            Hold::Postgres(mut connection) => {
                sqlx::query("rollback")
                    .execute(&mut *connection)
                    .await
                    .unwrap();
            }
        }
    }
}

async fn rows(pool: &sqlx::AnyPool) -> (i64, i64) {
    sqlx::query_as("select count(*), count(distinct row_key) from execution where source = 'rest'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Sends `count` runs, `at_once` at a time; every one must answer 200.
async fn runs(app: &TestApp, key: &str, count: usize, at_once: usize) {
    let mut left = count;
    while left > 0 {
        let batch = left.min(at_once);
        let mut sent = Vec::new();
        for _ in 0..batch {
            let (app, key) = (app.sibling(), key.to_owned());
            sent.push(tokio::spawn(async move {
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
        for run in sent {
            assert_eq!(
                run.await.unwrap(),
                200,
                "runs answer while writes are refused"
            );
        }
        left -= batch;
    }
}

async fn metric(app: &TestApp, admin: &str, series: &str) -> f64 {
    let text = app
        .get_with_key("/metrics", admin)
        .await
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_in_the_middle_of_a_backlog_loses_no_row_and_the_next_start_writes_it() {
    let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |_| {}).await;
    let key = app.api_key("agent", &["execute"]).await;
    assert_eq!(
        app.get_with_key("/api/v1/providers", &key)
            .await
            .status()
            .as_u16(),
        200
    );
    let hold = Hold::take(app.data_dir.path()).await;

    runs(&app, &key, 24, 4).await;
    let ready: Value = app.get("/readyz").await.json().await.unwrap();
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    let spool = app.data_dir.path().join("history-spool");
    let spooled: usize = std::fs::read_dir(&spool)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap().lines().count())
        .sum();
    hold.release().await;

    assert_eq!(spooled, 24, "every row waits in the spool after the stop");
    let database = open_database(app.data_dir.path()).await;
    assert_eq!(
        rows(&database).await,
        (0, 0),
        "nothing was written while refused"
    );
    assert!(
        ready["history_backlog"].as_u64().unwrap_or(0) > 0,
        "{ready}"
    );

    // The next start writes them, once each.
    let data = app.data_dir;
    let (again, stop, running) = spawn_app_stoppable(data, |_| {}).await;
    let started = Instant::now();
    while rows(&again.pool).await.0 < 24 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            rows(&again.pool).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(rows(&again.pool).await, (24, 24), "every row once");
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_drains_while_runs_keep_coming_and_drops_nothing() {
    let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |_| {}).await;
    let key = app.api_key("agent", &["execute"]).await;
    let admin = app.api_key("ops", &["admin"]).await;
    assert_eq!(
        app.get_with_key("/api/v1/providers", &key)
            .await
            .status()
            .as_u16(),
        200
    );
    let hold = Hold::take(app.data_dir.path()).await;
    runs(&app, &key, 40, 4).await;
    hold.release().await;

    // Runs keep coming, faster than the old queue's 4 rows a second drained; the backlog is
    // written all the same, and runs go back to being written at once.
    let started = Instant::now();
    let mut sent = 40;
    loop {
        runs(&app, &key, 8, 8).await;
        sent += 8;
        let backlog = metric(&app, &admin, "history_rows_pending ").await;
        if backlog == 0.0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the backlog still holds {backlog} rows"
        );
    }
    let (written, distinct) = rows(&app.pool).await;
    assert_eq!((written, distinct), (sent as i64, sent as i64));
    assert_eq!(
        metric(&app, &admin, "history_rows_dropped_total ").await,
        0.0
    );
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
}

/// A PostgreSQL server that can be stopped and started again, as the console sees it: a
/// socket of the test's own in front of the real server's. Stopped, every connection through
/// it is closed and the socket is gone (a connection attempt fails as on a stopped server).
struct PostgresGate {
    dir: tempfile::TempDir,
    server: PathBuf,
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl PostgresGate {
    /// The gate in front of the server `url` names (`…?host=<socket folder>`).
    fn new(url: &str) -> PostgresGate {
        let folder = url
            .split(['?', '&'])
            .find_map(|part| part.strip_prefix("host="))
            .expect("the PostgreSQL URL names its socket folder");
        let gate = PostgresGate {
            dir: tempfile::tempdir().unwrap(),
            server: PathBuf::from(folder).join(".s.PGSQL.5432"),
            tasks: Arc::default(),
        };
        gate.start();
        gate
    }

    /// `url` reaching the server through the gate.
    fn url(&self, url: &str) -> String {
        let folder = url
            .split(['?', '&'])
            .find_map(|part| part.strip_prefix("host="))
            .unwrap();
        url.replace(
            &format!("host={folder}"),
            &format!("host={}", self.dir.path().display()),
        )
    }

    fn start(&self) {
        let socket = self.dir.path().join(".s.PGSQL.5432");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let (server, tasks) = (self.server.clone(), self.tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let server = server.clone();
                let forward = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::UnixStream::connect(&server).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tasks.lock().unwrap().push(forward.abort_handle());
            }
        });
        self.tasks.lock().unwrap().push(accept.abort_handle());
    }

    fn stop(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
        let _ = std::fs::remove_file(self.dir.path().join(".s.PGSQL.5432"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_stops_under_runs_in_flight_loses_none_of_their_rows() {
    let Some(server) = std::env::var(crate::helpers::POSTGRES_ENV)
        .ok()
        .filter(|url| !url.is_empty())
    else {
        eprintln!("skipped on the SQLite pass: a PostgreSQL server that stops");
        return;
    };
    let gate = PostgresGate::new(&server);
    let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |config| {
        let direct = config.database_url.clone().unwrap();
        config.database_url = Some(gate.url(&direct));
    })
    .await;
    let key = app.api_key("agent", &["execute"]).await;
    let answered = Arc::new(AtomicUsize::new(0));
    let going = Arc::new(AtomicBool::new(true));
    let stopped = Arc::new(AtomicBool::new(false));
    // Per stream: a request begun after the stop has ended (so the one in flight at the
    // stop has too).
    let past_stop: Arc<[AtomicBool; 4]> = Arc::new(Default::default());
    let mut streams = Vec::new();
    for stream in 0..4 {
        let (app, key) = (app.sibling(), key.clone());
        let (answered, going) = (answered.clone(), going.clone());
        let (stopped, past_stop) = (stopped.clone(), past_stop.clone());
        streams.push(tokio::spawn(async move {
            let code = "import time\ndef main():\n    time.sleep(0.3)\n    return 'hi'\n";
            while going.load(Ordering::SeqCst) {
                let after_stop = stopped.load(Ordering::SeqCst);
                let status = app
                    .post_json(
                        "/api/v1/execute",
                        &key,
                        &json!({"language": "python", "code": code}),
                    )
                    .await
                    .status()
                    .as_u16();
                if status == 200 {
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                if after_stop {
                    past_stop[stream].store(true, Ordering::SeqCst);
                }
            }
        }));
    }
    // Stopped once runs are flowing: the four in flight then have no database to write to.
    let started = Instant::now();
    while answered.load(Ordering::SeqCst) < 8 {
        assert!(started.elapsed() < Duration::from_secs(60), "runs flow");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gate.stop();
    stopped.store(true, Ordering::SeqCst);
    // Stopped until every run in flight at the stop has answered.
    let stopping = Instant::now();
    while !past_stop.iter().all(|past| past.load(Ordering::SeqCst)) {
        assert!(
            stopping.elapsed() < Duration::from_secs(60),
            "runs answer while it is stopped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    going.store(false, Ordering::SeqCst);
    for stream in streams {
        stream.await.unwrap();
    }
    let answered = answered.load(Ordering::SeqCst);
    // The console stops before the database is back: the next start writes what it kept.
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    gate.start();
    let (again, stop, running) = spawn_app_stoppable(app.data_dir, |_| {}).await;

    let waiting = Instant::now();
    while (rows(&again.pool).await.0 as usize) < answered {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "{answered} runs answered, rows: {:?}",
            rows(&again.pool).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        rows(&again.pool).await,
        (answered as i64, answered as i64),
        "every answered run has its row, once"
    );
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
}
