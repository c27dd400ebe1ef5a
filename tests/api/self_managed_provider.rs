//! The `self_managed` provider against the RAGFlow executor-manager fake (and against a real
//! sandbox-console's `/run`): conformance, the request on the wire, the token, retries, time-outs
//! and malformed answers.

use std::time::{Duration, Instant};

use base64::{engine::general_purpose::STANDARD, Engine};
use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    sandbox::{
        providers::self_managed::{self, SelfManagedProvider},
        testkit, Error, SandboxProvider,
    },
};
use serde_json::{json, Map, Value};

use crate::{
    fakes::executor_manager,
    helpers::{run_once as run, spawn_app},
    wait::wait_until,
};

fn provider(endpoint: &str, extra: Value) -> SelfManagedProvider {
    let mut config = json!({ "endpoint": endpoint, "timeout": 30, "max_retries": 3 });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    self_managed::build_provider(config.as_object().unwrap()).expect("a valid config")
}

fn request(language: Language, code: &str, arguments: Value) -> ExecRequest {
    ExecRequest {
        language,
        code: code.into(),
        arguments: arguments.as_object().cloned().unwrap_or_default(),
        timeout_secs: None,
    }
}

/// RAGFlow's executor runs `main()` itself, vets the code first and has its own time limit:
/// the provider sends the user's code as it is, so these are RAGFlow's semantics, typed.
#[tokio::test]
async fn ragflows_executor_semantics_come_back_typed() {
    let fake = executor_manager::start(Some("tok-123")).await;
    let provider = provider(&fake.url(), json!({ "api_token": "tok-123" }));
    let python = |code: &str| request(Language::Python, code, json!({}));

    let hello = run(
        &provider,
        &python("def main():\n    print('hello')\n    return 'world'\n"),
    )
    .await
    .unwrap();
    let arguments = run(
        &provider,
        &request(
            Language::Python,
            "def main(yes, no, nothing):\n    return [yes, no, nothing]\n",
            json!({ "yes": true, "no": false, "nothing": null }),
        ),
    )
    .await
    .unwrap();
    let asynchronous = run(&provider, &request(Language::Javascript, "async function main(args) { await new Promise(r => setTimeout(r, 20)); return { got: args.flag }; }", json!({ "flag": false }))).await.unwrap();
    let failing = run(
        &provider,
        &python("def main():\n    raise RuntimeError('boom')\n"),
    )
    .await
    .unwrap();
    let unsafe_code = run(
        &provider,
        &python("import socket\ndef main():\n    return 1\n"),
    )
    .await
    .unwrap();
    let plain = run(&provider, &python("x = 6\nprint(x * 7)\n"))
        .await
        .unwrap();
    // The executor's own time limit, short for this run only: the others keep the fake's
    // default, which a busy machine's interpreter start-up cannot reach (2 s could: CI36).
    fake.knobs.lock().unwrap().sandbox_timeout = Some(Duration::from_secs(2));
    let slow = run(
        &provider,
        &python("import time\ndef main():\n    time.sleep(60)\n"),
    )
    .await
    .unwrap();
    fake.knobs.lock().unwrap().sandbox_timeout = None;
    let hog = run(
        &provider,
        &python("def main():\n    n = 1024\n    return len(b'x' * (n ** 3))\n"),
    )
    .await
    .unwrap();
    // Eight times the provider's 1 MiB cap, to which it cuts the answer; small enough that
    // the fake, which keeps all of it as RAGFlow's executor would, does not spend a core on
    // serialising it (100 MB took it past the 30 s client timeout on a busy machine).
    let flood = run(&provider, &request(Language::Javascript, "const chunk = 'y'.repeat(1 << 20);\nfunction main() { for (let i = 0; i < 8; i++) process.stdout.write(chunk); return 1; }", json!({}))).await.unwrap();

    assert_eq!(
        (hello.status, hello.stdout.as_str(), &hello.result.value),
        (ExecStatus::Success, "hello\n", &json!("world"))
    );
    assert_eq!(arguments.result.value, json!([true, false, null]));
    assert_eq!(asynchronous.result.value, json!({ "got": false }));
    assert_eq!(failing.status, ExecStatus::ProgramError);
    assert!(
        failing.stderr.contains("RuntimeError: boom") && failing.stderr.contains("line 2"),
        "{}",
        failing.stderr
    );
    assert_eq!(
        (unsafe_code.status, unsafe_code.exit_code),
        (ExecStatus::ProgramError, Some(-999))
    );
    assert_eq!(unsafe_code.stderr, "Line 1: Import: socket");
    assert_eq!(unsafe_code.metadata["detail"], "Code is unsafe");
    assert_eq!(
        plain.status,
        ExecStatus::ProgramError,
        "RAGFlow's runner imports main: {plain:?}"
    );
    assert!(
        plain.stderr.contains("cannot import name 'main'"),
        "{}",
        plain.stderr
    );
    assert_eq!(
        slow.status,
        ExecStatus::Timeout,
        "the executor's own time limit: {slow:?}"
    );
    assert_eq!(hog.status, ExecStatus::MemoryLimit, "{hog:?}");
    assert_eq!(
        flood.status,
        ExecStatus::OutputLimit,
        "RAGFlow has no output cap; ours holds"
    );
    assert!(flood.stdout.len() <= 1 << 20);
}

