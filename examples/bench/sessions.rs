//! A warm session's cell against a stateless run of the same code, through the API, on the
//! local provider: `POST /api/v1/sessions/{id}/execute` in one session, and `POST
//! /api/v1/execute` (a fresh sandbox and interpreter each time).

use std::fmt::Write as _;

use serde_json::{json, Value};

/// The code both paths run.
const CODE: &str = "import json\nx = json.dumps({'n': sum(range(1000))})\n";

/// The section of the report: medians and p95 of both, and their ratio.
pub async fn section(base: &str, key: &str, runs: usize, warm: usize) -> anyhow::Result<String> {
    let client = reqwest::Client::new();
    let opened: Value = client
        .post(format!("{base}/api/v1/sessions"))
        .bearer_auth(key)
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = opened["id"].as_str().unwrap_or_default().to_owned();
    let cell_url = format!("{base}/api/v1/sessions/{id}/execute");
    let cell = || {
        let (client, url) = (client.clone(), cell_url.clone());
        async move {
            let answer: Value = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({ "code": CODE }))
                .send()
                .await?
                .json()
                .await?;
            anyhow::ensure!(answer["status"] == "success", "{answer}");
            Ok(())
        }
    };
    let (cell_p50, cell_p95) = super::measure(runs, warm, cell).await?;
    let run_url = format!("{base}/api/v1/execute");
    let run = || {
        let (client, url) = (client.clone(), run_url.clone());
        async move {
            let answer: Value = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({ "language": "python", "code": CODE }))
                .send()
                .await?
                .json()
                .await?;
            anyhow::ensure!(answer["status"] == "success", "{answer}");
            Ok(())
        }
    };
    let (run_p50, run_p95) = super::measure(runs, warm, run).await?;
    client
        .delete(format!("{base}/api/v1/sessions/{id}"))
        .bearer_auth(key)
        .send()
        .await?;

    let mut report = String::new();
    writeln!(
        report,
        "\n## A warm session's cell against a stateless run\n"
    )?;
    writeln!(report, "The same Python ({} bytes: an import and a line) through the API on the local provider, {runs} times each after {warm} unmeasured: a cell in one open session (its interpreter and imports kept), and `POST /api/v1/execute` (a fresh sandbox and interpreter each time).\n", CODE.len())?;
    writeln!(report, "| path | p50 (ms) | p95 (ms) |\n|---|---|---|")?;
    writeln!(report, "| session cell | {cell_p50:.1} | {cell_p95:.1} |")?;
    writeln!(report, "| stateless run | {run_p50:.1} | {run_p95:.1} |")?;
    writeln!(
        report,
        "\n**Stateless run / session cell (p50): {:.1}×**",
        run_p50 / cell_p50.max(0.001)
    )?;
    Ok(report)
}
