//! Package environments, built for real from PyPI and the npm registry (one tiny pure-Python
//! wheel, one small npm package), used through the local provider and docker, and what a
//! build refuses: an unknown package, a package with only a source distribution.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{
    docker_provider::our_containers,
    helpers::{spawn_app, spawn_app_stoppable, TestApp},
};

/// A tiny pure-Python wheel and a small npm package, at fixed versions.
const PYTHON: &str = "iniconfig==2.0.0";
const NPM: &str = "is-number@7.0.0";

async fn save_env(
    app: &TestApp,
    name: &str,
    python: &str,
    npm: &str,
    version: Option<i64>,
) -> Value {
    let version = version.map(|v| v.to_string()).unwrap_or_default();
    let response = app
        .call(
            "save_environment",
            &[
                ("name", name),
                ("python_requirements", python),
                ("npm_packages", npm),
                ("version", &version),
            ],
        )
        .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    json!({ "status": status, "body": body })
}

async fn environment(app: &TestApp, name: &str) -> Value {
    app.call_ok("get_environment", &[("name", name)]).await
}

/// Waits for the environment's newest build to end; returns the page.
pub async fn built(app: &TestApp, name: &str) -> Value {
    let started = Instant::now();
    loop {
        let page = environment(app, name).await;
        let building = page["environment"]["latest"]["status"] == "building";
        if !building {
            return page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the build of {name} did not end in 300 s: {page}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Saves docker's settings (not active) with the test image: builds are verified on the
/// providers an admin set up, and docker is one only once saved.
pub async fn set_up_docker(app: &TestApp) {
    let saved = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "docker"),
                ("expected_version", ""),
                ("values[python_image]", crate::docker_provider::IMAGE),
                ("values[javascript_image]", crate::docker_provider::IMAGE),
                ("values[pool_size]", "1"),
            ],
        )
        .await;
    assert!(saved.get("Saved").is_some(), "{saved}");
}

async fn use_on_local(app: &TestApp, environment: &str) {
    let card = app.call_ok("sandbox_settings", &[]).await["providers"][0].clone();
    assert_eq!(card["info"]["kind"], "local");
    let version = card["version"].as_i64().unwrap_or(0).to_string();
    let saved = app
        .call_ok(
            "save_sandbox_settings",
            &[
                ("kind", "local"),
                ("expected_version", &version),
                ("values[environment]", environment),
                ("make_active", "on"),
            ],
        )
        .await;
    assert!(saved.get("Saved").is_some(), "{saved}");
}

/// Stops the console and checks that its pools went with it: a later test counting containers
/// must find none of ours.
async fn stop_and_leave_no_container(
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
) {
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    assert_eq!(
        our_containers(),
        Vec::<String>::new(),
        "no container outlives the console"
    );
}

