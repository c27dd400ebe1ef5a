//! Sandboxes started ahead (issue 30's goals), each path beside its floor in the same run:
//! a trivial `main()` on local against bare `python3.11 -c pass`; the pandas script on local,
//! docker runc and docker runsc against the host's cold interpreter; docker strict back to
//! back against a warm exec of the same runtime; 40 runs at concurrency 4 under runsc against
//! the bound one container's create+start sets. Cold (started-ahead off) rows beside them.

use std::{fmt::Write as _, time::Duration, time::Instant};

use sandbox_console::{
    model::{
        execution::{ExecRequest, ExecStatus},
        settings::SaveOutcome,
    },
    server::{
        db::{
            execution::{Actor, Caller},
            system_setting::Expected,
        },
        state::AppState,
    },
};
use serde_json::{json, Map, Value};

use super::{chart::Series, docker_settings, goal, stats, timed, DOCKER_IMAGE};

/// What the section needs from the rest of the bench.
pub struct Floors {
    pub bare_python: (f64, f64),
    pub host_pandas: (f64, f64),
    pub raw_runc: (f64, f64),
    pub raw_runsc: (f64, f64),
}

struct Bench<'a> {
    state: &'a AppState,
    caller: Caller,
    runs: usize,
    warm: usize,
}

/// Saves `values` as `kind`'s settings and makes it the active provider.
pub async fn activate(
    state: &AppState,
    kind: &str,
    values: Map<String, Value>,
) -> anyhow::Result<()> {
    let saved = state
        .sandbox
        .save(
            &Actor::admin("bench"),
            kind,
            values,
            Expected::Any,
            true,
            sandbox_console::server::sandbox::Gate::Anyway,
        )
        .await?;
    anyhow::ensure!(
        matches!(saved, SaveOutcome::Saved { active: true, .. }),
        "{saved:?}"
    );
    Ok(())
}

