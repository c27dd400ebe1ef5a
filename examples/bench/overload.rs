//! Overload: the local provider (2 run slots, no queue wait) offered ten times the rate it
//! sustains, over loopback HTTP for a bounded number of requests. Runs it admits should take
//! about what they take unloaded; the rest should be refused at once with 429 and
//! `Retry-After`; nothing should queue; the console's memory should stay where it was.

use std::{fmt::Write as _, time::Duration, time::Instant};

use sandbox_console::server::state::AppState;
use serde_json::json;

use super::{ahead::activate, goal, resources::rss_kib};

/// The `q` quantile (0..1) of `samples`, nearest rank.
fn quantile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// One call: its status, whether a 429 said when to retry, and its time in ms.
async fn call(client: &reqwest::Client, url: &str, key: &str) -> (u16, bool, f64) {
    let started = Instant::now();
    let body = json!({ "language": "python", "code": "def main():\n    return 1\n" });
    let sent = client.post(url).bearer_auth(key).json(&body).send().await;
    let (status, retry_after) = match sent {
        Ok(response) => {
            let retry = response.headers().contains_key("retry-after");
            let status = response.status().as_u16();
            let _ = response.bytes().await;
            (status, retry)
        }
        Err(_) => (0, false),
    };
    (
        status,
        retry_after,
        started.elapsed().as_secs_f64() * 1000.0,
    )
}

/// The section of the report.
pub async fn section(
    state: &AppState,
    base: &str,
    key: &str,
    smoke: bool,
) -> anyhow::Result<String> {
    let settings = json!({ "environment": "none", "max_concurrent_runs": 2, "queue_wait_secs": 0 });
    activate(
        state,
        "local",
        settings.as_object().cloned().unwrap_or_default(),
    )
    .await?;
    let url = format!("{base}/api/v1/execute");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let (unloaded_runs, sustain_runs, seconds) = if smoke { (5, 6, 1.0) } else { (100, 60, 5.0) };

    let mut unloaded = Vec::new();
    for _ in 0..unloaded_runs {
        let (status, _, ms) = call(&client, &url, key).await;
        anyhow::ensure!(status == 200, "an unloaded run answered {status}");
        unloaded.push(ms);
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (client, url, key) = (client.clone(), url.clone(), key.to_owned());
            tokio::spawn(async move {
                for _ in 0..sustain_runs / 2 {
                    let (status, _, _) = call(&client, &url, &key).await;
                    anyhow::ensure!(
                        status == 200,
                        "a run at the sustainable rate answered {status}"
                    );
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    let sustained = sustain_runs as f64 / started.elapsed().as_secs_f64();
    let offered = sustained * 10.0;
    let total = ((offered * seconds) as usize).clamp(10, 2000);
    let gap = Duration::from_secs_f64(1.0 / offered);

    let rss_before = rss_kib();
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watcher = {
        let (state, watching) = (state.clone(), watching.clone());
        tokio::spawn(async move {
            let mut most = 0;
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                let waiting = state
                    .sandbox
                    .active()
                    .and_then(|(_, p)| p.pool_state())
                    .map_or(0, |p| p.waiting);
                most = most.max(waiting);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            most
        })
    };
    let mut tick = tokio::time::interval(gap);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut calls = Vec::with_capacity(total);
    let offered_from = Instant::now();
    for _ in 0..total {
        tick.tick().await;
        let (client, url, key) = (client.clone(), url.clone(), key.to_owned());
        calls.push(tokio::spawn(async move { call(&client, &url, &key).await }));
    }
    let offered_for = offered_from.elapsed().as_secs_f64();
    let (mut admitted, mut refused, mut no_retry) = (Vec::new(), Vec::new(), 0);
    let mut other = std::collections::BTreeMap::<u16, usize>::new();
    for handle in calls {
        let (status, retry, ms) = handle.await?;
        match status {
            200 => admitted.push(ms),
            429 => {
                refused.push(ms);
                no_retry += usize::from(!retry);
            }
            status => *other.entry(status).or_default() += 1,
        }
    }
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    let most_waiting = watcher.await?;
    let rss_after = rss_kib();

    let unloaded_p99 = quantile(&unloaded, 0.99);
    let admitted_p99 = quantile(&admitted, 0.99);
    let refused_p99 = quantile(&refused, 0.99);
    let mut out = String::new();
    writeln!(out, "\n## Overload\n")?;
    writeln!(out, "The local provider with 2 run slots and no queue wait, trivial python `main()` over loopback HTTP with an API key. Sustainable rate: 2 clients back to back ({sustained:.1} runs/s). Offered: {total} requests at 10× that ({:.0}/s, one every {:.1} ms, sent over {offered_for:.1} s), each on its own task.\n", offered, gap.as_secs_f64() * 1000.0)?;
    writeln!(out, "| measure | value | goal |\n|---|---|---|")?;
    writeln!(
        out,
        "| unloaded p99 ({unloaded_runs} runs one at a time) | {unloaded_p99:.1} ms | |"
    )?;
    writeln!(out, "| admitted under overload | {} runs, p99 {admitted_p99:.1} ms = {:.2}× unloaded | ≤ 2× ({}) |", admitted.len(), admitted_p99 / unloaded_p99, goal(admitted_p99 <= 2.0 * unloaded_p99))?;
    writeln!(
        out,
        "| refused with 429 | {} runs, p99 {refused_p99:.2} ms | ≤ 5 ms ({}) |",
        refused.len(),
        goal(refused.is_empty() || refused_p99 <= 5.0)
    )?;
    writeln!(
        out,
        "| 429 without `Retry-After` | {no_retry} | 0 ({}) |",
        goal(no_retry == 0)
    )?;
    let others: Vec<String> = other
        .iter()
        .map(|(status, n)| match status {
            0 => format!("{n} without an answer"),
            status => format!("{n} × HTTP {status}"),
        })
        .collect();
    writeln!(
        out,
        "| other answers | {} | none ({}) |",
        if others.is_empty() {
            "none".to_owned()
        } else {
            others.join(", ")
        },
        goal(other.is_empty())
    )?;
    writeln!(out, "| most runs in line for a slot at once (sampled every 5 ms) | {most_waiting} | none stays: the queue wait is 0 |")?;
    writeln!(
        out,
        "| console RSS before → after | {:.1} → {:.1} MiB | flat |",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0
    )?;
    Ok(out)
}
