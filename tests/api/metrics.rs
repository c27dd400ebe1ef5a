//! `/metrics`: Prometheus text, protected on the main address, open on `--metrics-listen`.

use std::collections::BTreeMap;

use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, TestApp};

/// Parses the text exposition format strictly enough to fail on anything malformed:
/// `# HELP|TYPE|UNIT` comments, `name{label="value",...} number` samples, a final `# EOF`.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"# EOF"),
        "OpenMetrics text ends with # EOF"
    );
    for line in &lines[..lines.len() - 1] {
        if let Some(comment) = line.strip_prefix("# ") {
            let kind = comment.split(' ').next().unwrap();
            assert!(["HELP", "TYPE", "UNIT"].contains(&kind), "{line}");
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value: {line}")),
        };
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name: {line}"
        );
        if name_end < series.len() {
            let labels = &series[name_end..];
            assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            for pair in labels[1..labels.len() - 1]
                .split("\",")
                .filter(|p| !p.is_empty())
            {
                let (key, quoted) = pair.split_once('=').unwrap_or_else(|| panic!("{line}"));
                assert!(
                    key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "{line}"
                );
                assert!(quoted.starts_with('"'), "{line}");
            }
        }
        samples.insert(series.to_owned(), value);
    }
    samples
}

pub async fn scrape(app: &TestApp, key: &str) -> BTreeMap<String, f64> {
    let response = app.get_with_key("/metrics", key).await;
    assert_eq!(response.status().as_u16(), 200);
    parse(&response.text().await.unwrap())
}

/// One sample of a metric from `/metrics` (read with an admin key), 0 when absent.
pub async fn metric(app: &TestApp, admin: &str, series: &str) -> f64 {
    scrape(app, admin).await.get(series).copied().unwrap_or(0.0)
}

#[tokio::test]
async fn counters_move_after_an_execution() {
    let app = spawn_app().await;
    let admin = app.api_key("prometheus", &["admin"]).await;
    let agent = app.api_key("agent", &["execute"]).await;
    let before = scrape(&app, &admin).await;

    app.post_json(
        "/api/v1/execute",
        &agent,
        &json!({"language": "python", "code": "def main():\n    return 1\n"}),
    )
    .await;
    let after = scrape(&app, &admin).await;

    let run = r#"sandbox_executions_total{provider="local",status="success",source="rest"}"#;
    assert_eq!(before.get(run), None);
    assert_eq!(after.get(run), Some(&1.0), "{after:#?}");
    assert_eq!(
        after.get(r#"sandbox_execution_duration_seconds_count{provider="local"}"#),
        Some(&1.0)
    );
    assert_eq!(
        after.get(r#"sandbox_queue_wait_seconds_count{provider="local"}"#),
        Some(&1.0)
    );
    assert_eq!(
        after.get(r#"sandbox_pool_size{provider="local"}"#),
        Some(&8.0)
    );
    assert_eq!(
        after.get(r#"sandbox_pool_busy{provider="local"}"#),
        Some(&0.0)
    );
    assert_eq!(
        after.get(r#"http_requests_total{method="POST",route="/api/v1/execute",status="200"}"#),
        Some(&1.0)
    );
}

#[tokio::test]
async fn the_main_address_needs_an_admin_session_or_key() {
    let app = spawn_app().await;
    let agent = app.api_key("agent", &["execute"]).await;

    let anonymous = app.get_with_key("/metrics", "").await;
    let wrong_scope = app.get_with_key("/metrics", &agent).await;
    app.login().await;
    let session = app.get("/metrics").await;

    assert_eq!(anonymous.status().as_u16(), 401);
    assert_eq!(wrong_scope.status().as_u16(), 403);
    assert_eq!(session.status().as_u16(), 200);
}

#[tokio::test]
async fn the_metrics_listener_serves_metrics_only_and_openly() {
    let app = spawn_app_with(|c| c.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    let address = app.metrics_address.clone().unwrap();

    let metrics = app
        .client
        .get(format!("{address}/metrics"))
        .send()
        .await
        .unwrap();
    let other = app
        .client
        .get(format!("{address}/api/v1/providers"))
        .send()
        .await
        .unwrap();

    assert_eq!(metrics.status().as_u16(), 200);
    parse(&metrics.text().await.unwrap());
    assert_eq!(other.status().as_u16(), 404);
}
