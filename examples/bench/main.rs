//! The benchmark harness (`make bench`): in one run, side by side, the floors (bare
//! `python3.11 -c pass`; raw docker exec when a docker provider exists) and sandbox-console's
//! paths: the local provider in-process and through `POST /api/v1/execute`, the gateway
//! overhead with a provider that answers at once (`noop`, defined here), SSR of the settings
//! page, and throughput at concurrency 1, 2, 4, 8. Writes a Markdown report: ratios to the
//! floors first, absolute times second, the machine described.
//!
//! Also a warm session's cell against a stateless run of the same code (`sessions.rs`), and
//! sandboxes started ahead against their floors and goals (`ahead.rs`).
//! With `--postgres URL`, also 1 vs 3 replicas on one PostgreSQL under load (`replicas.rs`).
//!
//! `cargo run --release --features ssr --example bench -- [--smoke] [--out FILE] [--postgres URL] [--only replicas]`
//! `--smoke`: a few iterations (the test command runs this; it asserts nothing about speed).
//! `--only replicas`: only the replica load (its section alone in the report).

mod ahead;
mod chart;
mod fixed;
mod overload;
mod replicas;
mod resources;
mod sessions;

use std::{fmt::Write as _, process::Command, time::Instant};

use sandbox_console::{
    model::{
        environment::BuildStatus,
        execution::{ExecRequest, ExecStatus, Language},
    },
    sandbox::{providers, Error},
    server::{
        config::Config,
        db::{
            api_key,
            execution::{Actor, Caller, Source},
        },
        startup::Application,
    },
};
use serde_json::{json, Map, Value};

/// How a goal's row ends: whether the measure met it.
fn goal(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "not met"
    }
}

/// The product's providers plus the bench's own: `noop` and `held` (fixed.rs).
fn bench_registry() -> sandbox_console::sandbox::registry::Registry {
    providers::registry()
        .register(fixed::noop_kind())
        .register(fixed::held_kind())
}

/// The replica section: each provider at 1 and at 3 replicas, or why it was skipped.
async fn replica_section(postgres: Option<&str>, smoke: bool) -> anyhow::Result<String> {
    let mut report = String::from("## Replicas on one PostgreSQL\n\n");
    let Some(server) = postgres else {
        report.push_str("Skipped: no `--postgres URL` (`make bench` passes the cluster of `scripts/postgres.sh`).\n");
        return Ok(report);
    };
    let (clients, held_requests, noop_requests, warm) = if smoke {
        (4, 24, 24, 1)
    } else {
        (24, 2400, 4000, 5)
    };
    writeln!(
        report,
        "Consoles on one PostgreSQL 15 schema (each a full console: its own listener, pool and provider), {clients} concurrent clients over loopback spreading `POST /api/v1/execute` with an API key round-robin over the replicas; every run is admitted, run and written to the shared history. `held` holds each run {} ms in one of {} slots per replica (a replica's run capacity, like local's run slots or a docker pool); `noop` answers at once (the console's own cost, which the replicas share on this machine's CPUs). {held_requests} runs with `held`, {noop_requests} with `noop`, after {warm} per replica not counted.\n",
        fixed::HELD_FOR.as_millis(),
        fixed::HELD_SLOTS,
    )?;
    writeln!(
        report,
        "| provider | replicas | runs/s | p50 (ms) | p99 (ms) |\n|---|---|---|---|---|"
    )?;
    let mut ratios = Vec::new();
    for (kind, requests) in [("held", held_requests), ("noop", noop_requests)] {
        let mut measured = Vec::new();
        for count in [1usize, 3] {
            eprintln!("replicas: {kind} x {count} ...");
            let shape = replicas::Shape {
                kind,
                replicas: count,
                clients,
                requests,
                warm,
            };
            let load = replicas::load(server, bench_registry, shape).await?;
            writeln!(
                report,
                "| `{kind}` | {count} | {:.0} | {:.1} | {:.1} |",
                load.per_second, load.p50_ms, load.p99_ms
            )?;
            measured.push(load);
        }
        ratios.push((
            kind,
            measured[1].per_second / measured[0].per_second,
            measured[1].p99_ms / measured[0].p99_ms,
        ));
    }
    writeln!(
        report,
        "\n| provider | runs/s, 3 replicas / 1 | p99, 3 replicas / 1 |\n|---|---|---|"
    )?;
    for (kind, throughput, p99) in ratios {
        writeln!(report, "| `{kind}` | {throughput:.2}× | {p99:.2}× |")?;
    }
    Ok(report)
}

