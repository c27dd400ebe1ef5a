use serde_json::json;

use crate::helpers::{spawn_app, TestApp};

/// Saves the local provider's settings as the form does (`values[<key>]` fields).
async fn save_local(
    app: &TestApp,
    expected_version: &str,
    values: &[(&str, &str)],
) -> serde_json::Value {
    let mut form = vec![
        ("kind".to_owned(), "local".to_owned()),
        ("expected_version".to_owned(), expected_version.to_owned()),
    ];
    form.extend(
        values
            .iter()
            .map(|(key, value)| (format!("values[{key}]"), (*value).to_owned())),
    );
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    app.call_ok("save_sandbox_settings", &form).await
}

/// The local provider's card as the settings page receives it.
async fn local_card(app: &TestApp) -> serde_json::Value {
    app.call_ok("sandbox_settings", &[]).await["providers"][0].clone()
}

const ENDPOINTS: [&str; 7] = [
    "sandbox_settings",
    "save_sandbox_settings",
    "sandbox_setting_versions",
    "restore_sandbox_settings",
    "test_sandbox_connection",
    "run_trial",
    "take_sandbox_flash",
];

#[tokio::test]
async fn anonymous_callers_get_401_from_every_sandbox_endpoint() {
    let app = spawn_app().await;

    for name in ENDPOINTS {
        let response = app
            .call(
                name,
                &[
                    ("kind", "local"),
                    ("id", "1"),
                    ("language", "python"),
                    ("code", "print(1)"),
                ],
            )
            .await;
        assert_eq!(response.status().as_u16(), 401, "{name}");
    }
}

#[tokio::test]
async fn a_first_start_has_the_local_provider_active_with_its_defaults() {
    let app = spawn_app().await;
    app.login().await;

    let settings = app.call_ok("sandbox_settings", &[]).await;

    assert_eq!(settings["active_kind"], "local");
    assert_eq!(
        settings["active_health"]["healthy"], true,
        "{}",
        settings["active_health"]
    );
    let local = &settings["providers"][0];
    assert_eq!(local["info"]["kind"], "local");
    assert_eq!(local["active"], true);
    assert_eq!(local["version"], 1);
    assert_eq!(local["values"]["timeout_secs"], 10);
    assert_eq!(local["schema"]["fields"][0]["key"], "python_path");
}

#[tokio::test]
async fn an_invalid_save_returns_field_errors_and_keeps_the_old_values() {
    let app = spawn_app().await;
    app.login().await;

    let outcome = save_local(
        &app,
        "1",
        &[("timeout_secs", "0"), ("python_path", "python3")],
    )
    .await;

    assert_eq!(
        outcome["Invalid"]["errors"]["timeout_secs"],
        "Enter a number from 1 to 600."
    );
    assert!(outcome["Invalid"]["errors"]["python_path"]
        .as_str()
        .unwrap()
        .starts_with("Enter an absolute path"));
    let card = local_card(&app).await;
    assert_eq!(card["version"], 1);
    assert_eq!(card["values"]["timeout_secs"], 10);
}

#[tokio::test]
async fn a_valid_save_persists_audits_and_takes_effect_without_a_restart() {
    let app = spawn_app().await;
    app.login().await;

    let outcome = save_local(&app, "1", &[("timeout_secs", "1")]).await;

    assert_eq!(
        outcome,
        json!({ "Saved": { "version": 2, "active": true, "restored_from": null, "warning": null } })
    );
    let card = local_card(&app).await;
    assert_eq!(card["values"]["timeout_secs"], 1);
    assert_eq!(card["updated_by"], "admin");
    let audit: (String, String) =
        sqlx::query_as("select actor, changed_keys from settings_audit order by id desc limit 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        audit,
        ("admin".to_owned(), r#"["timeout_secs"]"#.to_owned())
    );
    let run = app
        .call_ok(
            "run_trial",
            &[
                ("language", "python"),
                ("code", "import time\ntime.sleep(5)\n"),
                ("timeout_secs", "30"),
            ],
        )
        .await;
    assert_eq!(
        run["status"], "timeout",
        "the saved 1 s limit applies at once: {run}"
    );
}

#[tokio::test]
async fn a_save_from_a_stale_form_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    app.login().await;
    save_local(&app, "1", &[("memory_mb", "300")]).await;

    let stale = save_local(&app, "1", &[("memory_mb", "400")]).await;

    assert!(
        stale["Conflict"]["message"]
            .as_str()
            .unwrap()
            .contains("changed by someone else"),
        "{stale}"
    );
    let card = local_card(&app).await;
    assert_eq!(card["values"]["memory_mb"], 300);
}

