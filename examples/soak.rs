//! A loopback soak of the whole console: concurrent API runs through the active provider,
//! clients that hang up mid-run, page loads, and (with `--save-every`) settings saves under
//! the traffic. At the end: errors, latency percentiles, history rows against runs asked
//! for, and what was left behind (local sandboxes, docker containers) after the console
//! stopped. Traffic goes to 127.0.0.1 only; the loop ends by itself.
//!
//! `cargo run --release --features ssr --example soak -- --provider local --secs 600`
//! `cargo run --release --features ssr --example soak -- --provider docker --runtime runsc --secs 300 --save-every 30`

use std::{
    collections::BTreeMap,
    process::Command,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use sandbox_console::{
    sandbox::providers,
    server::{
        config::Config,
        db::{api_key, execution::Caller},
        startup::Application,
    },
};
use serde_json::{json, Value};

const HELLO_PY: &str = "def main(n):\n    return sum(range(n))\n";
const HELLO_JS: &str = "function main({ n }) { return n * 2; }";
const SLOW: &str = "import time\ndef main():\n    time.sleep(1.5)\n    return 'late'\n";

struct Args {
    provider: String,
    runtime: String,
    secs: u64,
    concurrency: usize,
    save_every: Option<u64>,
}

fn args() -> Args {
    let mut parsed = Args {
        provider: "local".into(),
        runtime: "runc".into(),
        secs: 60,
        concurrency: 8,
        save_every: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--provider" => parsed.provider = value,
            "--runtime" => parsed.runtime = value,
            "--secs" => parsed.secs = value.parse().expect("--secs N"),
            "--concurrency" => parsed.concurrency = value.parse().expect("--concurrency N"),
            "--save-every" => parsed.save_every = Some(value.parse().expect("--save-every N")),
            other => panic!("unknown flag {other}"),
        }
    }
    parsed
}

fn provider_config(args: &Args, variant: u64) -> Value {
    match args.provider.as_str() {
        "docker" => json!({
            "runtime": args.runtime, "python_image": "sandbox-runtime:local",
            "javascript_image": "sandbox-runtime:local", "pool_size": 4,
            "pids_limit": if args.runtime == "runsc" { 1000 } else { 64 },
            "timeout_secs": 10 + variant % 2, "queue_wait_secs": 60,
        }),
        _ => {
            json!({"max_concurrent_runs": 4, "queue_wait_secs": 60, "timeout_secs": 10 + variant % 2})
        }
    }
}

fn local_sandboxes() -> usize {
    std::fs::read_dir(std::env::temp_dir())
        .map(|dir| {
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("sandbox-console-run-")
                })
                .count()
        })
        .unwrap_or(0)
}

