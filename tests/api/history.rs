//! The execution history: a row for each source, filters, export, retention, kept content.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_in, TestApp};

async fn history(app: &TestApp, form: &[(&str, &str)]) -> Value {
    app.call_ok("execution_history", form).await
}

/// Inserts a run. Tests use far-future times: the retention (30 days by default) runs at
/// start-up and would delete past ones.
async fn insert_run(app: &TestApp, caller: &str, status: &str, created_at: &str) {
    sqlx::query(
        "insert into execution (caller, caller_kind, source, provider, language, status, exit_code, duration_ms, \
         code_sha256, input_bytes, output_bytes, created_at) values ($1, 'api_key', 'rest', 'local', 'python', $2, 0, 5, 'x', 1, 1, $3)",
    )
    .bind(caller)
    .bind(status)
    .bind(created_at)
    .execute(&app.pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn every_source_writes_a_row() {
    let data = tempfile::tempdir().unwrap();
    let program = data.path().join("job.py");
    std::fs::write(&program, "def main():\n    return 1\n").unwrap();
    let status = crate::helpers::console_command(data.path())
        .args(["exec", program.to_str().unwrap()])
        .env("USER", "ops-user")
        .output()
        .unwrap()
        .status;
    assert!(status.success());
    let app = spawn_app_in(data, |_| {}).await;
    app.login().await;
    let key = app.api_key("agent", &["execute"]).await;

    app.call_ok(
        "run_trial",
        &[
            ("language", "python"),
            ("code", "def main():\n    return 2\n"),
        ],
    )
    .await;
    app.call_ok("test_sandbox_connection", &[("kind", "local")])
        .await;
    app.post_json(
        "/api/v1/execute",
        &key,
        &json!({"language": "python", "code": "print(3)"}),
    )
    .await;
    app.post_json("/run", &key, &json!({"code_b64": "cHJpbnQoNCk="}))
        .await;
    let page = history(&app, &[]).await;

    let mut seen: Vec<(String, String, String)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["source"].as_str().unwrap().into(),
                r["caller"].as_str().unwrap().into(),
                r["caller_kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("cli".into(), "ops-user".into(), "cli".into()),
            ("rest".into(), "agent".into(), "api_key".into()),
            ("run".into(), "agent".into(), "api_key".into()),
            ("test_connection".into(), "admin".into(), "admin".into()),
            ("trial".into(), "admin".into(), "admin".into()),
        ]
    );
    assert_eq!(page["total"], 5);
    assert_eq!(page["providers"], json!(["local"]));
}

#[tokio::test]
async fn filters_narrow_the_list_and_bad_times_are_refused() {
    let app = spawn_app().await;
    insert_run(&app, "a", "success", "2099-11-01T10:00:00.000Z").await;
    insert_run(&app, "b", "timeout", "2099-11-02T10:00:00.000Z").await;
    insert_run(&app, "b", "success", "2099-11-03T23:59:59.000Z").await;
    app.login().await;

    let by_caller = history(&app, &[("filter[caller]", "b")]).await;
    let by_status = history(&app, &[("filter[status]", "success")]).await;
    let by_time = history(
        &app,
        &[("filter[from]", "2099-11-02"), ("filter[to]", "2099-11-03")],
    )
    .await;
    let bad = app
        .call("execution_history", &[("filter[from]", "last week")])
        .await;

    assert_eq!(by_caller["total"], 2);
    assert_eq!(by_status["total"], 2);
    assert_eq!(by_time["total"], 2, "'to' includes its whole day");
    assert_eq!(by_time["entries"][0]["caller"], "b");
    assert_eq!(bad.status().as_u16(), 400);
    let html = app
        .get("/admin/history?status=timeout")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("1 run(s)"),
        "the page filters from its query string"
    );
}