#[tokio::test]
async fn test_connection_runs_the_test_script_on_unsaved_values() {
    let app = spawn_app().await;
    app.login().await;

    let good = app
        .call_ok(
            "test_sandbox_connection",
            &[("kind", "local"), ("values[timeout_secs]", "5")],
        )
        .await;
    let bad = app
        .call_ok(
            "test_sandbox_connection",
            &[("kind", "local"), ("values[node_path]", "/no/node")],
        )
        .await;

    assert_eq!(good["passed"], true, "{good}");
    assert_eq!(good["exit_code"], 0);
    assert!(good["stdout"]
        .as_str()
        .unwrap()
        .contains("sandbox-console test connection"));
    assert_eq!(bad["passed"], false);
    assert!(
        bad["errors"]["node_path"]
            .as_str()
            .unwrap()
            .contains("/no/node"),
        "{bad}"
    );
    assert_eq!(
        local_card(&app).await["version"],
        1,
        "testing saves nothing"
    );
}

#[tokio::test]
async fn a_trial_run_returns_the_value_of_main() {
    let app = spawn_app().await;
    app.login().await;

    let run = app
        .call_ok(
            "run_trial",
            &[
                ("language", "python"),
                ("code", "def main(name):\n    return {\"hi\": name}\n"),
                ("arguments", r#"{"name": "Ada"}"#),
            ],
        )
        .await;

    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["result"]["value"], json!({ "hi": "Ada" }));
    assert_eq!(run["metadata"]["provider"], "local");
}

#[tokio::test]
async fn trial_runs_reject_bad_input_with_400() {
    let app = spawn_app().await;
    app.login().await;

    for (language, arguments, expected) in [
        ("python", "{oops", "not valid JSON"),
        ("python", "[1, 2]", "must be a JSON object"),
        ("cobol", "{}", "unsupported language"),
    ] {
        let response = app
            .call(
                "run_trial",
                &[
                    ("language", language),
                    ("code", "print(1)"),
                    ("arguments", arguments),
                ],
            )
            .await;
        assert_eq!(response.status().as_u16(), 400, "{language} {arguments}");
        let body = response.text().await.unwrap();
        assert!(body.contains(expected), "{body}");
    }
}