#[tokio::test]
async fn self_managed_passes_the_conformance_suite_against_a_sandbox_console() {
    let app = spawn_app().await;
    let key = app.api_key("ragflow", &["execute"]).await;
    let provider = provider(&app.address, json!({ "api_token": key }));

    let health = provider.health().await;
    let failures = testkit::run_all(&provider).await;

    assert!(health.healthy, "{}", health.message);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn the_run_request_carries_the_code_as_it_is_the_language_arguments_and_the_token() {
    let fake = executor_manager::start(Some("tok-123")).await;
    let provider = provider(&fake.url(), json!({ "api_token": "tok-123" }));
    let arguments = json!({ "name": "Ada", "flag": false, "nothing": null });
    let python_code = "def main(name, flag, nothing):\n    return name\n";
    let mut with_timeout = request(
        Language::Javascript,
        "function main(a) { return a.name; }",
        arguments.clone(),
    );
    with_timeout.timeout_secs = Some(5);

    let python = run(
        &provider,
        &request(Language::Python, python_code, arguments.clone()),
    )
    .await
    .unwrap();
    let javascript = run(&provider, &with_timeout).await.unwrap();

    assert_eq!(python.result.value, json!("Ada"));
    assert_eq!(javascript.result.value, json!("Ada"));
    let sent = fake.served.journal.to("POST", "/run");
    assert_eq!(sent.len(), 2);
    for (recorded, language) in sent.iter().zip(["python", "nodejs"]) {
        assert_eq!(recorded.header("content-type"), Some("application/json"));
        assert_eq!(recorded.header("authorization"), Some("Bearer tok-123"));
        assert_eq!(recorded.header("x-sandbox-token"), Some("tok-123"));
        assert_eq!(recorded.json()["language"], language);
        assert_eq!(recorded.json()["arguments"], arguments);
    }
    let python_body = sent[0].json();
    let keys: Vec<_> = python_body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        ["arguments", "code_b64", "language"],
        "no timeout unless the run asks for one"
    );
    let code = STANDARD
        .decode(python_body["code_b64"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        code,
        python_code.as_bytes(),
        "the executor vets and runs the user's code itself"
    );
    assert_eq!(
        sent[1].json()["timeout"],
        5,
        "a sandbox-console's /run honours it; RAGFlow ignores it"
    );
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_unauthenticated_with_a_clear_message() {
    let fake = executor_manager::start(Some("tok-123")).await;
    let wrong = provider(&fake.url(), json!({ "api_token": "nope" }));
    let missing = provider(&fake.url(), json!({}));
    let hello = request(Language::Python, "def main():\n    return 1\n", json!({}));

    let wrong = run(&wrong, &hello).await.unwrap_err();
    let missing = run(&missing, &hello).await.unwrap_err();

    let Error::Unauthenticated(message) = wrong else {
        panic!("{wrong}")
    };
    assert!(
        message.contains("refused the API token") && message.contains("HTTP 401"),
        "{message}"
    );
    assert!(
        !message.contains("nope"),
        "the token is never echoed: {message}"
    );
    let Error::Unauthenticated(message) = missing else {
        panic!("{missing}")
    };
    assert!(message.contains("without an API token"), "{message}");
    assert_eq!(
        fake.served.journal.to("POST", "/run").len(),
        2,
        "refusals are not retried"
    );
}

#[tokio::test]
async fn rate_limiting_is_retried_with_backoff_up_to_max_retries_in_both_styles() {
    for with_429 in [true, false] {
        let fake = executor_manager::start(None).await;
        let hello = request(
            Language::Python,
            "def main():\n    return 'ok'\n",
            json!({}),
        );
        {
            let mut knobs = fake.knobs.lock().unwrap();
            knobs.rate_limit_next = 2;
            knobs.rate_limit_with_429 = with_429;
        }

        let patient = run(&provider(&fake.url(), json!({ "max_retries": 2 })), &hello)
            .await
            .unwrap();
        fake.knobs.lock().unwrap().rate_limit_next = 5;
        let impatient = run(&provider(&fake.url(), json!({ "max_retries": 1 })), &hello)
            .await
            .unwrap_err();

        assert_eq!(patient.result.value, json!("ok"), "429 style: {with_429}");
        assert!(matches!(impatient, Error::PoolBusy { .. }), "{impatient}");
        assert_eq!(
            fake.served.journal.to("POST", "/run").len(),
            3 + 2,
            "429 style: {with_429}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_executor_is_retried_then_reported_unreachable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let endpoint = format!("http://{address}");
    let hello = request(
        Language::Python,
        "def main():\n    return 'late'\n",
        json!({}),
    );

    let given_up = run(&provider(&endpoint, json!({ "max_retries": 0 })), &hello)
        .await
        .unwrap_err();
    let starter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        executor_manager::start_on(listener, None).await
    });
    let retried = run(&provider(&endpoint, json!({ "max_retries": 4 })), &hello).await;
    let fake = starter.await.unwrap();

    let Error::Unreachable(message) = given_up else {
        panic!("{given_up}")
    };
    assert!(message.contains(&address.to_string()), "{message}");
    assert_eq!(retried.unwrap().result.value, json!("late"));
    assert_eq!(fake.served.journal.to("POST", "/run").len(), 1);
}

#[tokio::test]
async fn the_client_timeout_really_fires() {
    let fake = executor_manager::start(None).await;
    fake.knobs.lock().unwrap().delay = Some(Duration::from_secs(30));
    let provider = provider(&fake.url(), json!({ "timeout": 5 }));
    let started = Instant::now();

    let error = run(
        &provider,
        &request(Language::Python, "def main():\n    return 1\n", json!({})),
    )
    .await
    .unwrap_err();

    assert!(
        matches!(error, Error::Timeout(after) if after == Duration::from_secs(5)),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        fake.served.journal.to("POST", "/run").len(),
        1,
        "a time-out is not retried"
    );
}

#[tokio::test]
async fn malformed_and_failed_answers_are_provider_errors_with_an_excerpt() {
    let fake = executor_manager::start(None).await;
    let provider = provider(&fake.url(), json!({}));
    let hello = request(Language::Python, "def main():\n    return 1\n", json!({}));
    let cases = [
        (200, "<html><body>502 Bad Gateway</body></html>".to_owned(), "not a run result: (an HTML or XML body of 41 bytes, not shown)"),
        (500, "Internal Server Error".to_owned(), "HTTP 500: (a text body of 21 bytes, not shown)"),
        (200, json!({ "status": "exploded" }).to_string(), "unknown status"),
        (200, json!({ "status": "program_runner_error", "stderr": "tar: broken pipe", "exit_code": -3, "detail": "internal_error" }).to_string(), "internal_error): tar: broken pipe"),
    ];

    for (status, body, expected) in cases {
        fake.knobs.lock().unwrap().canned = Some((status, body.clone()));

        let error = run(&provider, &hello).await.unwrap_err();

        let Error::Provider { source, .. } = error else {
            panic!("{body}: {error}")
        };
        let message = source.to_string();
        assert!(message.contains(expected), "{body}: {message}");
        // A body is described, never repeated (a protocol field such as stderr is shown).
        for said in ["Bad Gateway", "Internal Server Error"] {
            assert!(!message.contains(said), "{body}: {message}");
        }
    }
}

#[tokio::test]
async fn ragflow_outcomes_map_to_typed_statuses() {
    let fake = executor_manager::start(None).await;
    let provider = provider(&fake.url(), json!({}));
    let hello = request(Language::Python, "def main():\n    return 1\n", json!({}));
    let canned = |body: Value| Some((200, body.to_string()));
    let all = |status: &str, exit_code: i64, extra: Value| {
        let mut body = json!({ "status": status, "stdout": "", "stderr": "x", "exit_code": exit_code, "detail": null,
            "time_used_ms": 12.5, "memory_used_kb": null, "resource_limit_type": null, "unauthorized_access_type": null,
            "runtime_error_type": null, "artifacts": [], "result": null });
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap());
        body
    };
    let cases = [
        (
            all(
                "resource_limit_exceeded",
                -124,
                json!({ "resource_limit_type": "time" }),
            ),
            ExecStatus::Timeout,
            None,
        ),
        (
            all(
                "resource_limit_exceeded",
                -137,
                json!({ "resource_limit_type": "memory" }),
            ),
            ExecStatus::MemoryLimit,
            None,
        ),
        (
            all(
                "resource_limit_exceeded",
                1,
                json!({ "resource_limit_type": "memory" }),
            ),
            ExecStatus::MemoryLimit,
            Some(1),
        ),
        (
            all(
                "program_error",
                3,
                json!({ "runtime_error_type": "nonzero_exit" }),
            ),
            ExecStatus::ProgramError,
            Some(3),
        ),
        (
            all(
                "unauthorized_access",
                1,
                json!({ "unauthorized_access_type": "file_access" }),
            ),
            ExecStatus::ProgramError,
            Some(1),
        ),
        (
            all(
                "program_runner_error",
                -999,
                json!({ "detail": "Code is unsafe" }),
            ),
            ExecStatus::ProgramError,
            Some(-999),
        ),
        (
            all("success", 0, json!({ "stdout": "x".repeat(2 << 20) })),
            ExecStatus::OutputLimit,
            Some(0),
        ),
    ];

    for (body, status, exit_code) in cases {
        fake.knobs.lock().unwrap().canned = canned(body.clone());

        let result = run(&provider, &hello).await.unwrap();

        assert_eq!(
            (result.status, result.exit_code),
            (status, exit_code),
            "{}",
            &body.to_string()[..120.min(body.to_string().len())]
        );
        assert!(result.stdout.len() <= 1 << 20);
    }
    fake.knobs.lock().unwrap().canned = canned(all(
        "program_runner_error",
        -10,
        json!({ "detail": "no_available_container" }),
    ));
    assert!(matches!(
        run(&provider, &hello).await,
        Err(Error::PoolBusy { .. })
    ));
}

#[tokio::test]
async fn health_reads_healthz_and_names_an_unreachable_endpoint() {
    let fake = executor_manager::start(Some("tok")).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);

    let healthy = provider(&fake.url(), json!({})).health().await;
    let down = provider(&dead, json!({})).health().await;

    assert!(healthy.healthy, "{}", healthy.message);
    assert_eq!(fake.served.journal.to("GET", "/healthz").len(), 1);
    assert!(!down.healthy);
    assert!(
        down.message.starts_with("Cannot reach the executor") && down.message.contains(&dead[7..]),
        "{}",
        down.message
    );
}

