//! Every text an admin (or a caller) can type, stored or refused, comes back on every page that
//! shows it as text, never as markup: a hostile string in every provider field of every kind,
//! the trial's code and arguments, environment specs, key and admin names, a sign-in's user
//! name and User-Agent, a run's code and output, the allow-list lines, and the query strings
//! pages echo. (Twice a textarea wrote its text raw: the trial panel, then the environments
//! form; `layout::every_textarea_takes_its_text_escaped` keeps the textareas honest.)

use serde_json::json;

use crate::helpers::{location, spawn_app_with_scripted, TestApp};

/// A textarea breakout, an attribute breakout and a redirect, in one string.
const HOSTILE: &str = concat!(
    "</textarea><script>alert(1)</script>",
    "\"><img src=x onerror=alert(2)>",
    "<meta http-equiv=refresh content=\"0;url=//evil.example/\">"
);

/// What would be live markup if `HOSTILE` came out raw.
const RAW: [&str; 4] = [
    "</textarea><script>",
    "<script>alert(1)",
    "\"><img src=x onerror",
    "<meta http-equiv=refresh content=\"0;url=//evil",
];

fn assert_inert(what: &str, page: &str) {
    for raw in RAW {
        assert!(!page.contains(raw), "{what} has {raw:?} raw:\n{page}");
    }
}

/// Posts `form` to a server function as a browser with JavaScript off does and returns the
/// page it leads to (or the answer itself when it is not a redirect).
async fn post_page(app: &TestApp, function: &str, form: &[(&str, &str)]) -> String {
    let response = app
        .client
        .post(app.url(&format!("/rpc/{function}")))
        .header("accept", "text/html")
        .form(form)
        .send()
        .await
        .unwrap();
    let target = location(&response);
    if target.is_empty() {
        return response.text().await.unwrap();
    }
    app.text_of(&target).await
}

fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn hostile_text_everywhere_comes_back_as_text_on_every_page() {
    let app = spawn_app_with_scripted(|_| {}).await;
    app.login().await;
    let cards = app.call_ok("sandbox_settings", &[]).await["providers"].clone();
    let kinds: Vec<String> = cards
        .as_array()
        .unwrap()
        .iter()
        .map(|card| card["info"]["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.len() >= 6, "every kind and the test's own: {kinds:?}");

    // Every text field of every kind, with the trial's code and arguments: refused or
    // saved, the page shows what was typed.
    for card in cards.as_array().unwrap() {
        let kind = card["info"]["kind"].as_str().unwrap();
        let keys: Vec<String> = card["schema"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                matches!(
                    f["kind"]["type"].as_str(),
                    Some("string" | "multiline" | "json" | "secret")
                )
            })
            .map(|f| format!("values[{}]", f["key"].as_str().unwrap()))
            .collect();
        assert!(!keys.is_empty(), "{kind} has text fields: {card}");
        let mut form: Vec<(&str, &str)> = vec![
            ("kind", kind),
            ("expected_version", ""),
            ("language", "python"),
            ("code", HOSTILE),
            ("arguments", HOSTILE),
        ];
        form.extend(keys.iter().map(|key| (key.as_str(), HOSTILE)));
        let page = post_page(&app, "save_sandbox_settings", &form).await;
        assert_inert(&format!("the {kind} form after a save"), &page);
        let page = post_page(&app, "test_sandbox_connection", &form).await;
        assert_inert(&format!("the {kind} form after a test"), &page);
    }

    // Stored: the test provider's free text, and allow-list comment lines.
    let saved = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "scripted"),
                ("expected_version", ""),
                ("values[endpoint]", "http://fake"),
                ("values[token]", crate::scripted::GOOD_TOKEN),
                ("values[notes]", HOSTILE),
            ],
        )
        .await;
    assert!(saved.get("Saved").is_some(), "{saved}");
    let local = app.call_ok("sandbox_settings", &[]).await["providers"][0]["version"]
        .as_i64()
        .unwrap_or(0)
        .to_string();
    let comment = format!("# {HOSTILE}");
    let saved = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "local"),
                ("expected_version", &local),
                ("values[allowed_hosts]", &comment),
                ("values[static_hosts]", &comment),
                ("make_active", "on"),
            ],
        )
        .await;
    assert!(saved.get("Saved").is_some(), "{saved}");

    // Environments: the form shows a refused spec again.
    let page = post_page(
        &app,
        "save_environment",
        &[
            ("name", HOSTILE),
            ("python_requirements", HOSTILE),
            ("npm_packages", HOSTILE),
        ],
    )
    .await;
    assert_inert("the environments form", &page);
    assert!(
        page.contains("&lt;/textarea&gt;"),
        "the spec is shown again: {page}"
    );
    let page = post_page(
        &app,
        "save_environment",
        &[
            ("name", "ok"),
            ("version", "1"),
            ("python_requirements", HOSTILE),
            ("npm_packages", HOSTILE),
        ],
    )
    .await;
    assert_inert("an environment's edit form", &page);

    // Keys and administrators.
    let page = post_page(
        &app,
        "create_api_key",
        &[("name", HOSTILE), ("execute", "on")],
    )
    .await;
    assert_inert("the API keys page", &page);
    let page = post_page(&app, "add_administrator", &[("username", HOSTILE)]).await;
    assert_inert("the administrators page", &page);

    // A stranger's sign-in: the typed name goes to the audit, the User-Agent to the sessions.
    let stranger = app.sibling();
    stranger.login_as(HOSTILE, "wrong", "/").await;
    let browser = app.sibling();
    let signed_in = browser
        .client
        .post(browser.url("/auth/login"))
        .header("accept", "text/html")
        .header("user-agent", HOSTILE)
        .form(&[
            ("username", crate::helpers::ADMIN),
            ("password", crate::helpers::PASSWORD),
            ("next", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status().as_u16(), 303);

    // A run whose code, output and value are hostile, through the active provider.
    let key = app.api_key("runner", &["execute"]).await;
    let code = format!("def main():\n    print({HOSTILE:?})\n    return {HOSTILE:?}\n");
    let ran = app
        .post_json(
            "/api/v1/execute",
            &key,
            &json!({"language": "python", "code": code}),
        )
        .await;
    assert_eq!(ran.status().as_u16(), 200);
    let history = app.call_ok("execution_history", &[]).await;
    let run = history["entries"][0]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("a run: {history}"));

    let mut pages = vec![
        "/".to_owned(),
        "/admin/environments".to_owned(),
        format!("/admin/environments/{}", encoded(HOSTILE)),
        "/admin/history".to_owned(),
        format!("/admin/history/{run}"),
        format!("/admin/history?caller={}", encoded(HOSTILE)),
        "/admin/api-keys".to_owned(),
        "/admin/administrators".to_owned(),
        "/admin/account".to_owned(),
        format!("/login?next={}", encoded(HOSTILE)),
    ];
    for view in ["changes", "tests", "sign_ins", "accounts"] {
        pages.push(format!("/admin/audit?view={view}"));
        pages.push(format!(
            "/admin/audit?view={view}&actor={}",
            encoded(HOSTILE)
        ));
    }
    for kind in &kinds {
        pages.push(format!("/admin/sandbox-settings?provider={kind}"));
        pages.push(format!(
            "/admin/sandbox-settings?provider={kind}&tab=history"
        ));
    }
    let mut seen_hostile = 0;
    for path in &pages {
        let page = app.text_of(path).await;
        assert_inert(path, &page);
        seen_hostile += usize::from(page.contains("&lt;/textarea&gt;"));
    }
    // The stored texts really reached pages (as text): the settings, their history, the
    // audit's sign-ins, the sessions, the run.
    assert!(
        seen_hostile >= 6,
        "hostile text was shown on {seen_hostile} pages"
    );
}