impl Bench<'_> {
    async fn activate(&self, kind: &str, values: Map<String, Value>) -> anyhow::Result<()> {
        activate(self.state, kind, values).await
    }

    /// Waits (at most two minutes) until the active provider has `ready` sandboxes started
    /// ahead, or for its plain pool when it starts none ahead.
    async fn ready(&self, ready: u64) -> anyhow::Result<()> {
        let began = Instant::now();
        loop {
            let pool = self
                .state
                .sandbox
                .active()
                .and_then(|(_, p)| p.pool_state());
            let done = match pool {
                Some(pool) => match pool.ahead {
                    Some(ahead) => ahead.ready >= ready,
                    None => pool.warming == 0,
                },
                None => true,
            };
            if done {
                return Ok(());
            }
            anyhow::ensure!(
                began.elapsed() < Duration::from_secs(120),
                "no sandbox became ready in two minutes"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn run(&self, request: &ExecRequest) -> anyhow::Result<bool> {
        let run = self.state.sandbox.execute(request, &self.caller).await?;
        anyhow::ensure!(run.result.status == ExecStatus::Success, "{run:?}");
        Ok(run.result.metadata["started_ahead"] == json!(true))
    }

    /// Back to back and 0.5 s apart; also the share of runs that found a sandbox started ahead.
    async fn both(&self, request: &ExecRequest) -> anyhow::Result<Path> {
        let hits = std::sync::atomic::AtomicUsize::new(0);
        let call = || async {
            if self.run(request).await? {
                hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        };
        let pause = Duration::from_millis(500);
        let spaced = timed(self.runs, self.warm, pause, call).await?;
        let spaced_hits = hits.swap(0, std::sync::atomic::Ordering::Relaxed);
        let tight = timed(self.runs, self.warm, Duration::ZERO, call).await?;
        let tight_hits = hits.load(std::sync::atomic::Ordering::Relaxed);
        let total = (self.runs + self.warm) as f64;
        Ok(Path {
            spaced: stats(spaced.clone()),
            tight: stats(tight.clone()),
            spaced_samples: spaced,
            tight_samples: tight,
            spaced_ahead: spaced_hits as f64 / total,
            tight_ahead: tight_hits as f64 / total,
        })
    }
}

/// One path, measured 0.5 s apart and back to back.
struct Path {
    spaced: (f64, f64),
    tight: (f64, f64),
    spaced_samples: Vec<f64>,
    tight_samples: Vec<f64>,
    spaced_ahead: f64,
    tight_ahead: f64,
}

fn with(mut values: Map<String, Value>, extra: Value) -> Map<String, Value> {
    if let Some(extra) = extra.as_object() {
        values.extend(extra.clone());
    }
    values
}

/// Median create+start of one container of `runtime` (with the runtime image), in ms.
async fn create_start(runtime: &str, times: usize) -> anyhow::Result<f64> {
    use bollard::{
        models::{ContainerCreateBody, HostConfig},
        query_parameters::RemoveContainerOptionsBuilder,
        Docker, API_DEFAULT_VERSION,
    };
    let docker =
        Docker::connect_with_unix("unix:///var/run/docker.sock", 120, API_DEFAULT_VERSION)?
            .negotiate_version()
            .await?;
    let mut samples = Vec::new();
    for _ in 0..times {
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
        let started = Instant::now();
        let id = docker.create_container(None, body).await?.id;
        docker.start_container(&id, None).await?;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        let options = RemoveContainerOptionsBuilder::default().force(true).build();
        docker.remove_container(&id, Some(options)).await?;
    }
    Ok(stats(samples).0)
}

fn ratio(a: (f64, f64), floor: (f64, f64)) -> f64 {
    a.0 / floor.0
}

/// The section of the report, and the latency distributions it measured.
pub async fn section(
    state: &AppState,
    caller: Caller,
    (runs, warm, smoke): (usize, usize, bool),
    python: &ExecRequest,
    pandas: &ExecRequest,
    floors: &Floors,
) -> anyhow::Result<(String, Vec<Series>)> {
    let bench = Bench {
        state,
        caller,
        runs,
        warm,
    };
    let bare = json!({ "environment": "none" });
    eprintln!("started ahead: local, trivial, cold and ahead ...");
    bench
        .activate(
            "local",
            with(Map::new(), json!({ "environment": "none", "ahead_min": 0 })),
        )
        .await?;
    let local_cold_samples = timed(runs, warm, Duration::ZERO, || async {
        bench.run(python).await.map(|_| ())
    })
    .await?;
    let local_cold = stats(local_cold_samples.clone());
    bench
        .activate("local", with(Map::new(), bare.clone()))
        .await?;
    bench.ready(1).await?;
    let local_trivial = bench.both(python).await?;

    eprintln!("started ahead: local, pandas ...");
    bench.activate("local", Map::new()).await?;
    bench.ready(1).await?;
    let local_pandas = bench.both(pandas).await?;

    let mut docker_pandas = Vec::new();
    let mut docker_trivial = Vec::new();
    // The smoke run proves the section runs; gVisor's copy of it is runc's, three times slower.
    let runtimes: &[&str] = if smoke { &["runc"] } else { &["runc", "runsc"] };
    for &runtime in runtimes {
        eprintln!("started ahead: docker {runtime}, pandas cold and ahead, trivial ...");
        let cold = with(
            docker_settings(runtime, true, 2, 60),
            json!({ "start_ahead": false }),
        );
        bench.activate("docker", cold).await?;
        bench.ready(0).await?;
        let pause = Duration::from_millis(500);
        let pandas_cold_samples = timed(runs, warm, pause, || async {
            bench.run(pandas).await.map(|_| ())
        })
        .await?;
        let pandas_cold = (stats(pandas_cold_samples.clone()), pandas_cold_samples);
        bench
            .activate("docker", docker_settings(runtime, true, 2, 60))
            .await?;
        bench.ready(2).await?;
        let pandas_ahead = bench.both(pandas).await?;
        docker_pandas.push((runtime, pandas_cold, pandas_ahead));
        bench
            .activate(
                "docker",
                with(docker_settings(runtime, true, 2, 60), bare.clone()),
            )
            .await?;
        bench.ready(2).await?;
        docker_trivial.push((runtime, bench.both(python).await?));
    }

    let (total, starts) = if smoke { (8usize, 2) } else { (40, 7) };
    eprintln!("started ahead: {total} runs at concurrency 4 under runsc ...");
    let create_start_ms = [
        ("runc", create_start("runc", starts).await?),
        ("runsc", create_start("runsc", starts).await?),
    ];
    bench
        .activate(
            "docker",
            with(docker_settings("runsc", true, 4, 120), bare.clone()),
        )
        .await?;
    bench.ready(4).await?;
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (state, caller, request) = (state.clone(), bench.caller.clone(), python.clone());
            tokio::spawn(async move {
                for _ in 0..total / 4 {
                    let run = state.sandbox.execute(&request, &caller).await?;
                    anyhow::ensure!(run.result.status == ExecStatus::Success, "{run:?}");
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let bound = 1000.0 / create_start_ms[1].1;
    bench.activate("local", with(Map::new(), bare)).await?;

    let mut out = String::new();
    writeln!(out, "\n## Sandboxes started ahead\n")?;
    writeln!(out, "Python sandboxes started ahead of their run (local: `ahead_min` 1, `ahead_max` 4; docker: every warm container's interpreter, pool of 2), each with the environment's modules preloaded (numpy, pandas, matplotlib, pyplot) and serving one run. Medians of {runs} runs; \"ahead\" is the share of runs (warm-up included) that found a sandbox ready.\n")?;
    writeln!(
        out,
        "| path | floor | goal | ratio (median) | ahead | goal |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    let mut row = |path: &str, floor: &str, limit: f64, value: f64, ahead: Option<f64>| {
        let share = ahead.map_or("—".to_owned(), |a| format!("{:.0} %", a * 100.0));
        writeln!(
            out,
            "| {path} | {floor} | ≤ {limit:.1}× | {value:.2}× | {share} | {} |",
            goal(value <= limit)
        )
    };
    row(
        "local, trivial `main()`, started ahead, 0.5 s apart",
        "bare `python3.11 -c pass`",
        1.0,
        ratio(local_trivial.spaced, floors.bare_python),
        Some(local_trivial.spaced_ahead),
    )?;
    row(
        "local, trivial `main()`, started ahead, back to back",
        "the same",
        1.0,
        ratio(local_trivial.tight, floors.bare_python),
        Some(local_trivial.tight_ahead),
    )?;
    row(
        "local, pandas script, started ahead, 0.5 s apart",
        "host cold `python3.11` with the environment",
        0.5,
        ratio(local_pandas.spaced, floors.host_pandas),
        Some(local_pandas.spaced_ahead),
    )?;
    row(
        "local, pandas script, started ahead, back to back",
        "the same",
        0.5,
        ratio(local_pandas.tight, floors.host_pandas),
        Some(local_pandas.tight_ahead),
    )?;
    for (runtime, _, ahead) in &docker_pandas {
        let limit = if *runtime == "runc" { 0.5 } else { 1.0 };
        row(
            &format!("docker {runtime}, pandas script, started ahead, 0.5 s apart"),
            "the same host floor",
            limit,
            ratio(ahead.spaced, floors.host_pandas),
            Some(ahead.spaced_ahead),
        )?;
        row(
            &format!("docker {runtime}, pandas script, started ahead, back to back"),
            "the same host floor",
            limit,
            ratio(ahead.tight, floors.host_pandas),
            Some(ahead.tight_ahead),
        )?;
    }
    for (runtime, path) in &docker_trivial {
        let floor = if *runtime == "runc" {
            floors.raw_runc
        } else {
            floors.raw_runsc
        };
        row(
            &format!("docker {runtime}, trivial `main()`, strict, started ahead, back to back"),
            &format!("raw bollard exec `python3 -c pass`, warm {runtime} container"),
            1.3,
            ratio(path.tight, floor),
            Some(path.tight_ahead),
        )?;
    }
    writeln!(
        out,
        "\n| concurrency 4 under runsc, strict, pool of 4 | value |\n|---|---|"
    )?;
    for (runtime, ms) in create_start_ms {
        writeln!(
            out,
            "| one container's create+start, {runtime} (median of 7) | {ms:.1} ms |"
        )?;
    }
    writeln!(
        out,
        "| bound: one create+start per run, runsc | {bound:.2} runs/s |"
    )?;
    writeln!(
        out,
        "| measured: {total} trivial runs, 4 at a time | {rate:.2} runs/s |"
    )?;
    writeln!(
        out,
        "| measured / bound (goal ≥ 80 %) | {:.0} % ({}) |",
        rate / bound * 100.0,
        goal(rate >= 0.8 * bound)
    )?;

    writeln!(out, "\n| path | median | p95 |\n|---|---|---|")?;
    let mut abs = |path: &str, (median, p95): (f64, f64)| {
        writeln!(out, "| {path} | {median:.2} | {p95:.2} |")
    };
    abs(
        "local, trivial `main()`, started ahead off, back to back",
        local_cold,
    )?;
    abs(
        "local, trivial `main()`, started ahead, 0.5 s apart",
        local_trivial.spaced,
    )?;
    abs(
        "local, trivial `main()`, started ahead, back to back",
        local_trivial.tight,
    )?;
    abs(
        "local, pandas script, started ahead, 0.5 s apart",
        local_pandas.spaced,
    )?;
    abs(
        "local, pandas script, started ahead, back to back",
        local_pandas.tight,
    )?;
    for (runtime, (cold, _), ahead) in &docker_pandas {
        abs(
            &format!("docker {runtime}, pandas script, started ahead off, 0.5 s apart"),
            *cold,
        )?;
        abs(
            &format!("docker {runtime}, pandas script, started ahead, 0.5 s apart"),
            ahead.spaced,
        )?;
        abs(
            &format!("docker {runtime}, pandas script, started ahead, back to back"),
            ahead.tight,
        )?;
    }
    for (runtime, path) in &docker_trivial {
        abs(
            &format!("docker {runtime}, trivial `main()`, started ahead, 0.5 s apart"),
            path.spaced,
        )?;
        abs(
            &format!("docker {runtime}, trivial `main()`, started ahead, back to back"),
            path.tight,
        )?;
    }
    let mut series = vec![
        Series {
            label: "local, trivial, cold, back to back".into(),
            samples: local_cold_samples,
        },
        Series {
            label: "local, trivial, ahead, 0.5 s apart".into(),
            samples: local_trivial.spaced_samples,
        },
        Series {
            label: "local, trivial, ahead, back to back".into(),
            samples: local_trivial.tight_samples,
        },
        Series {
            label: "local, pandas, ahead, 0.5 s apart".into(),
            samples: local_pandas.spaced_samples,
        },
        Series {
            label: "local, pandas, ahead, back to back".into(),
            samples: local_pandas.tight_samples,
        },
    ];
    for (runtime, (_, cold), ahead) in docker_pandas {
        series.push(Series {
            label: format!("docker {runtime}, pandas, cold, 0.5 s apart"),
            samples: cold,
        });
        series.push(Series {
            label: format!("docker {runtime}, pandas, ahead, 0.5 s apart"),
            samples: ahead.spaced_samples,
        });
        series.push(Series {
            label: format!("docker {runtime}, pandas, ahead, back to back"),
            samples: ahead.tight_samples,
        });
    }
    for (runtime, path) in docker_trivial {
        series.push(Series {
            label: format!("docker {runtime}, trivial, ahead, 0.5 s apart"),
            samples: path.spaced_samples,
        });
        series.push(Series {
            label: format!("docker {runtime}, trivial, ahead, back to back"),
            samples: path.tight_samples,
        });
    }
    Ok((out, series))
}