#[tokio::test]
async fn the_schema_is_the_seeds_with_pool_size_as_a_real_cap_and_rejects_a_bad_endpoint() {
    let keys: Vec<_> = self_managed::schema()
        .fields
        .into_iter()
        .map(|f| f.key)
        .collect();
    let error = self_managed::build(&Map::from_iter([(
        "endpoint".into(),
        json!("localhost:9385"),
    )]))
    .unwrap_err();

    assert_eq!(
        keys,
        [
            "endpoint",
            "api_token",
            "timeout",
            "max_retries",
            "max_output_bytes",
            "pool_size",
            "queue_wait_secs"
        ]
    );
    assert!(
        matches!(error, Error::ConfigInvalid { errors } if errors["endpoint"].contains("http://"))
    );
}

/// RAGFlow's `pool_size` (also `executor_manager_pool_size`) is the executor's container
/// pool: the provider sends at most that many runs at once, a run waits for a place up to the
/// queue limit, and then it is pool_busy rather than piling onto a full executor.
#[tokio::test]
async fn pool_size_caps_the_runs_sent_to_the_executor_at_once() {
    let fake = executor_manager::start(None).await;
    // Long enough that the second run, refused at once, surely comes while it runs.
    fake.knobs.lock().unwrap().delay = Some(Duration::from_secs(5));
    let provider = std::sync::Arc::new(provider(
        &fake.url(),
        json!({ "pool_size": 1, "queue_wait_secs": 0 }),
    ));
    let code = request(Language::Python, "def main():\n    return 1\n", json!({}));

    let first = {
        let (provider, code) = (provider.clone(), code.clone());
        tokio::spawn(async move { run(provider.as_ref(), &code).await })
    };
    wait_until("the first run to take the only slot", || async {
        provider.pool_state().is_some_and(|p| p.busy == 1)
    })
    .await;
    let busy_pool = provider.pool_state();
    let second = run(provider.as_ref(), &code).await;
    let first = first.await.unwrap();

    assert!(first.is_ok(), "{first:?}");
    assert!(matches!(second, Err(Error::PoolBusy { .. })), "{second:?}");
    assert_eq!(busy_pool.map(|p| (p.busy, p.size)), Some((1, 1)));
    assert_eq!(
        fake.served.journal.to("POST", "/run").len(),
        1,
        "the second run never reached the executor"
    );
}
