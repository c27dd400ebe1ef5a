//! What the HTTP gateway adds to a run: the same trivial call made N times in-process
//! (`SandboxService::execute`) and N times through `POST /api/v1/execute` on loopback with
//! an API key (auth, JSON, history row included), for two providers: `noop` (answers at once;
//! defined here, so the difference is the gateway alone) and `local` (a real sandboxed run).
//! Run: `cargo run --features ssr --example gateway_overhead [runs]` (default 1000).

use std::{sync::Arc, time::Instant};

use async_trait::async_trait;
use sandbox_console::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language, ReturnValue},
        provider::{HealthReport, ProviderInfo},
        schema::ConfigSchema,
        settings::SaveOutcome,
    },
    sandbox::{providers, registry::ProviderKind, Error, Instance, SandboxProvider},
    server::{
        config::Config,
        db::{api_key, execution::Caller},
        startup::Application,
    },
};
use serde_json::{json, Map};

#[derive(Debug)]
struct Noop(ProviderInfo);

fn noop_info() -> ProviderInfo {
    ProviderInfo {
        kind: "noop".into(),
        name: "No-op".into(),
        description: "Answers at once without running anything.".into(),
        tags: vec![],
    }
}

#[async_trait]
impl SandboxProvider for Noop {
    fn info(&self) -> &ProviderInfo {
        &self.0
    }
    fn languages(&self) -> &[Language] {
        &Language::ALL
    }
    async fn health(&self) -> HealthReport {
        HealthReport {
            healthy: true,
            message: String::new(),
            details: Map::new(),
        }
    }
    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        Ok(Instance {
            id: "noop".into(),
            language,
            metadata: Map::new(),
        })
    }
    async fn execute(&self, _: &Instance, _: &ExecRequest) -> Result<ExecutionResult, Error> {
        Ok(ExecutionResult {
            status: ExecStatus::Success,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(0),
            wall_time_ms: 0,
            result: ReturnValue::of(json!(1)),
            artifacts: vec![],
            metadata: Map::new(),
        })
    }
    async fn destroy_instance(&self, _: Instance) -> Result<(), Error> {
        Ok(())
    }
}

fn stats(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[ms.len() * 95 / 100])
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let data = tempfile::tempdir()?;
    let mut config = Config::with_data_dir(data.path());
    config.listen = "127.0.0.1:0".parse()?;
    config.admin_password = Some("not used by this benchmark".into());
    let registry = providers::registry().register(ProviderKind {
        info: noop_info,
        schema: ConfigSchema::default,
        build: |_| Ok(Arc::new(Noop(noop_info()))),
    });
    let app = Application::build_with_registry(config, registry).await?;
    let url = format!("http://127.0.0.1:{}/api/v1/execute", app.port());
    let state = app.state().clone();
    let key = api_key::create(
        &state.pool,
        "bench",
        &[sandbox_console::model::api_key::Scope::Execute],
        "bench",
    )
    .await?
    .key;
    tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();
    let request = ExecRequest {
        language: Language::Python,
        code: "def main():\n    return 1\n".into(),
        arguments: Map::new(),
        timeout_secs: None,
    };
    let body = json!({"language": "python", "code": request.code});
    let caller = Caller::api_key("bench", "rest");
    println!("runs per measurement: {runs} (medians and p95, ms)");
    println!("| provider | in-process median | HTTP median | overhead median | in-process p95 | HTTP p95 |");
    println!("|---|---|---|---|---|---|");
    for kind in ["noop", "local"] {
        let saved = state
            .sandbox
            .save("bench", kind, Map::new(), None, true)
            .await?;
        assert!(
            matches!(saved, SaveOutcome::Saved { active: true, .. }),
            "{saved:?}"
        );
        let warm = (runs / 20).max(5);
        let mut inproc = Vec::with_capacity(runs);
        for i in 0..runs + warm {
            let started = Instant::now();
            let result = state.sandbox.execute(&request, &caller).await?;
            assert_eq!(result.status, ExecStatus::Success);
            if i >= warm {
                inproc.push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
        let mut http = Vec::with_capacity(runs);
        for i in 0..runs + warm {
            let started = Instant::now();
            let response = client
                .post(&url)
                .bearer_auth(&key)
                .json(&body)
                .send()
                .await?;
            assert_eq!(response.status(), 200);
            let answer: serde_json::Value = response.json().await?;
            assert_eq!(answer["status"], "success");
            if i >= warm {
                http.push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
        let (in_median, in_p95) = stats(inproc);
        let (http_median, http_p95) = stats(http);
        println!(
            "| {kind} | {in_median:.3} | {http_median:.3} | {:.3} | {in_p95:.3} | {http_p95:.3} |",
            http_median - in_median
        );
    }
    Ok(())
}
