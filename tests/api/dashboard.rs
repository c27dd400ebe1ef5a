//! The dashboard: renders with no runs and with many, counts the last hour, plots latency.

use serde_json::Value;

use crate::helpers::{spawn_app, utc_text};

#[tokio::test]
async fn a_fresh_installation_shows_an_empty_dashboard_without_a_plot() {
    let app = spawn_app().await;
    app.login().await;

    let dashboard = app.call_ok("dashboard", &[]).await;
    let html = app.get("/").await.text().await.unwrap();

    assert_eq!(dashboard["active_kind"], "local");
    assert_eq!(dashboard["health"]["healthy"], true);
    let pool = &dashboard["pool"];
    let ahead = pool["ahead"].clone();
    let mut slots = pool.clone();
    slots.as_object_mut().unwrap().remove("ahead");
    assert_eq!(
        slots,
        serde_json::json!({"size": 8, "busy": 0, "warming": 0, "waiting": 0})
    );
    // One Python sandbox is kept started ahead: ready, or still starting.
    assert_eq!(
        ahead["ready"].as_u64().unwrap() + ahead["warming"].as_u64().unwrap(),
        1,
        "{pool}"
    );
    assert_eq!(dashboard["latency"].as_array().unwrap().len(), 24);
    assert!(dashboard["latency"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["runs"] == 0));
    assert!(html.contains("No runs in this window yet"));
    assert!(!html.contains("data-testid=\"latency-plot\""));
}

#[tokio::test]
async fn many_runs_fill_the_counts_the_plot_and_the_failures() {
    let app = spawn_app().await;
    // 600 runs spread over the last 10 hours (some before the window), one in ten a timeout.
    let rows: Vec<String> = (0..600)
        .map(|i| {
            let status = if i % 10 == 0 { "timeout" } else { "success" };
            format!(
                "('agent', 'api_key', 'rest', 'local', 'python', '{status}', 0, {}, 'x', 1, 1, '{}')",
                10 + i % 100,
                utc_text(-60 * i)
            )
        })
        .collect();
    sqlx::query(&format!(
        "insert into execution (caller, caller_kind, source, provider, language, status, exit_code, \
         duration_ms, code_sha256, input_bytes, output_bytes, created_at) values {}",
        rows.join(", ")
    ))
    .execute(&app.pool)
    .await
    .unwrap();
    app.login().await;

    let dashboard = app.call_ok("dashboard", &[]).await;
    let html = app.get("/").await.text().await.unwrap();

    let last_hour: Vec<(String, i64)> = dashboard["last_hour"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_owned(), p[1].as_i64().unwrap()))
        .collect();
    let total: i64 = last_hour.iter().map(|(_, n)| n).sum();
    assert!((60..=61).contains(&total), "{last_hour:?}");
    assert_eq!(last_hour[0].0, "success");
    let buckets = dashboard["latency"].as_array().unwrap();
    let runs: u64 = buckets.iter().map(|b| b["runs"].as_u64().unwrap()).sum();
    assert!(
        (359..=361).contains(&runs),
        "the 6-hour window holds about 360 runs: {runs}"
    );
    let newest: &Value = buckets.last().unwrap();
    assert!(newest["p95_ms"].as_u64().unwrap() >= newest["p50_ms"].as_u64().unwrap());
    assert_eq!(dashboard["recent_failures"].as_array().unwrap().len(), 10);
    assert_eq!(dashboard["recent_failures"][0]["status"], "timeout");
    assert!(html.contains("data-testid=\"latency-plot\"") && html.contains("<polyline"));
    assert!(
        html.contains("href=\"/admin/history/"),
        "failures link to their detail"
    );
    // The last hour's counts link to the history of that status in that hour.
    let from = dashboard["last_hour_from"].as_str().unwrap();
    assert_eq!(from.len(), "2026-12-03T10:15".len(), "{from}");
    assert!(
        html.contains(&format!("/admin/history?status=success&amp;from={from}")),
        "{}",
        html.split("Last hour")
            .nth(1)
            .unwrap_or_default()
            .chars()
            .take(600)
            .collect::<String>()
    );
    // The scale's top label fits its unit: ms under a second.
    let top = newest["p95_ms"].as_u64().unwrap();
    let label = html
        .split("data-testid=\"plot-top\"")
        .nth(1)
        .and_then(|rest| rest.split("</text>").next())
        .unwrap_or_default()
        .replace("<!>", "");
    assert!(top < 1000 && label.ends_with(" ms"), "{top} {label}");
    assert!(
        html.contains("<title>p50 "),
        "each point says its values on hover"
    );
}

#[tokio::test]
async fn anonymous_callers_cannot_read_the_dashboard() {
    let app = spawn_app().await;

    let response = app.call("dashboard", &[]).await;

    assert_eq!(response.status().as_u16(), 401);
}

#[tokio::test]
async fn the_dashboard_counts_the_sessions_the_account_page_lists() {
    let app = crate::helpers::spawn_app().await;
    app.login().await;
    // A password change signs every other session out and this one in again; a second
    // browser signs in and out.
    app.call_ok(
        "change_password",
        &[
            ("current", crate::helpers::PASSWORD),
            ("new", "another-password-1"),
            ("confirm", "another-password-1"),
        ],
    )
    .await;
    let other = app.sibling();
    other
        .login_as(crate::helpers::ADMIN, "another-password-1", "/")
        .await;
    other
        .client
        .post(other.url("/auth/logout"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();

    let account = app.call_ok("account", &[]).await;
    let overview = app.call_ok("overview", &[]).await;

    let listed = account["sessions"].as_array().unwrap().len();
    assert_eq!(listed, 1, "{account}");
    assert_eq!(overview["active_sessions"], listed, "{overview}");
}
