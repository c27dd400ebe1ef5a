//! The local provider on this host: the behaviours that matter, including hostile programs.

use serde_json::{json, Map, Value};

use super::*;

fn provider(overrides: Value) -> Arc<dyn SandboxProvider> {
    build(overrides.as_object().unwrap()).expect("the local provider builds")
}

async fn exec(
    provider: &Arc<dyn SandboxProvider>,
    language: Language,
    code: &str,
    arguments: Value,
) -> ExecutionResult {
    let instance = provider.create_instance(language).await.unwrap();
    let request = ExecRequest {
        language,
        code: code.into(),
        arguments: arguments.as_object().cloned().unwrap_or_else(Map::new),
        timeout_secs: None,
    };
    let result = provider
        .execute(&instance, &request)
        .await
        .expect("the provider runs the code");
    provider.destroy_instance(instance).await.unwrap();
    result
}

#[tokio::test]
async fn health_check_proves_isolation() {
    let report = provider(json!({})).health().await;

    assert!(report.healthy, "{}", report.message);
}

#[tokio::test]
async fn python_and_javascript_main_return_values() {
    let p = provider(json!({}));

    let py = exec(
        &p,
        Language::Python,
        "def main(name):\n    return {'hi': name}\n",
        json!({ "name": "Ada" }),
    )
    .await;
    let js = exec(
        &p,
        Language::Javascript,
        "async function main({ n }) { return n + 1; }",
        json!({ "n": 41 }),
    )
    .await;

    assert_eq!(py.status, ExecStatus::Success, "{}", py.stderr);
    assert_eq!(py.result.value, json!({ "hi": "Ada" }));
    assert_eq!(js.status, ExecStatus::Success, "{}", js.stderr);
    assert_eq!(js.result.value, json!(42));
}
