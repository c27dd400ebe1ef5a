//! The same code behaves the same on the remote providers that run it through our wrappers
//! (E2B, AgentRun, Tenki and UCloud, against their fakes) and on a sandbox-console reached through
//! `self_managed`: what the conformance suite does not cover.

use std::sync::Arc;

use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    sandbox::{
        providers::{aliyun_codeinterpreter, e2b, self_managed, tenki, ucloud_agent_sandbox},
        SandboxProvider,
    },
};
use serde_json::{json, Map, Value};

use crate::{
    fakes::{agentrun, e2b as e2b_fake, tenki as tenki_fake, ucloud as ucloud_fake},
    helpers::spawn_app,
};

async fn run(provider: &dyn SandboxProvider, language: Language, code: &str) -> ExecutionResult {
    let request = ExecRequest {
        language,
        code: code.into(),
        arguments: Map::new(),
        timeout_secs: None,
    };
    crate::helpers::run_once(provider, &request).await.unwrap()
}

fn map(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

#[tokio::test]
async fn plain_scripts_async_main_and_unusable_return_values_behave_alike_on_every_remote_provider()
{
    let console = spawn_app().await;
    let key = console.api_key("peer", &["execute"]).await;
    let e2b_service = e2b_fake::start().await;
    let agentrun_service = agentrun::start().await;
    let tenki_service = tenki_fake::start().await;
    let ucloud_service = ucloud_fake::start().await;
    let providers: Vec<(&str, Arc<dyn SandboxProvider>)> = vec![
        ("self_managed", self_managed::build(&map(json!({ "endpoint": console.address, "api_token": key }))).unwrap()),
        ("e2b", e2b::build(&map(json!({ "api_key": e2b_fake::API_KEY, "api_url": e2b_service.url(), "sandbox_url": e2b_service.url() }))).unwrap()),
        ("aliyun", aliyun_codeinterpreter::build(&map(json!({
            "access_key_id": agentrun::ACCESS_KEY_ID, "access_key_secret": agentrun::SECRET,
            "account_id": agentrun::ACCOUNT_ID, "endpoint": agentrun_service.url(), "control_endpoint": agentrun_service.url(),
        }))).unwrap()),
        ("tenki", tenki::build(&map(json!({ "api_key": tenki_fake::API_KEY, "base_url": tenki_service.url() }))).unwrap()),
        ("ucloud", ucloud_agent_sandbox::build(&map(json!({ "api_key": ucloud_fake::API_KEY, "api_url": ucloud_service.url(), "sandbox_url": ucloud_service.url() }))).unwrap()),
    ];

    for (name, provider) in &providers {
        let plain_js = run(
            provider.as_ref(),
            Language::Javascript,
            "console.log('plain', 1 + 1);",
        )
        .await;
        let async_python = run(provider.as_ref(), Language::Python, "import asyncio\nasync def main():\n    await asyncio.sleep(0.01)\n    return {'n': 5}\n").await;
        let not_json = run(
            provider.as_ref(),
            Language::Python,
            "def main():\n    return {1, 2}\n",
        )
        .await;
        let undefined = run(
            provider.as_ref(),
            Language::Javascript,
            "function main() { console.log('no value'); }",
        )
        .await;

        assert_eq!(
            (
                plain_js.status,
                plain_js.stdout.as_str(),
                plain_js.result.present
            ),
            (ExecStatus::Success, "plain 2\n", false),
            "{name}: {plain_js:?}"
        );
        assert_eq!(
            (async_python.status, &async_python.result.value),
            (ExecStatus::Success, &json!({ "n": 5 })),
            "{name}: {async_python:?}"
        );
        assert_eq!(
            not_json.status,
            ExecStatus::ProgramError,
            "{name}: {not_json:?}"
        );
        assert!(
            not_json.stderr.contains("not JSON") || not_json.stderr.contains("JSON serializable"),
            "{name}: {}",
            not_json.stderr
        );
        assert_eq!(
            undefined.status,
            ExecStatus::ProgramError,
            "{name}: {undefined:?}"
        );
        assert!(
            undefined.stderr.contains("must return a value"),
            "{name}: {}",
            undefined.stderr
        );
        assert!(!undefined.result.present);
    }
    assert_eq!(
        (
            e2b_service.live_sandboxes(),
            agentrun_service.live_sandboxes(),
            tenki_service.live_sessions(),
            ucloud_service.live_sandboxes()
        ),
        (0, 0, 0, 0)
    );
}
