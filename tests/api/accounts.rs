//! Accounts in the console: generated passwords must be changed at the first sign-in; the
//! Account page (password, sessions); the Administrators page (add, disable, new password);
//! every one of these events in the audit. Real server, real SQLite file.

use crate::helpers::{location, spawn_app, TestApp, ADMIN, PASSWORD};

const ENDPOINTS: [&str; 10] = [
    "account",
    "change_password",
    "sign_out_other_sessions",
    "set_theme",
    "set_language",
    "take_account_flash",
    "administrators",
    "add_administrator",
    "reset_administrator_password",
    "set_administrator_disabled",
];

async fn audit_actions(app: &TestApp) -> Vec<(String, String)> {
    sqlx::query_as("select actor, action from settings_audit where setting = 'account' order by id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

async fn add(app: &TestApp, name: &str) -> String {
    app.call_ok("add_administrator", &[("username", name)])
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn anonymous_callers_get_401_from_every_account_endpoint() {
    let app = spawn_app().await;
    for name in ENDPOINTS {
        let response = app
            .call(
                name,
                &[
                    ("id", "1"),
                    ("disabled", "true"),
                    ("theme", "dark"),
                    ("locale", "en"),
                    ("username", "x"),
                ],
            )
            .await;
        assert_eq!(response.status().as_u16(), 401, "{name}");
    }
    assert_eq!(
        location(&app.get("/admin/account").await),
        "/login?next=/admin/account"
    );
}

#[tokio::test]
async fn a_generated_password_must_be_changed_before_anything_else() {
    let app = spawn_app().await;
    app.login().await;
    let generated = add(&app, "second").await;
    assert!(generated.len() >= 16, "{generated}");
    let second = app.sibling();

    let signed_in = second.login_as("second", &generated, "/").await;

    assert_eq!(signed_in.status().as_u16(), 303);
    assert_eq!(location(&second.get("/").await), "/admin/account");
    assert_eq!(
        location(&second.get("/admin/sandbox-settings").await),
        "/admin/account"
    );
    let refused = second.call("sandbox_settings", &[]).await;
    assert_eq!(refused.status().as_u16(), 403);
    assert!(refused
        .text()
        .await
        .unwrap()
        .contains("password_change_required"));
    let account = second.call_ok("account", &[]).await;
    assert_eq!(account["admin"]["must_change_password"], true);
    assert_eq!(second.get("/admin/account").await.status().as_u16(), 200);

    let wrong = second
        .call(
            "change_password",
            &[
                ("current", "nope-nope"),
                ("new", "a-new-pass-1"),
                ("confirm", "a-new-pass-1"),
            ],
        )
        .await;
    assert_eq!(wrong.status().as_u16(), 400);
    assert!(wrong
        .text()
        .await
        .unwrap()
        .contains("current password is not right"));
    let mismatch = second
        .call(
            "change_password",
            &[
                ("current", &generated),
                ("new", "a-new-pass-1"),
                ("confirm", "a-new-pass-2"),
            ],
        )
        .await;
    assert_eq!(mismatch.status().as_u16(), 400);
    let short = second
        .call(
            "change_password",
            &[
                ("current", &generated),
                ("new", "short"),
                ("confirm", "short"),
            ],
        )
        .await;
    assert_eq!(short.status().as_u16(), 400);
    second
        .call_ok(
            "change_password",
            &[
                ("current", &generated),
                ("new", "a-new-pass-1"),
                ("confirm", "a-new-pass-1"),
            ],
        )
        .await;

    // This session goes on, and every page opens.
    assert_eq!(second.get("/").await.status().as_u16(), 200);
    second.call_ok("sandbox_settings", &[]).await;
    let account = second.call_ok("account", &[]).await;
    assert_eq!(account["admin"]["must_change_password"], false);
    // The old password no longer signs in; the new one does.
    let third = app.sibling();
    assert_eq!(
        third
            .login_json("second", &generated)
            .await
            .status()
            .as_u16(),
        401
    );
    assert_eq!(
        third
            .login_json("second", "a-new-pass-1")
            .await
            .status()
            .as_u16(),
        200
    );
    assert_eq!(
        audit_actions(&app).await,
        [
            (ADMIN.to_owned(), "admin_add".to_owned()),
            ("second".to_owned(), "password_change".to_owned())
        ]
    );
}

#[tokio::test]
async fn an_admin_sees_their_sessions_and_signs_the_others_out() {
    let app = spawn_app().await;
    app.login().await;
    let phone = app.sibling();
    phone.login().await;

    let account = app.call_ok("account", &[]).await;
    let sessions = account["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{account}");
    assert_eq!(sessions.iter().filter(|s| s["current"] == true).count(), 1);
    assert_eq!(sessions[0]["address"], "127.0.0.1");

    let gone = app.call_ok("sign_out_other_sessions", &[]).await;

    assert_eq!(gone, 1);
    assert_eq!(phone.call("account", &[]).await.status().as_u16(), 401);
    app.call_ok("account", &[]).await;
    assert_eq!(
        app.call_ok("account", &[]).await["sessions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Changing the password signs the others out as well.
    phone.login().await;
    app.call_ok(
        "change_password",
        &[
            ("current", PASSWORD),
            ("new", "another-pass-9"),
            ("confirm", "another-pass-9"),
        ],
    )
    .await;
    assert_eq!(phone.call("account", &[]).await.status().as_u16(), 401);
    app.call_ok("account", &[]).await;
    // The theme is remembered per admin, and only known themes are taken.
    app.call_ok("set_theme", &[("theme", "dark")]).await;
    assert_eq!(app.call_ok("account", &[]).await["admin"]["theme"], "dark");
    assert_eq!(
        app.call("set_theme", &[("theme", "purple")])
            .await
            .status()
            .as_u16(),
        400
    );
    assert!(app.text_of("/").await.contains(r#"data-theme="dark""#));
}

#[tokio::test]
async fn a_disabled_admin_is_signed_out_and_cannot_sign_in_until_enabled() {
    let app = spawn_app().await;
    app.login().await;
    let generated = add(&app, "temp").await;
    let temp = app.sibling();
    temp.login_json("temp", &generated).await;
    let admins = app.call_ok("administrators", &[]).await;
    let id = admins
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["username"] == "temp")
        .unwrap()["id"]
        .to_string();
    let me = admins
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["username"] == ADMIN)
        .unwrap()["id"]
        .to_string();

    app.call_ok(
        "set_administrator_disabled",
        &[("id", &id), ("disabled", "true")],
    )
    .await;

    assert_eq!(temp.call("account", &[]).await.status().as_u16(), 401);
    assert_eq!(
        temp.login_json("temp", &generated).await.status().as_u16(),
        401
    );
    let refused = app
        .call(
            "set_administrator_disabled",
            &[("id", &me), ("disabled", "true")],
        )
        .await;
    assert_eq!(refused.status().as_u16(), 400);
    app.call_ok(
        "set_administrator_disabled",
        &[("id", &id), ("disabled", "false")],
    )
    .await;
    assert_eq!(
        temp.login_json("temp", &generated).await.status().as_u16(),
        200
    );

    // A new generated password: the old one stops working, the new one must be changed.
    let fresh = app
        .call_ok("reset_administrator_password", &[("id", &id)])
        .await
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        temp.call("account", &[]).await.status().as_u16(),
        401,
        "signed out"
    );
    assert_eq!(
        temp.login_json("temp", &generated).await.status().as_u16(),
        401
    );
    assert_eq!(temp.login_json("temp", &fresh).await.status().as_u16(), 200);
    assert_eq!(
        temp.call_ok("account", &[]).await["admin"]["must_change_password"],
        true
    );
    let own = app
        .call("reset_administrator_password", &[("id", &me)])
        .await;
    assert_eq!(own.status().as_u16(), 400);
    let actions: Vec<String> = audit_actions(&app)
        .await
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    assert_eq!(
        actions,
        [
            "admin_add",
            "admin_disable",
            "admin_enable",
            "admin_password_reset"
        ]
    );
    let detail: String = sqlx::query_scalar(
        "select detail from settings_audit where action = 'admin_password_reset'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        detail.contains("temp") && !detail.contains(&fresh),
        "{detail}"
    );
}

#[tokio::test]
async fn pages_follow_accept_language_unless_the_admin_chose_a_language() {
    let app = spawn_app().await;
    app.login().await;
    let page = |language: &'static str| {
        let app = &app;
        async move {
            app.get_in("/admin/sandbox-settings", language)
                .await
                .text()
                .await
                .unwrap()
        }
    };

    let english = page("en-US,en;q=0.9").await;
    let chinese = page("zh-CN,zh;q=0.9,en;q=0.8").await;

    assert!(
        english.contains(r#"<html lang="en""#),
        "{}",
        &english[..200]
    );
    assert!(english.contains("Sandbox settings") && english.contains("Trial run"));
    assert!(
        chinese.contains(r#"<html lang="zh-CN""#),
        "{}",
        &chinese[..200]
    );
    assert!(chinese.contains("沙箱设置") && chinese.contains("试运行"));
    // Provider schemas too: a field label and its help.
    assert!(
        chinese.contains("Python 解释器"),
        "the schema's labels are translated"
    );
    assert!(chinese.contains("本机上 Python 3 解释器的绝对路径"));
    // Providers' names and descriptions, and select options.
    assert!(chinese.contains("本机沙箱") && chinese.contains("自管执行器"));
    assert!(chinese.contains("无：只有回环接口"));
    assert!(chinese.contains("默认运行环境"), "a placeholder in words");

    // The admin's own choice wins over the browser's, in any browser.
    app.call_ok("set_language", &[("locale", "zh-CN")]).await;
    assert!(page("en-US").await.contains("沙箱设置"));
    app.call_ok("set_language", &[("locale", "en")]).await;
    assert!(page("zh-CN").await.contains("Sandbox settings"));
    app.call_ok("set_language", &[("locale", "auto")]).await;
    assert!(page("zh-CN").await.contains("沙箱设置"));
    assert_eq!(
        app.call("set_language", &[("locale", "fr")])
            .await
            .status()
            .as_u16(),
        400
    );
}

/// The text a reader sees in a page's `<main>`: tags, scripts and styles left out.
fn main_text(html: &str) -> String {
    let start = html.find("<main").expect("a <main>");
    let end = html.find("</main>").expect("a </main>");
    let mut text = String::new();
    let mut in_tag = false;
    for c in html[start..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

#[tokio::test]
async fn every_page_speaks_chinese_and_writes_dates_in_the_chosen_language() {
    let app = spawn_app().await;
    app.login().await;
    // Something on every page: a key (created, last used), a run, an audit row.
    app.call_ok("create_api_key", &[("name", "agent"), ("execute", "on")])
        .await;
    let run = app
        .call_ok(
            "run_trial",
            &[
                ("language", "python"),
                ("code", "def main():\n    return 1\n"),
            ],
        )
        .await;
    assert_eq!(run["status"], "success", "{run}");
    let page = |path: &'static str, language: &'static str| {
        let app = &app;
        async move {
            let response = app.get_in(path, language).await;
            assert_eq!(response.status().as_u16(), 200, "{path}");
            main_text(&response.text().await.unwrap())
        }
    };
    // Each page's heading in Chinese, and none of its English words left.
    // (page, its heading, whether it shows a date)
    let pages = [
        ("/", "仪表盘", true),
        ("/admin/environments", "运行环境", false),
        ("/admin/history", "执行历史", true),
        ("/admin/api-keys", "API 密钥", true),
        ("/admin/audit?view=accounts", "审计", true),
        ("/admin/account", "账户", true),
        ("/admin/administrators", "管理员", true),
    ];
    let english = [
        "Loading",
        "Name",
        "Status",
        "When",
        "Caller",
        "Filter",
        "Created",
        "Revoke",
        "password",
        "Theme",
        "sessions",
        "Dashboard",
        "Last hour",
        "Version",
        "Database",
        "Environments",
        "Create",
        "Provider",
        "Who",
        "Page ",
        "Export",
        "Keys",
        "Add",
    ];
    for (path, heading, dated) in pages {
        let text = page(path, "zh-CN,zh;q=0.9").await;
        assert!(text.contains(heading), "{path}: {text}");
        if path == "/admin/api-keys" {
            assert!(text.contains("从未"), "a key that never expires: {text}");
        }
        if path == "/" {
            assert!(text.contains("本机沙箱"), "the provider's name: {text}");
        }
        for word in english {
            assert!(!text.contains(word), "{path} still says {word:?}: {text}");
        }
        if !dated {
            continue;
        }
        assert!(
            text.contains("年") && text.contains(" UTC"),
            "{path}: dates are written the Chinese way, marked UTC: {text}"
        );
        // The same page in English writes the same dates the English way.
        let text = page(path, "en-US").await;
        let month = [
            "Jan ", "Feb ", "Mar ", "Apr ", "May ", "Jun ", "Jul ", "Aug ", "Sep ", "Oct ", "Nov ",
            "Dec ",
        ];
        assert!(
            month.iter().any(|m| text.contains(m)) && text.contains(" UTC") && !text.contains("年"),
            "{path}: {text}"
        );
    }
}

/// Posts an account form as a browser does (JavaScript on or off: these forms are plain) and
/// returns where it led and that page.
async fn post_form(app: &TestApp, function: &str, form: &[(&str, &str)]) -> (u16, String, String) {
    let response = app
        .client
        .post(app.url(&format!("/rpc/{function}")))
        .header("accept", "text/html")
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let target = location(&response);
    let page = if target.is_empty() {
        response.text().await.unwrap()
    } else {
        app.text_of(&target).await
    };
    (status, target, page)
}

#[tokio::test]
async fn refused_account_and_administrator_forms_come_back_on_their_page_beside_the_field() {
    let app = spawn_app().await;
    app.login().await;
    add(&app, "ops-lead").await;

    let (status, target, page) = post_form(
        &app,
        "change_password",
        &[
            ("current", PASSWORD),
            ("new", "a-new-pass-1"),
            ("confirm", "a-new-pass-2"),
        ],
    )
    .await;
    assert!(matches!(status, 302 | 303), "{status}: {page}");
    assert_eq!(target, "/admin/account");
    assert!(page.contains("data-testid=\"confirm-error\""), "{page}");
    assert!(page.contains("confirmation differ"), "{page}");

    let (_, target, page) = post_form(
        &app,
        "change_password",
        &[
            ("current", "not-it"),
            ("new", "a-new-pass-1"),
            ("confirm", "a-new-pass-1"),
        ],
    )
    .await;
    assert_eq!(target, "/admin/account");
    assert!(page.contains("data-testid=\"current-error\""), "{page}");

    let (status, target, page) =
        post_form(&app, "add_administrator", &[("username", "ops-lead")]).await;
    assert!(matches!(status, 302 | 303), "{status}: {page}");
    assert_eq!(target, "/admin/administrators");
    assert!(page.contains("data-testid=\"username-error\""), "{page}");
    assert!(page.contains("already exists"), "{page}");
    assert!(
        page.contains("value=\"ops-lead\""),
        "what was typed stays in the field"
    );
    let (_, _, page) = post_form(&app, "add_administrator", &[("username", "bad name!")]).await;
    assert!(page.contains("value=\"bad name!\""), "{page}");
    // Callers that ask for JSON still get the error itself.
    let json = app
        .call("add_administrator", &[("username", "ops-lead")])
        .await;
    assert_eq!(json.status().as_u16(), 400);
}