#[tokio::test]
async fn exports_follow_the_filter_and_need_a_session() {
    let app = spawn_app().await;
    insert_run(
        &app,
        "agent, with comma",
        "success",
        "2099-11-01T10:00:00.000Z",
    )
    .await;
    insert_run(&app, "other", "timeout", "2099-11-02T10:00:00.000Z").await;
    let anonymous = app.get("/admin/history/export.csv").await;
    app.login().await;

    let csv = app.get("/admin/history/export.csv?status=success").await;
    let json_export = app.get("/admin/history/export.json").await;

    assert_eq!(anonymous.status().as_u16(), 303);
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(csv.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("sandbox-history.csv"));
    let text = csv.text().await.unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("id,created_at,caller,"));
    assert!(lines[1].contains("\"agent, with comma\""), "{}", lines[1]);
    let rows: Value = json_export.json().await.unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert_eq!(rows[0]["caller"], "other", "newest first");
}

#[tokio::test]
async fn retention_deletes_old_and_surplus_rows_and_nothing_else() {
    let app = spawn_app().await;
    insert_run(&app, "ancient", "success", "2020-01-01T00:00:00.000Z").await;
    for i in 0..120 {
        sqlx::query(
            "insert into execution (caller, caller_kind, source, provider, language, status, duration_ms, code_sha256, \
             input_bytes, output_bytes) values ($1, 'api_key', 'rest', 'local', 'python', 'success', 1, 'x', 1, 1)",
        )
        .bind(format!("recent{i}"))
        .execute(&app.pool)
        .await
        .unwrap();
    }
    app.login().await;

    let saved = app
        .call(
            "save_history_settings",
            &[
                ("max_content_bytes", "1000"),
                ("retention_days", "30"),
                ("max_rows", "100"),
            ],
        )
        .await;

    assert_eq!(saved.status().as_u16(), 200);
    let callers: Vec<String> = sqlx::query_scalar("select caller from execution order by id")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(callers.len(), 100);
    assert_eq!(
        callers[0], "recent20",
        "the oldest surplus went, the newest stayed"
    );
    assert!(!callers.contains(&"ancient".to_owned()));
    let invalid = app
        .call(
            "save_history_settings",
            &[
                ("max_content_bytes", "1000"),
                ("retention_days", "0"),
                ("max_rows", "100"),
            ],
        )
        .await;
    assert_eq!(invalid.status().as_u16(), 400);
}

#[tokio::test]
async fn code_and_output_are_kept_only_when_switched_on_and_cut_to_size() {
    let app = spawn_app().await;
    app.login().await;
    app.call_ok(
        "run_trial",
        &[("language", "python"), ("code", "print('first')")],
    )
    .await;
    app.call_ok(
        "save_history_settings",
        &[
            ("keep_content", "on"),
            ("max_content_bytes", "10"),
            ("retention_days", "30"),
            ("max_rows", "1000"),
        ],
    )
    .await;
    app.call_ok(
        "run_trial",
        &[("language", "python"), ("code", "print('second run here')")],
    )
    .await;

    let list = history(&app, &[]).await;
    let newest = list["entries"][0]["id"].to_string();
    let oldest = list["entries"][1]["id"].to_string();
    let kept = app.call_ok("execution_record", &[("id", &newest)]).await;
    let not_kept = app.call_ok("execution_record", &[("id", &oldest)]).await;
    let missing = app.call("execution_record", &[("id", "99999")]).await;

    assert_eq!(kept["code"], "print('sec");
    assert_eq!(kept["stdout"], "second run");
    assert_eq!(kept["code_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(not_kept["code"], Value::Null);
    assert_eq!(missing.status().as_u16(), 404);
    let html = app.text_of(&format!("/admin/history/{newest}")).await;
    assert!(
        html.contains("data-testid=\"run-code\""),
        "the detail page shows the kept code"
    );
    let audit: String = sqlx::query_scalar(
        "select changed_keys from settings_audit where setting = 'history.settings'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audit, r#"["keep_content","max_content_bytes","max_rows"]"#);
}

#[tokio::test]
async fn anonymous_callers_cannot_read_the_history() {
    let app = spawn_app().await;

    for name in [
        "execution_history",
        "execution_record",
        "save_history_settings",
        "take_history_flash",
    ] {
        let response = app.call(name, &[("id", "1")]).await;
        assert_eq!(response.status().as_u16(), 401, "{name}");
    }
    assert_eq!(app.get("/admin/history").await.status().as_u16(), 303);
}