async fn run(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let response = app.post_json("/api/v1/execute", key, &body).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

const PYTHON_USES_INICONFIG: &str = "import iniconfig\ndef main():\n    return iniconfig.IniConfig('x.ini', data='[a]\\nb = 1\\n').get('a', 'b')\n";
const JS_USES_IS_NUMBER: &str =
    "const isNumber = require('is-number');\nfunction main() { return isNumber('5') && !isNumber('x'); }\n";

#[tokio::test]
async fn a_small_environment_is_built_from_the_registries_locked_verified_and_used_by_local() {
    let app = spawn_app().await;
    app.login().await;

    let saved = save_env(&app, "tiny", PYTHON, NPM, None).await;
    assert_eq!(saved["status"], 200, "{saved}");
    let page = built(&app, "tiny").await;
    let env = &page["environment"];
    assert_eq!(env["ready"]["status"], "ready", "{}", page["log"]["log"]);
    let lock = env["ready"]["lock"].as_array().unwrap();
    assert!(lock.contains(&json!({"ecosystem": "pypi", "name": "iniconfig", "version": "2.0.0", "requested": true})), "{lock:?}");
    assert!(
        lock.contains(
            &json!({"ecosystem": "npm", "name": "is-number", "version": "7.0.0", "requested": true})
        ),
        "{lock:?}"
    );
    assert!(env["ready"]["size_bytes"].as_i64().unwrap() > 10_000);
    assert!(page["log"]["log"].as_str().unwrap().contains("iniconfig"));
    // The folder is read-only inside sandboxes and complete on the host: a lock is written last.
    let hash = env["ready"]["spec_hash"].as_str().unwrap();
    let folder = app.data_dir.path().join("environments").join(hash);
    assert!(
        folder.join("lock.json").is_file() && folder.join("python/iniconfig/__init__.py").is_file()
    );
    // Verification imports every module in a real local sandbox (docker set-ups are listed too).
    let local = env["ready"]["verification"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["provider"] == "local")
        .cloned()
        .unwrap();
    assert_eq!(local["ok"], true, "{local}");

    // Before the local provider names it, the bare interpreter has no iniconfig.
    use_on_local(&app, "none").await;
    let key = app.api_key("agent", &["execute"]).await;
    let (_, bare) = run(
        &app,
        &key,
        json!({"language": "python", "code": PYTHON_USES_INICONFIG}),
    )
    .await;
    assert_eq!(bare["status"], "program_error", "{bare}");
    assert!(bare["stderr"]
        .as_str()
        .unwrap()
        .contains("No module named 'iniconfig'"));

    // A run may name the environment itself.
    let (_, named) = run(
        &app,
        &key,
        json!({"language": "python", "code": PYTHON_USES_INICONFIG, "environment": "tiny"}),
    )
    .await;
    assert_eq!(named["result"]["value"], "1", "{named}");
    let (code, unknown) = run(
        &app,
        &key,
        json!({"language": "python", "code": PYTHON_USES_INICONFIG, "environment": "nope"}),
    )
    .await;
    assert_eq!(code, 400, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap_or(&unknown.to_string())
            .contains("no environment named \"nope\""),
        "{unknown}"
    );

    // Named in the local provider's settings, every run has it.
    use_on_local(&app, "tiny").await;
    let (_, python) = run(
        &app,
        &key,
        json!({"language": "python", "code": PYTHON_USES_INICONFIG}),
    )
    .await;
    assert_eq!(python["status"], "success", "{python}");
    assert_eq!(python["result"]["value"], "1");
    let (_, javascript) = run(
        &app,
        &key,
        json!({"language": "javascript", "code": JS_USES_IS_NUMBER}),
    )
    .await;
    assert_eq!(javascript["result"]["value"], true, "{javascript}");
    // Mounted read-only: a program cannot change it for the next run.
    let (_, write) = run(&app, &key, json!({"language": "python", "code": "def main():\n    open('/opt/sandbox-env/python/iniconfig/__init__.py', 'a').write('x')\n    return 1\n"})).await;
    assert_eq!(write["status"], "program_error", "{write}");
    assert!(
        write["stderr"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{write}"
    );

    // In use: deleting it is refused, with the provider named.
    let refused = app.call("delete_environment", &[("name", "tiny")]).await;
    assert_eq!(refused.status().as_u16(), 400);
    assert!(refused.text().await.unwrap().contains("in use by local"));
    assert!(environment(&app, "tiny").await["environment"]["ready"].is_object());

    // The API lists it for admin keys only.
    let admin_key = app.api_key("ops", &["admin"]).await;
    let listed: Value = app
        .get_with_key("/api/v1/environments", &admin_key)
        .await
        .json()
        .await
        .unwrap();
    let tiny = listed["environments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "tiny")
        .unwrap();
    assert_eq!(tiny["status"], "ready");
    assert_eq!(tiny["used_by"], json!(["local"]));
    assert_eq!(
        app.get_with_key("/api/v1/environments", &key)
            .await
            .status()
            .as_u16(),
        403
    );
}

#[tokio::test]
async fn a_failed_build_shows_its_log_and_the_environment_in_use_keeps_serving() {
    // Unused builds are deleted at once here (the default waits 15 min for runs in flight).
    let app = crate::helpers::spawn_app_with(|config| config.environment_gc_grace_secs = 0).await;
    app.login().await;
    assert_eq!(
        save_env(&app, "tiny", PYTHON, "", None).await["status"],
        200
    );
    let first = built(&app, "tiny").await;
    let ready = first["environment"]["ready"]["id"].clone();
    assert!(ready.is_i64(), "{first}");
    use_on_local(&app, "tiny").await;
    let key = app.api_key("agent", &["execute"]).await;

    // A package that does not exist: the build fails and says which one.
    let version = first["environment"]["version"].as_i64();
    let saved = save_env(
        &app,
        "tiny",
        "iniconfig==2.0.0\nnonexistent-pkg-zzqx-4711\n",
        "",
        version,
    )
    .await;
    assert_eq!(saved["status"], 200, "{saved}");
    let failed = built(&app, "tiny").await;
    let latest = &failed["environment"]["latest"];
    assert_eq!(latest["status"], "failed", "{failed}");
    assert!(
        latest["stage"]
            .as_str()
            .unwrap()
            .contains("nonexistent-pkg-zzqx-4711 is not on the package index"),
        "{latest}"
    );
    assert!(failed["log"]["log"]
        .as_str()
        .unwrap()
        .contains("nonexistent-pkg-zzqx-4711"));
    // The build in use stays, and runs keep working with it.
    assert_eq!(failed["environment"]["ready"]["id"], ready);
    let (_, python) = run(
        &app,
        &key,
        json!({"language": "python", "code": PYTHON_USES_INICONFIG}),
    )
    .await;
    assert_eq!(python["result"]["value"], "1", "{python}");

    // A project with only a source distribution is refused by name (building it would run
    // its code on the host).
    let version = failed["environment"]["version"].as_i64();
    save_env(&app, "tiny", "docopt==0.6.2", "", version).await;
    let refused = built(&app, "tiny").await;
    let stage = refused["environment"]["latest"]["stage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stage.starts_with(
            "docopt has no wheel for this Python and platform, only a source distribution"
        ),
        "{stage}"
    );
    assert_eq!(refused["environment"]["ready"]["id"], ready);

    // An npm package that does not exist.
    let version = refused["environment"]["version"].as_i64();
    save_env(&app, "tiny", PYTHON, "no-such-package-zzqx-4711", version).await;
    let npm = built(&app, "tiny").await;
    let stage = npm["environment"]["latest"]["stage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stage.contains("no-such-package-zzqx-4711 is not on the package index"),
        "{stage}\n{}",
        npm["log"]["log"]
    );
    assert_eq!(npm["environment"]["ready"]["id"], ready);
}

#[tokio::test]
async fn concurrent_builds_of_one_spec_make_one_build_and_bad_specs_are_refused_by_field() {
    let app = spawn_app().await;
    app.login().await;
    // Saving starts a build; more requests for the same spec join it.
    assert_eq!(
        save_env(&app, "tiny", PYTHON, "", None).await["status"],
        200
    );
    let calls = (0..4).map(|_| app.call_ok("build_environment", &[("name", "tiny")]));
    let answers = futures_util::future::join_all(calls).await;
    let page = built(&app, "tiny").await;
    let builds: i64 =
        sqlx::query_scalar("select count(*) from environment_build where environment = 'tiny'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(builds, 1, "{answers:?}");
    assert_eq!(page["environment"]["ready"]["status"], "ready");

    // Options and URLs never reach pip; names are checked.
    let bad = save_env(
        &app,
        "other",
        "--index-url https://evil.example/simple",
        "git+https://x.example/y",
        None,
    )
    .await;
    assert_eq!(bad["status"], 400, "{bad}");
    let message = bad["body"].to_string();
    assert!(
        message.contains("pip options are not accepted"),
        "{message}"
    );
    assert!(message.contains("npm_packages"), "{message}");
    let bad_name = save_env(&app, "None", "iniconfig", "", None).await;
    assert_eq!(bad_name["status"], 400);
    // Creating a name twice is refused.
    let twice = save_env(&app, "tiny", PYTHON, "", None).await;
    assert_eq!(twice["status"], 400);
    assert!(
        twice["body"].to_string().contains("exists already"),
        "{twice}"
    );
}

#[tokio::test]
async fn anonymous_callers_get_401_from_every_environment_endpoint() {
    let app = spawn_app().await;
    for name in [
        "list_environments",
        "get_environment",
        "save_environment",
        "build_environment",
        "test_environment",
        "make_default_environment",
        "delete_environment",
    ] {
        let response = app.call(name, &[("name", "default")]).await;
        assert_eq!(response.status().as_u16(), 401, "{name}");
    }
    assert_eq!(app.get("/api/v1/environments").await.status().as_u16(), 401);
    assert_eq!(app.get("/admin/environments").await.status().as_u16(), 303);
    // A first start seeds the default environment (RAGFlow's image's packages), unbuilt here.
    let rows: Vec<(String, String, i64)> =
        sqlx::query_as("select name, python_requirements, is_default from environment")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        [(
            "default".to_owned(),
            "numpy\npandas<3\nmatplotlib\nrequests".to_owned(),
            1
        )]
    );
}

#[tokio::test]
async fn an_environment_is_mounted_read_only_into_docker_containers_under_runc_and_runsc() {
    let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |_| {}).await;
    app.login().await;
    set_up_docker(&app).await;
    save_env(&app, "tiny", PYTHON, NPM, None).await;
    let page = built(&app, "tiny").await;
    assert_eq!(
        page["environment"]["ready"]["status"], "ready",
        "{}",
        page["log"]["log"]
    );
    let verification = page["environment"]["ready"]["verification"]
        .as_array()
        .unwrap()
        .clone();
    for setup in ["docker (runc)", "docker (runsc)"] {
        let result = verification
            .iter()
            .find(|v| v["provider"] == setup)
            .unwrap();
        assert_eq!(result["ok"], true, "{result}");
    }
    let key = app.api_key("agent", &["execute"]).await;
    for runtime in ["runc", "runsc"] {
        let card = app.call_ok("sandbox_settings", &[]).await["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["info"]["kind"] == "docker")
            .cloned()
            .unwrap();
        let version = card["version"]
            .as_i64()
            .map(|v| v.to_string())
            .unwrap_or_default();
        let pids = if runtime == "runsc" { "1000" } else { "128" };
        let saved = app
            .call_ok(
                "save_sandbox_settings",
                &[
                    ("kind", "docker"),
                    ("expected_version", &version),
                    ("values[runtime]", runtime),
                    ("values[pids_limit]", pids),
                    ("values[pool_size]", "1"),
                    ("values[environment]", "tiny"),
                    ("make_active", "on"),
                ],
            )
            .await;
        assert!(saved.get("Saved").is_some(), "{saved}");
        let (_, python) = run(
            &app,
            &key,
            json!({"language": "python", "code": PYTHON_USES_INICONFIG}),
        )
        .await;
        assert_eq!(python["result"]["value"], "1", "{runtime}: {python}");
        assert_eq!(python["provider"], "docker");
        let (_, javascript) = run(
            &app,
            &key,
            json!({"language": "javascript", "code": JS_USES_IS_NUMBER}),
        )
        .await;
        assert_eq!(
            javascript["result"]["value"], true,
            "{runtime}: {javascript}"
        );
        let (_, write) = run(&app, &key, json!({"language": "python", "code": "def main():\n    open('/opt/sandbox-env/python/iniconfig/__init__.py', 'a').write('x')\n    return 1\n"})).await;
        assert_eq!(write["status"], "program_error", "{runtime}: {write}");
        // The sandbox user may not write there anyway; the mount itself is read-only too.
        let mounts = "def main():\n    return [l.split()[3].split(',')[0] for l in open('/proc/self/mounts') if l.split()[1] == '/opt/sandbox-env']\n";
        let (_, mounted) = run(&app, &key, json!({"language": "python", "code": mounts})).await;
        assert_eq!(
            mounted["result"]["value"],
            json!(["ro"]),
            "{runtime}: {mounted}"
        );
    }
    stop_and_leave_no_container(stop, running).await;
}

/// The environment store the suites share, outside the clone: the default environment is
/// downloaded and built once per machine (its folder is keyed by its spec), then reused.
pub fn shared_store() -> std::path::PathBuf {
    std::env::var_os("SANDBOX_CONSOLE_ENVIRONMENT_STORE")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/sandbox-console/environments")
        })
}