fn our_containers() -> usize {
    Command::new("docker")
        .args(["ps", "-aq", "--filter", "label=sandbox-console.managed=1"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

#[derive(Default)]
struct Tally {
    /// Answers by kind of request and status.
    answers: BTreeMap<String, u64>,
    run_ms: Vec<f64>,
    page_ms: Vec<f64>,
    /// Runs asked for (every one must reach the history, hung-up ones too).
    runs_asked: u64,
    errors: Vec<String>,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args();
    let dir = tempfile::tempdir()?;
    let mut config = Config::with_data_dir(dir.path());
    config.listen = "127.0.0.1:0".parse()?;
    config.admin_password = Some("soak soak soak soak".into());
    let app = Application::build_with_registry(config, providers::registry()).await?;
    let base = format!("http://{}", app.local_addr());
    let pool = app.state().pool.clone();
    let caller = Caller::cli("soak");
    let admin = api_key::create(
        &pool,
        "soak-admin",
        &[sandbox_console::model::api_key::Scope::Admin],
        caller.actor().as_str(),
        None,
    )
    .await?
    .key;
    let agent = api_key::create(
        &pool,
        "soak-agent",
        &[sandbox_console::model::api_key::Scope::Execute],
        caller.actor().as_str(),
        None,
    )
    .await?
    .key;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let configure = |variant: u64| {
        let (client, base, admin) = (client.clone(), base.clone(), admin.clone());
        let body =
            json!({"provider_type": args.provider, "config": provider_config(&args, variant)});
        async move {
            client
                .post(format!("{base}/api/v1/admin/sandbox/config"))
                .bearer_auth(admin)
                .json(&body)
                .send()
                .await
                .map(|r| r.status().as_u16())
        }
    };
    let status = configure(0).await?;
    anyhow::ensure!(
        status == 200,
        "configuring {} answered {status}",
        args.provider
    );
    // A signed-in browser for page loads.
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()?;
    browser
        .post(format!("{base}/auth/login"))
        .form(&[
            ("username", "admin"),
            ("password", "soak soak soak soak"),
            ("next", "/"),
        ])
        .send()
        .await?;

    let tally = Arc::new(Mutex::new(Tally::default()));
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..args.concurrency {
        let (client, browser, base, agent, tally) = (
            client.clone(),
            browser.clone(),
            base.clone(),
            agent.clone(),
            tally.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut i: u64 = 0;
            while Instant::now() < deadline {
                i += 1;
                let roll = (i * 7 + worker as u64 * 13) % 40;
                let begun = Instant::now();
                let (kind, answer) = if roll == 0 {
                    // A client that hangs up mid-run.
                    tally.lock().unwrap().runs_asked += 1;
                    let impatient = reqwest::Client::builder()
                        .timeout(Duration::from_millis(300))
                        .build()
                        .unwrap();
                    let sent = impatient
                        .post(format!("{base}/api/v1/execute"))
                        .bearer_auth(&agent)
                        .json(&json!({"language": "python", "code": SLOW}))
                        .send()
                        .await;
                    ("hang-up", if sent.is_err() { Ok(0) } else { Ok(1) })
                } else if roll < 3 {
                    let path = ["/", "/admin/history", "/admin/sandbox-settings"][(i % 3) as usize];
                    let answer = browser.get(format!("{base}{path}")).send().await;
                    ("page", answer.map(|r| r.status().as_u16()))
                } else {
                    tally.lock().unwrap().runs_asked += 1;
                    let body = if roll.is_multiple_of(4) {
                        json!({"language": "javascript", "code": HELLO_JS, "arguments": {"n": i}})
                    } else {
                        json!({"language": "python", "code": HELLO_PY, "arguments": {"n": i % 1000}})
                    };
                    let answer = client
                        .post(format!("{base}/api/v1/execute"))
                        .bearer_auth(&agent)
                        .json(&body)
                        .send()
                        .await;
                    let answer = match answer {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            let body: Value = response.json().await.unwrap_or(Value::Null);
                            if status == 200 && body["status"] != "success" {
                                tally.lock().unwrap().errors.push(body.to_string());
                                Ok(299)
                            } else {
                                if status != 200 {
                                    tally.lock().unwrap().errors.push(format!("{status} {body}"));
                                }
                                Ok(status)
                            }
                        }
                        Err(error) => Err(error),
                    };
                    ("run", answer)
                };
                let ms = begun.elapsed().as_secs_f64() * 1000.0;
                let mut tally = tally.lock().unwrap();
                let key = match &answer {
                    Ok(status) => format!("{kind} {status}"),
                    Err(error) => {
                        tally.errors.push(format!("{kind}: {error}"));
                        format!("{kind} transport-error")
                    }
                };
                *tally.answers.entry(key).or_insert(0) += 1;
                match kind {
                    "run" => tally.run_ms.push(ms),
                    "page" => tally.page_ms.push(ms),
                    _ => {}
                }
            }
        }));
    }
    let mut saves = BTreeMap::<u16, u64>::new();
    if let Some(every) = args.save_every {
        let mut variant = 1;
        while Instant::now() + Duration::from_secs(every) < deadline {
            tokio::time::sleep(Duration::from_secs(every)).await;
            let status = configure(variant).await.map_or(0, |s| s);
            *saves.entry(status).or_insert(0) += 1;
            variant += 1;
        }
    }
    for worker in workers {
        worker.await?;
    }
    let elapsed = started.elapsed();
    // Hung-up runs finish on their own: wait for the history to catch up.
    let asked = tally.lock().unwrap().runs_asked;
    let settle = Instant::now();
    let mut recorded: i64 = 0;
    while settle.elapsed() < Duration::from_secs(60) {
        recorded = sqlx::query_scalar("select count(*) from execution")
            .fetch_one(&pool)
            .await?;
        if recorded as u64 >= asked {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = stop.send(());
    running.await??;
    let left_sandboxes = local_sandboxes();
    let left_containers = if args.provider == "docker" {
        our_containers()
    } else {
        0
    };

    let mut tally = tally.lock().unwrap();
    tally.run_ms.sort_by(f64::total_cmp);
    tally.page_ms.sort_by(f64::total_cmp);
    let total: u64 = tally.answers.values().sum();
    println!(
        "## Soak: {} {} for {:.0} s at concurrency {}\n",
        args.provider,
        if args.provider == "docker" {
            args.runtime.as_str()
        } else {
            ""
        },
        elapsed.as_secs_f64(),
        args.concurrency
    );
    println!(
        "- requests: {total} ({:.1}/s)",
        total as f64 / elapsed.as_secs_f64()
    );
    for (key, n) in &tally.answers {
        println!("  - {key}: {n}");
    }
    println!(
        "- run latency: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        percentile(&tally.run_ms, 50.0),
        percentile(&tally.run_ms, 99.0),
        tally.run_ms.last().copied().unwrap_or(0.0)
    );
    println!(
        "- page latency: p50 {:.0} ms, p99 {:.0} ms",
        percentile(&tally.page_ms, 50.0),
        percentile(&tally.page_ms, 99.0)
    );
    println!("- saves under traffic: {saves:?}");
    println!("- runs asked for: {asked}; history rows: {recorded}");
    println!("- errors: {}", tally.errors.len());
    for error in tally.errors.iter().take(5) {
        println!("  - {error}");
    }
    println!("- left after stop: {left_sandboxes} local sandboxes, {left_containers} containers");
    anyhow::ensure!(
        tally.errors.is_empty()
            && recorded as u64 == asked
            && left_sandboxes == 0
            && left_containers == 0,
        "the soak found faults"
    );
    Ok(())
}