#[tokio::test]
async fn an_unticked_switch_saves_false_not_the_default() {
    let app = spawn_app().await;
    app.login().await;
    // fresh_container_per_run defaults to true; the form shows it as a switch.
    let form = [
        ("kind", "docker"),
        ("expected_version", ""),
        ("switch[fresh_container_per_run]", "1"),
    ];

    let saved = app.call_ok("save_sandbox_settings", &form).await;

    assert_eq!(saved["Saved"]["version"], 1, "{saved}");
    let settings = app.call_ok("sandbox_settings", &[]).await;
    let docker = settings["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["info"]["kind"] == "docker")
        .unwrap()
        .clone();
    assert_eq!(
        docker["values"]["fresh_container_per_run"], false,
        "{docker}"
    );
    // Ticked, it posts "true" next to the marker.
    let ticked = [
        ("kind", "docker"),
        ("expected_version", "1"),
        ("values[fresh_container_per_run]", "true"),
        ("switch[fresh_container_per_run]", "1"),
    ];
    app.call_ok("save_sandbox_settings", &ticked).await;
    let settings = app.call_ok("sandbox_settings", &[]).await;
    let docker = settings["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["info"]["kind"] == "docker")
        .unwrap()
        .clone();
    assert_eq!(docker["values"]["fresh_container_per_run"], true);
}

#[tokio::test]
async fn field_errors_and_health_messages_come_in_the_admins_language() {
    let app = spawn_app().await;
    app.login().await;
    let form = [
        ("kind", "local"),
        ("expected_version", "1"),
        ("values[timeout_secs]", "0"),
        ("values[python_path]", "python3"),
    ];
    let post = |name: &'static str, language: &'static str| {
        let (app, form) = (&app, &form);
        async move {
            let response = app.call_in(name, form, language).await;
            assert_eq!(response.status().as_u16(), 200, "{name}");
            response.json::<serde_json::Value>().await.unwrap()
        }
    };

    let chinese = post("save_sandbox_settings", "zh-CN,zh;q=0.9").await;
    assert_eq!(
        chinese["Invalid"]["errors"]["timeout_secs"],
        "请输入 1 到 600 之间的数。"
    );
    assert!(chinese["Invalid"]["errors"]["python_path"]
        .as_str()
        .unwrap()
        .starts_with("请输入绝对路径"));
    let english = post("save_sandbox_settings", "en-US").await;
    assert_eq!(
        english["Invalid"]["errors"]["timeout_secs"],
        "Enter a number from 1 to 600."
    );

    let report = post("test_sandbox_connection", "zh-CN").await;
    assert_eq!(
        report["message"], "设置无效：请修正标出的字段。",
        "{report}"
    );

    // The dashboard's health check of the active provider, in the page's language.
    let page = app.get_in("/", "zh-CN").await.text().await.unwrap();
    assert!(
        page.contains("隔离有效"),
        "the local provider's health sentence"
    );
}

/// The settings page offers RAGFlow's seven providers and ours (docker), each with its name,
/// and its form in both languages: the ssh form's sign-in tabs, Tenki's and UCloud's fields.
#[tokio::test]
async fn the_page_offers_ragflows_seven_providers_and_docker_in_both_languages() {
    let app = spawn_app().await;
    app.login().await;
    let page = |path: &'static str, language: &'static str| {
        let app = &app;
        async move { app.get_in(path, language).await.text().await.unwrap() }
    };
    let kinds = [
        ("local", "Local sandbox", "本机沙箱"),
        ("docker", "Docker", "Docker"),
        ("self_managed", "Self-managed executor", "自管执行器"),
        ("ssh", "SSH", "SSH"),
        (
            "aliyun_codeinterpreter",
            "Aliyun Code Interpreter (AgentRun)",
            "阿里云代码解释器（AgentRun）",
        ),
        ("e2b", "E2B", "E2B"),
        ("tenki", "Tenki", "Tenki"),
        (
            "ucloud_agent_sandbox",
            "UCloud Agent Sandbox",
            "UCloud Agent Sandbox",
        ),
        (
            "kubernetes",
            "Kubernetes (agent-sandbox)",
            "Kubernetes（agent-sandbox）",
        ),
    ];

    let english = page("/admin/sandbox-settings", "en-US").await;
    let chinese = page("/admin/sandbox-settings", "zh-CN").await;
    let ssh_en = page("/admin/sandbox-settings?provider=ssh", "en-US").await;
    let ssh_zh = page("/admin/sandbox-settings?provider=ssh", "zh-CN").await;
    let tenki_zh = page("/admin/sandbox-settings?provider=tenki", "zh-CN").await;
    let ucloud_zh = page(
        "/admin/sandbox-settings?provider=ucloud_agent_sandbox",
        "zh-CN",
    )
    .await;

    let mut at = 0;
    for (kind, name, chinese_name) in kinds {
        let card = format!("data-testid=\"provider-{kind}\"");
        let found = english[at..].find(&card).map(|i| i + at);
        assert!(
            found.is_some(),
            "{kind} is not offered after the one before it"
        );
        at = found.unwrap();
        assert!(english.contains(name), "{name}");
        assert!(chinese.contains(chinese_name), "{chinese_name}");
    }
    assert!(ssh_en.contains("Sign in with") && ssh_en.contains("Private key"));
    assert!(ssh_en.contains("Isolation is whatever its account"));
    assert!(ssh_zh.contains("登录方式") && ssh_zh.contains("已知主机"));
    assert!(tenki_zh.contains("出站网络") && tenki_zh.contains("vCPU 核数"));
    assert!(ucloud_zh.contains("明文 HTTP") && ucloud_zh.contains("互联网访问"));
}
