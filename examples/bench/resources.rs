//! What the console costs in memory and start-up: its RSS idle, with sandboxes started ahead
//! (theirs too), and after 10 000 runs; the browser bundle's size against its budget (the
//! bench fails over it); the time from a cold start on a fresh database to a first finished run.

use std::{fmt::Write as _, time::Duration, time::Instant};

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    server::{
        config::Config,
        db::execution::{Caller, Source},
        startup::Application,
        state::AppState,
    },
};
use serde_json::{json, Map};

use super::ahead::activate;

/// The browser bundle's budget: raw and gzipped bytes.
const WASM_BUDGET: u64 = 8 * 1024 * 1024;
const WASM_GZIP_BUDGET: u64 = 1792 * 1024;
const WASM: &str = "target/site/pkg/sandbox-console.wasm";

/// A process's resident memory in KiB (`VmRSS`), 0 when it is gone.
fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// This process's resident memory in KiB: the console's, as the bench hosts it.
pub fn rss_kib() -> u64 {
    rss_of(std::process::id())
}

/// The resident memory of every process below this one (sandboxes started ahead and their
/// supervisors), in KiB.
fn descendants_rss_kib() -> u64 {
    let me = std::process::id();
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let mut up = pid;
        while let Some(next) = parent(up) {
            if next == me {
                total += rss_of(pid);
                break;
            }
            if next <= 1 {
                break;
            }
            up = next;
        }
    }
    total
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A fresh console on a fresh database, from nothing to its first finished run (in-process,
/// the local provider, no environment), in ms.
async fn cold_start() -> anyhow::Result<f64> {
    let data = tempfile::tempdir()?;
    let started = Instant::now();
    let mut config = Config::with_data_dir(data.path());
    config.listen = "127.0.0.1:0".parse()?;
    config.admin_password = Some("cold start admin password".into());
    config.build_default_environment = false;
    let app = Application::build_with_registry(config, super::bench_registry()).await?;
    let state = app.state().clone();
    let request = ExecRequest {
        language: Language::Python,
        code: "def main():\n    return 1\n".into(),
        arguments: Map::new(),
        timeout_secs: None,
    };
    let run = state
        .sandbox
        .execute(&request, &Caller::api_key("bench", Source::Rest))
        .await?;
    anyhow::ensure!(run.result.status == ExecStatus::Success, "{run:?}");
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    state.sandbox.shutdown().await;
    Ok(ms)
}

/// The section of the report; fails when the browser bundle is over its budget.
pub async fn section(
    state: &AppState,
    base: &str,
    key: &str,
    idle_kib: u64,
    smoke: bool,
) -> anyhow::Result<String> {
    let mut out = String::new();
    writeln!(out, "\n## Resources\n")?;
    writeln!(out, "| measure | value |\n|---|---|")?;
    writeln!(
        out,
        "| console RSS, idle (started, nothing run) | {:.1} MiB |",
        mib(idle_kib)
    )?;

    activate(state, "local", Map::new()).await?;
    let began = Instant::now();
    while state
        .sandbox
        .active()
        .and_then(|(_, p)| p.pool_state())
        .and_then(|p| p.ahead)
        .is_none_or(|a| a.ready < 1)
    {
        anyhow::ensure!(
            began.elapsed() < Duration::from_secs(120),
            "no sandbox became ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    writeln!(out, "| with one local sandbox started ahead, pandas preloaded: the console / the sandbox's processes | {:.1} MiB / {:.1} MiB |", mib(rss_kib()), mib(descendants_rss_kib()))?;

    activate(state, "noop", Map::new()).await?;
    let runs = if smoke { 200 } else { 10_000 };
    let client = reqwest::Client::new();
    let url = format!("{base}/api/v1/execute");
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (client, url, key) = (client.clone(), url.clone(), key.to_owned());
            tokio::spawn(async move {
                for _ in 0..runs / 8 {
                    let answer = client
                        .post(&url)
                        .bearer_auth(&key)
                        .json(&json!({ "language": "python", "code": "x = 1" }))
                        .send()
                        .await?;
                    anyhow::ensure!(answer.status() == 200, "HTTP {}", answer.status());
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    writeln!(
        out,
        "| console RSS after {runs} more runs (noop provider, 8 clients over HTTP) | {:.1} MiB |",
        mib(rss_kib())
    )?;

    match std::fs::read(WASM) {
        Ok(bytes) => {
            use std::io::Write as _;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(&bytes)?;
            let gzipped = gz.finish()?.len() as u64;
            let raw = bytes.len() as u64;
            writeln!(out, "| browser bundle ({WASM}, as last built) | {:.2} MiB, {:.2} MiB gzipped (budget {:.2} / {:.2} MiB) |", mib(raw / 1024), mib(gzipped / 1024), mib(WASM_BUDGET / 1024), mib(WASM_GZIP_BUDGET / 1024))?;
            anyhow::ensure!(
                raw <= WASM_BUDGET && gzipped <= WASM_GZIP_BUDGET,
                "the browser bundle is over its budget: {raw} bytes ({gzipped} gzipped)"
            );
        }
        Err(error) => writeln!(
            out,
            "| browser bundle | not built ({error}); `make build` builds it |"
        )?,
    }
    let cold = cold_start().await?;
    writeln!(out, "| cold start on a fresh database to a first finished run (local, in-process) | {cold:.0} ms |")?;
    Ok(out)
}