/// Median and p95 of samples in ms.
fn stats(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let p95 = ((ms.len() * 95).div_ceil(100)).max(1) - 1;
    (ms[ms.len() / 2], ms[p95])
}

/// Times `runs` calls of `f` after `warm` unmeasured ones.
async fn measure<F, Fut>(runs: usize, warm: usize, f: F) -> anyhow::Result<(f64, f64)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    measure_spaced(runs, warm, std::time::Duration::ZERO, f).await
}

/// [`measure`] with a pause between calls (not timed): how a pool behaves when runs arrive
/// spaced out rather than back to back.
async fn measure_spaced<F, Fut>(
    runs: usize,
    warm: usize,
    pause: std::time::Duration,
    f: F,
) -> anyhow::Result<(f64, f64)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    Ok(stats(timed(runs, warm, pause, f).await?))
}

/// Each call's time in ms, `warm` unmeasured calls first, `pause` between calls (not timed).
async fn timed<F, Fut>(
    runs: usize,
    warm: usize,
    pause: std::time::Duration,
    mut f: F,
) -> anyhow::Result<Vec<f64>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs + warm {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let started = Instant::now();
        f().await?;
        if i >= warm {
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    Ok(samples)
}

/// The docker floor: `python3 -c pass` exec'd with bollard into one warm container (runtime
/// `runtime`, no limits beyond the provider's network and user), created here and removed after.
async fn raw_docker_exec(runtime: &str, runs: usize, warm: usize) -> anyhow::Result<(f64, f64)> {
    use bollard::{
        exec::{CreateExecOptions, StartExecResults},
        models::{ContainerCreateBody, HostConfig},
        query_parameters::RemoveContainerOptionsBuilder,
        Docker, API_DEFAULT_VERSION,
    };
    use futures_util::StreamExt;
    let docker =
        Docker::connect_with_unix("unix:///var/run/docker.sock", 120, API_DEFAULT_VERSION)?
            .negotiate_version()
            .await?;
    let body = ContainerCreateBody {
        image: Some(DOCKER_IMAGE.into()),
        cmd: Some(vec!["sleep".into(), "infinity".into()]),
        user: Some("65534:65534".into()),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            init: Some(true),
            runtime: Some(runtime.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = docker.create_container(None, body).await?.id;
    docker.start_container(&id, None).await?;
    let timed = measure(runs, warm, || {
        let docker = docker.clone();
        let id = id.clone();
        async move {
            let exec = docker
                .create_exec(
                    &id,
                    CreateExecOptions {
                        attach_stdout: Some(true),
                        attach_stderr: Some(true),
                        cmd: Some(vec!["python3", "-c", "pass"]),
                        ..Default::default()
                    },
                )
                .await?;
            if let StartExecResults::Attached { mut output, .. } =
                docker.start_exec(&exec.id, None).await?
            {
                while output.next().await.is_some() {}
            }
            let code = docker.inspect_exec(&exec.id).await?.exit_code;
            anyhow::ensure!(code == Some(0), "exit code {code:?}");
            Ok(())
        }
    })
    .await;
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    docker.remove_container(&id, Some(options)).await?;
    timed
}

/// The docker provider's settings for the benchmark.
fn docker_settings(
    runtime: &str,
    fresh: bool,
    pool_size: u32,
    queue_wait: u32,
) -> Map<String, Value> {
    json!({
        "runtime": runtime,
        "python_image": DOCKER_IMAGE,
        "javascript_image": DOCKER_IMAGE,
        "pids_limit": 1000,
        "pool_size": pool_size,
        "fresh_container_per_run": fresh,
        "queue_wait_secs": queue_wait,
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

const DOCKER_IMAGE: &str = "sandbox-runtime:local";

/// numpy and pandas imported, a small aggregate computed: what agents' code nodes do.
const PANDAS_SCRIPT: &str = "import numpy, pandas\ndef main():\n    df = pandas.DataFrame({'k': [i % 7 for i in range(1000)], 'v': numpy.arange(1000)})\n    return int(df.groupby('k').v.sum().max())\n";

/// The environment store the test suites share (outside the clone).
fn shared_environment_store() -> std::path::PathBuf {
    std::env::var_os("SANDBOX_CONSOLE_ENVIRONMENT_STORE")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/sandbox-console/environments")
        })
}

fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
        .unwrap_or_else(|| "unknown".into())
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!(
        "{} CPU(s) ({model}), {mem_gib:.1} GiB RAM, kernel {}, {}, {}, node {}, {} build",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        first_line("uname", &["-r"]),
        first_line("rustc", &["--version"]),
        first_line("/usr/bin/python3.11", &["--version"]),
        first_line("/usr/bin/node", &["--version"]),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let (runs, fast_runs, throughput_requests) = if smoke { (3, 5, 8) } else { (50, 1000, 48) };
    let warm = if smoke { 1 } else { 5 };
    let postgres = args
        .iter()
        .position(|a| a == "--postgres")
        .and_then(|i| args.get(i + 1).cloned())
        .filter(|url| !url.is_empty());
    if args
        .windows(2)
        .any(|w| w[0] == "--only" && w[1] == "replicas")
    {
        let report = replica_section(postgres.as_deref(), smoke).await?;
        std::fs::write(&out, &report)?;
        eprintln!("wrote {out}");
        print!("{report}");
        return Ok(());
    }

    let data = tempfile::tempdir()?;
    let mut config = Config::with_data_dir(data.path());
    config.listen = "127.0.0.1:0".parse()?;
    let password = "benchmark admin password";
    config.admin_password = Some(password.into());
    // The default environment (numpy, pandas, matplotlib, requests; axios) comes from the
    // store the test suites share: built once per machine, reused here.
    config.build_default_environment = false;
    config.environment_store = Some(shared_environment_store());
    let app = Application::build_with_registry(config, bench_registry()).await?;
    let idle_kib = resources::rss_kib();
    let base = format!("http://127.0.0.1:{}", app.port());
    let url = format!("{base}/api/v1/execute");
    let state = app.state().clone();
    let key = api_key::create(
        &state.pool,
        "bench",
        &[sandbox_console::model::api_key::Scope::Execute],
        "bench",
        None,
    )
    .await?
    .key;
    tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::builder().cookie_store(true).build()?;
    let caller = Caller::api_key("bench", Source::Rest);
    let python = ExecRequest {
        language: Language::Python,
        code: "def main():\n    return 1\n".into(),
        arguments: Map::new(),
        timeout_secs: None,
    };
    let body = json!({"language": "python", "code": python.code});
    let activate_with = |kind: &'static str, values: Map<String, Value>| {
        let state = state.clone();
        async move { ahead::activate(&state, kind, values).await }
    };
    let activate = |kind: &'static str| activate_with(kind, Map::new());
    let in_process = |request: ExecRequest| {
        let state = state.clone();
        let caller = caller.clone();
        move || {
            let state = state.clone();
            let caller = caller.clone();
            let request = request.clone();
            async move {
                let run = state.sandbox.execute(&request, &caller).await?;
                anyhow::ensure!(run.result.status == ExecStatus::Success, "{run:?}");
                Ok(())
            }
        }
    };
    let over_http = |body: Value| {
        let client = client.clone();
        let url = url.clone();
        let key = key.clone();
        move || {
            let (client, url, key, body) = (client.clone(), url.clone(), key.clone(), body.clone());
            async move {
                let response = client
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&body)
                    .send()
                    .await?;
                anyhow::ensure!(response.status() == 200, "HTTP {}", response.status());
                let answer: Value = response.json().await?;
                anyhow::ensure!(answer["status"] == "success", "{answer}");
                Ok(())
            }
        }
    };

    eprintln!("floor: bare python ...");
    let bare_python = measure(runs, warm, || async {
        let status = tokio::process::Command::new("/usr/bin/python3.11")
            .args(["-c", "pass"])
            .status()
            .await?;
        anyhow::ensure!(status.success());
        Ok(())
    })
    .await?;

    eprintln!("local provider ...");
    // Today's trivial run: no environment mounted.
    let bare_local = json!({"environment": "none"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    activate_with("local", bare_local.clone()).await?;
    let local_inproc = measure(runs, warm, in_process(python.clone())).await?;
    let local_http = measure(runs, warm, over_http(body.clone())).await?;
    let javascript = ExecRequest {
        language: Language::Javascript,
        code: "function main() { return 1; }".into(),
        ..python.clone()
    };
    let local_js = measure(runs, warm, in_process(javascript)).await?;
    let bare_node = measure(runs, warm, || async {
        let status = tokio::process::Command::new("/usr/bin/node")
            .args(["-e", "0"])
            .status()
            .await?;
        anyhow::ensure!(status.success());
        Ok(())
    })
    .await?;

    eprintln!("docker: raw bollard exec floors and the docker provider ...");
    let docker_paths = [
        ("runc", true, "runc, fresh container per run (default)"),
        ("runc", false, "runc, containers wiped and reused"),
        ("runsc", true, "gVisor (runsc), fresh container per run"),
        (
            "runsc",
            false,
            "gVisor (runsc), containers wiped and reused",
        ),
    ];
    let raw_runc = raw_docker_exec("runc", runs, warm).await?;
    let raw_runsc = raw_docker_exec("runsc", runs, warm).await?;
    let mut docker_rows = Vec::new();
    for (runtime, fresh, label) in docker_paths {
        activate_with("docker", docker_settings(runtime, fresh, 2, 30)).await?;
        // Let the pool warm before the clock starts.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let timed = measure(runs, warm, in_process(python.clone())).await?;
        let pause = std::time::Duration::from_millis(500);
        let spaced = measure_spaced(runs, warm, pause, in_process(python.clone())).await?;
        let floor = if runtime == "runc" {
            raw_runc
        } else {
            raw_runsc
        };
        docker_rows.push((label, timed, spaced, floor));
    }
    // Where pool_busy starts: pool size 2, no queue wait, N runs of 1 s started at once.
    eprintln!("docker: pool_busy threshold ...");
    activate_with("docker", docker_settings("runc", true, 2, 0)).await?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let sleeper = ExecRequest {
        code: "import time\ntime.sleep(1)\n".into(),
        ..python.clone()
    };
    let mut busy_rows = Vec::new();
    for concurrency in 1..=4usize {
        let runs: Vec<_> = (0..concurrency)
            .map(|_| {
                let (state, caller, request) = (state.clone(), caller.clone(), sleeper.clone());
                tokio::spawn(async move { state.sandbox.execute(&request, &caller).await })
            })
            .collect();
        let mut busy = 0;
        for run in runs {
            if matches!(run.await?, Err(Error::PoolBusy { .. })) {
                busy += 1;
            }
        }
        busy_rows.push((concurrency, busy));
        // The pool refills in the background after each wave.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    }
    activate_with("local", bare_local.clone()).await?;

    eprintln!("environments: building (or reusing) the default environment ...");
    let actor = Actor::admin("bench");
    let build = state.environments.build(&actor, "default").await?;
    let built = state
        .environments
        .wait(build, std::time::Duration::from_secs(1800), |_| {})
        .await?;
    anyhow::ensure!(
        built
            .as_ref()
            .is_some_and(|b| b.status == BuildStatus::Ready),
        "the default environment did not build: {built:?}"
    );
    let env_dir = state
        .environments
        .store()
        .join(&built.expect("checked above").spec_hash);
    let pandas = ExecRequest {
        code: PANDAS_SCRIPT.into(),
        ..python.clone()
    };
    eprintln!("environments: the host interpreter with the environment on its path ...");
    let host_pandas = measure(runs, warm, || {
        let packages = env_dir.join("python");
        async move {
            let program = format!(
                "import sys\nsys.path.insert(1, {:?})\n{PANDAS_SCRIPT}\nmain()\n",
                packages.display().to_string()
            );
            let status = tokio::process::Command::new("/usr/bin/python3.11")
                .args(["-I", "-c", &program])
                .env("OPENBLAS_NUM_THREADS", "1")
                .status()
                .await?;
            anyhow::ensure!(status.success());
            Ok(())
        }
    })
    .await?;
    eprintln!("environments: local, bare and with the default environment ...");
    let local_bare_again = measure(runs, warm, in_process(python.clone())).await?;
    activate_with("local", Map::new()).await?;
    let local_mounted = measure(runs, warm, in_process(python.clone())).await?;
    let local_pandas = measure(runs, warm, in_process(pandas.clone())).await?;
    let mut docker_pandas = Vec::new();
    for runtime in ["runc", "runsc"] {
        eprintln!("environments: docker {runtime} with the default environment ...");
        activate_with("docker", docker_settings(runtime, true, 2, 60)).await?;
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let pause = std::time::Duration::from_millis(500);
        let spaced = measure_spaced(runs, warm, pause, in_process(pandas.clone())).await?;
        docker_pandas.push((runtime, spaced));
    }
    eprintln!("egress: local, none and allow-list ...");
    activate_with("local", bare_local.clone()).await?;
    let local_none = measure(runs, warm, in_process(python.clone())).await?;
    let mut allow_list = bare_local.clone();
    allow_list.insert("network".into(), json!("allow-list"));
    allow_list.insert("allowed_hosts".into(), json!("files.test"));
    allow_list.insert("static_hosts".into(), json!("files.test 127.0.0.1"));
    activate_with("local", allow_list).await?;
    let local_allow_list = measure(runs, warm, in_process(python.clone())).await?;
    activate_with("local", bare_local).await?;

    eprintln!("throughput ...");
    let mut throughput = Vec::new();
    for concurrency in [1usize, 2, 4, 8] {
        let started = Instant::now();
        let per_worker = throughput_requests / concurrency;
        let workers: Vec<_> = (0..concurrency)
            .map(|_| {
                let call = over_http(body.clone());
                tokio::spawn(async move {
                    for _ in 0..per_worker {
                        call().await?;
                    }
                    Ok::<_, anyhow::Error>(())
                })
            })
            .collect();
        for worker in workers {
            worker.await??;
        }
        let done = per_worker * concurrency;
        throughput.push((concurrency, done as f64 / started.elapsed().as_secs_f64()));
    }

    eprintln!("gateway overhead (noop provider) ...");
    activate("noop").await?;
    let noop_inproc = measure(fast_runs, warm * 4, in_process(python.clone())).await?;
    let noop_http = measure(fast_runs, warm * 4, over_http(body.clone())).await?;

    eprintln!("SSR of the settings page ...");
    activate("local").await?;
    let login = client
        .post(format!("{base}/auth/login"))
        .form(&[("username", "admin"), ("password", password)])
        .send()
        .await?;
    anyhow::ensure!(login.status().is_success() || login.status().is_redirection());
    let ssr = measure(runs, warm, || {
        let client = client.clone();
        let page = format!("{base}/admin/sandbox-settings");
        async move {
            let response = client.get(page).send().await?;
            anyhow::ensure!(response.status() == 200, "HTTP {}", response.status());
            let html = response.text().await?;
            anyhow::ensure!(html.contains("Sandbox settings"));
            Ok(())
        }
    })
    .await?;

    eprintln!("sessions: a warm cell against a stateless run ...");
    activate("local").await?;
    let session_report = sessions::section(&base, &key, runs, warm).await?;

    let floors = ahead::Floors {
        bare_python,
        host_pandas,
        raw_runc,
        raw_runsc,
    };
    let (ahead_report, latencies) = ahead::section(
        &state,
        caller.clone(),
        (runs, warm, smoke),
        &python,
        &pandas,
        &floors,
    )
    .await?;
    eprintln!("overload ...");
    let overload_report = overload::section(&state, &base, &key, smoke).await?;
    eprintln!("resources ...");
    let resources_report = resources::section(&state, &base, &key, idle_kib, smoke).await?;
    let chart_path = std::path::Path::new(&out).with_extension("svg");
    let chart_name = chart_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::write(
        &chart_path,
        chart::svg(
            "Latency per run (ms, log scale): started ahead and cold",
            &latencies,
        ),
    )?;

    // Whatever the providers still hold (containers of a replaced docker provider) goes now.
    state.sandbox.shutdown().await;

    let mut report = String::new();
    let ratio = |x: (f64, f64), floor: (f64, f64)| x.0 / floor.0;
    writeln!(report, "# Benchmarks\n")?;
    writeln!(
        report,
        "Made by `make bench` (`cargo run --release --features ssr --example bench`){}. \
         Medians (p95 in the second table) of {runs} runs per path ({fast_runs} for the gateway overhead), \
         after warm-up; ratios are to floors measured in the same run.\n",
        if smoke { " in smoke mode: too few runs to mean anything" } else { "" }
    )?;
    writeln!(report, "Machine: {}.\n", machine())?;
    writeln!(report, "## Ratios to the floors\n")?;
    writeln!(report, "| path | floor | ratio (median) |\n|---|---|---|")?;
    writeln!(
        report,
        "| local provider, python, in-process | bare `python3.11 -c pass` | {:.2}× |",
        ratio(local_inproc, bare_python)
    )?;
    writeln!(
        report,
        "| local provider, python, `POST /api/v1/execute` | bare `python3.11 -c pass` | {:.2}× |",
        ratio(local_http, bare_python)
    )?;
    writeln!(
        report,
        "| local provider, javascript, in-process | bare `node -e 0` | {:.2}× |",
        ratio(local_js, bare_node)
    )?;
    writeln!(report, "| gateway, `POST /api/v1/execute` with the noop provider | the same call in-process | {:.2}× |", ratio(noop_http, noop_inproc))?;
    for (label, timed, spaced, floor) in &docker_rows {
        writeln!(
            report,
            "| docker provider, python, in-process: {label}, runs 0.5 s apart | raw bollard exec of `python3 -c pass` in a warm container, same runtime | {:.2}× |",
            ratio(*spaced, *floor)
        )?;
        writeln!(
            report,
            "| docker provider, python, in-process: {label}, back to back | the same floor | {:.2}× |",
            ratio(*timed, *floor)
        )?;
    }
    writeln!(
        report,
        "| docker provider, runc default, against the local provider | local provider, python, in-process | {:.2}× |\n",
        ratio(docker_rows[0].2, local_inproc)
    )?;
    writeln!(report, "## Package environments\n")?;
    writeln!(report, "The default environment (numpy, pandas, matplotlib, requests; axios) mounted read-only. The script: `import numpy, pandas` and a 1 000-row DataFrame group-by in `main()`.\n")?;
    writeln!(report, "| path | floor | ratio (median) |\n|---|---|---|")?;
    writeln!(
        report,
        "| local, trivial python `main()`, default environment mounted | the same run with `environment = none`, same run of the bench | {:.3}× |",
        ratio(local_mounted, local_bare_again)
    )?;
    writeln!(
        report,
        "| local, pandas script | host `python3.11 -I` with the environment on `sys.path` | {:.2}× |",
        ratio(local_pandas, host_pandas)
    )?;
    for (runtime, spaced) in &docker_pandas {
        writeln!(
            report,
            "| docker {runtime}, pandas script, fresh container per run, 0.5 s apart | the same host floor | {:.2}× |",
            ratio(*spaced, host_pandas)
        )?;
    }
    writeln!(report)?;
    writeln!(report, "## Network allow-list\n")?;
    writeln!(report, "| path | floor | ratio (median) |\n|---|---|---|")?;
    writeln!(
        report,
        "| local, trivial python `main()`, `network = allow-list` (its namespace, TUN and the console's stack set up per run; no connection made) | the same run with `network = none`, same run of the bench | {:.3}× |\n",
        ratio(local_allow_list, local_none)
    )?;
    writeln!(report, "## Absolute times (ms)\n")?;
    writeln!(report, "| path | median | p95 |\n|---|---|---|")?;
    for (name, (median, p95)) in [
        ("floor: bare `/usr/bin/python3.11 -c pass`", bare_python),
        ("floor: bare `/usr/bin/node -e 0`", bare_node),
        ("local, python `main()`, in-process", local_inproc),
        ("local, python `main()`, `POST /api/v1/execute`", local_http),
        ("local, javascript `main()`, in-process", local_js),
        (
            "floor: raw bollard exec `python3 -c pass`, warm container, runc",
            raw_runc,
        ),
        (
            "floor: raw bollard exec `python3 -c pass`, warm container, runsc",
            raw_runsc,
        ),
        (
            "docker, python `main()`, in-process: runc, fresh container per run, 0.5 s apart",
            docker_rows[0].2,
        ),
        (
            "docker, python `main()`, in-process: runc, fresh container per run, back to back",
            docker_rows[0].1,
        ),
        (
            "docker, python `main()`, in-process: runc, wiped and reused, 0.5 s apart",
            docker_rows[1].2,
        ),
        (
            "docker, python `main()`, in-process: runc, wiped and reused, back to back",
            docker_rows[1].1,
        ),
        (
            "docker, python `main()`, in-process: runsc, fresh container per run, 0.5 s apart",
            docker_rows[2].2,
        ),
        (
            "docker, python `main()`, in-process: runsc, fresh container per run, back to back",
            docker_rows[2].1,
        ),
        (
            "docker, python `main()`, in-process: runsc, wiped and reused, 0.5 s apart",
            docker_rows[3].2,
        ),
        (
            "docker, python `main()`, in-process: runsc, wiped and reused, back to back",
            docker_rows[3].1,
        ),
        (
            "local, trivial python, no environment (second measure)",
            local_bare_again,
        ),
        (
            "local, trivial python, default environment mounted",
            local_mounted,
        ),
        ("local, trivial python, network none", local_none),
        (
            "local, trivial python, network allow-list",
            local_allow_list,
        ),
        (
            "floor: host python3.11, pandas script, environment on sys.path",
            host_pandas,
        ),
        ("local, pandas script", local_pandas),
        (
            "docker runc, pandas script, 0.5 s apart",
            docker_pandas[0].1,
        ),
        (
            "docker runsc, pandas script, 0.5 s apart",
            docker_pandas[1].1,
        ),
        ("noop provider, in-process", noop_inproc),
        ("noop provider, `POST /api/v1/execute`", noop_http),
        (
            "SSR of `/admin/sandbox-settings` (signed in, health probe included)",
            ssr,
        ),
    ] {
        writeln!(report, "| {name} | {median:.2} | {p95:.2} |")?;
    }
    writeln!(
        report,
        "\nGateway overhead (noop, median): {:.2} ms per request.\n",
        noop_http.0 - noop_inproc.0
    )?;
    writeln!(
        report,
        "## Throughput, local provider through `POST /api/v1/execute`\n"
    )?;
    writeln!(report, "{throughput_requests} trivial python runs split over N concurrent clients (the local provider admits 8 runs at once by default).\n")?;
    writeln!(report, "| concurrency | runs/s |\n|---|---|")?;
    for (concurrency, per_second) in &throughput {
        writeln!(report, "| {concurrency} | {per_second:.1} |")?;
    }
    writeln!(report, "\n## Docker provider: where `pool_busy` starts\n")?;
    writeln!(report, "Pool size 2 per language, queue wait 0 s, runc, fresh container per run: N python runs of `time.sleep(1)` started at once.\n")?;
    writeln!(
        report,
        "| concurrent runs | refused as pool_busy |\n|---|---|"
    )?;
    for (concurrency, busy) in &busy_rows {
        writeln!(report, "| {concurrency} | {busy} |")?;
    }
    writeln!(report, "\nThe docker runs above are tight loops: in fresh-container mode each run's container is replaced in the background (about 0.2 s under runc, 0.4 s under runsc), so back-to-back runs on a pool of 2 partly wait for a replacement; in reuse mode they wait for the wipe. Runs 0.5 s apart find a warm container every time.")?;
    writeln!(report)?;
    report.push_str(&session_report);
    report.push_str(&ahead_report);
    writeln!(
        report,
        "\nThe distributions: [{chart_name}]({chart_name}) (box: 25th to 75th percentile; whiskers: 5th to 95th; red: median; dots: every run).\n\n![latency distributions]({chart_name})"
    )?;
    report.push_str(&overload_report);
    report.push_str(&resources_report);
    report.push_str(&replica_section(postgres.as_deref(), smoke).await?);
    std::fs::write(&out, &report)?;
    eprintln!("wrote {out}");
    print!("{report}");
    Ok(())
}