/// RAGFlow's executor acceptance suite (`sandbox_security_tests_full.py`), cases 8 and 10,
/// verbatim.
const RAGFLOW_PANDAS: &str = "\nimport pandas as pd\n\ndef main():\n    data = {'Name': ['Alice', 'Bob', 'Charlie'],\n            'Age': [25, 30, 35]}\n    df = pd.DataFrame(data)\n            ";
pub const RAGFLOW_AXIOS: &str = "\nconst axios = require('axios');\n\nasync function main(args) {\n  try {\n    const response = await axios.get('https://example.com/', {\n      timeout: 10000\n    });\n    console.log('Body:', response.data);\n  } catch (error) {\n    console.error('Error:', error.message);\n  }\n}\n\nmodule.exports = { main };\n            ";

pub async fn ragflow_run(app: &TestApp, key: &str, code: &str, language: &str) -> Value {
    use base64::Engine;
    let body = json!({
        "code_b64": base64::engine::general_purpose::STANDARD.encode(code),
        "language": language,
        "arguments": {},
    });
    let response = app
        .client
        .post(app.url("/run"))
        .header("X-Sandbox-Token", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.unwrap()
}

#[tokio::test]
async fn ragflows_pandas_and_axios_cases_run_through_run_on_local_and_docker() {
    let (app, stop, running) = spawn_app_stoppable(tempfile::tempdir().unwrap(), |config| {
        config.environment_store = Some(shared_store())
    })
    .await;
    app.login().await;
    set_up_docker(&app).await;
    // The default environment is RAGFlow's image's packages.
    app.call_ok("build_environment", &[("name", "default")])
        .await;
    let page = built(&app, "default").await;
    let ready = &page["environment"]["ready"];
    assert_eq!(ready["status"], "ready", "{}", page["log"]["log"]);
    let requested: Vec<&str> = ready["lock"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["requested"] == true)
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        requested,
        ["matplotlib", "numpy", "pandas", "requests", "axios"]
    );
    // Verified under each real isolation: every module imports.
    let verification = ready["verification"].as_array().unwrap();
    let setups: Vec<&str> = verification
        .iter()
        .map(|v| v["provider"].as_str().unwrap())
        .collect();
    assert_eq!(setups, ["local", "docker (runc)", "docker (runsc)"]);
    assert!(
        verification.iter().all(|v| v["ok"] == true),
        "{verification:?}"
    );

    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("ragflow", &["execute"]).await;
    for (provider, config) in [
        ("local", json!({})),
        ("docker", json!({"runtime": "runc", "pool_size": 1})),
    ] {
        let saved = app
            .post_json(
                "/api/v1/admin/sandbox/config",
                &admin,
                &json!({"provider_type": provider, "config": config}),
            )
            .await;
        assert_eq!(saved.status().as_u16(), 200, "{provider}");

        let pandas = ragflow_run(&app, &key, RAGFLOW_PANDAS, "python").await;
        assert_eq!(pandas["status"], "success", "{provider}: {pandas}");
        assert_eq!(pandas["stderr"], "", "{provider}");

        // axios loads and makes its request; this provider has no network (tests/api/egress.rs
        // has the case on an allow-list), so axios's own error is what the case's catch prints. It then returns
        // nothing, which RAGFlow's current protocol (and ours) refuses for JavaScript.
        let axios = ragflow_run(&app, &key, RAGFLOW_AXIOS, "nodejs").await;
        let stderr = axios["stderr"].as_str().unwrap();
        assert!(
            !stderr.contains("Cannot find module"),
            "{provider}: {axios}"
        );
        assert!(stderr.starts_with("Error: "), "{provider}: {axios}");
        assert!(stderr.contains("example.com"), "{provider}: {axios}");
        assert!(
            stderr.contains("main() must return a value"),
            "{provider}: {axios}"
        );

        let aggregate = ragflow_run(
            &app,
            &key,
            "import pandas as pd\ndef main():\n    return int(pd.DataFrame({'a': [1, 2]}).a.sum())\n",
            "python",
        )
        .await;
        assert_eq!(aggregate["result"]["value"], 3, "{provider}: {aggregate}");
    }
    stop_and_leave_no_container(stop, running).await;
}
