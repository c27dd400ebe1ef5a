//! Replicas on one PostgreSQL under load: 1 console vs 3 consoles (each a full `Application`
//! with its own listener, database pool and provider, on one schema of their own), driven
//! over loopback by a bounded number of clients that spread `POST /api/v1/execute` round-robin
//! over the replicas. Every request is authorised by an API key, admitted, run and written to
//! the shared history, as in production.
//!
//! The providers are the bench's own `held` and `noop` (fixed.rs).

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use sandbox_console::{
    model::settings::SaveOutcome,
    sandbox::registry::Registry,
    server::{
        config::Config,
        db::{self, api_key, execution::Actor, system_setting::Expected},
        sandbox::Gate,
        startup::Application,
    },
};
use serde_json::{json, Map, Value};

/// What one load run measured.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Any 32 bytes, base64: replicas on one database must share the key.
const SECRET_KEY: &str = "YmVuY2ggcmVwbGljYXMgc2hhcmUgdGhpcyBrZXkhISE=";

/// The consoles of one load run, stopped (gracefully, within a bound) however it ends.
#[derive(Default)]
struct Running {
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
    servers: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
    data_dirs: Vec<tempfile::TempDir>,
}

impl Running {
    async fn stop(self) {
        for stop in self.stops {
            let _ = stop.send(());
        }
        for server in self.servers {
            // Nothing is in flight by now: a console stops at once; the bound is for a bug.
            if tokio::time::timeout(Duration::from_secs(40), server)
                .await
                .is_err()
            {
                eprintln!("replicas: a console did not stop within 40 s");
            }
        }
        drop(self.data_dirs);
    }
}

/// One load run: `replicas` consoles with provider `kind` active, `requests` runs from `clients`
/// concurrent clients spread round-robin over them, after `warm` runs per replica not counted.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub kind: &'static str,
    pub replicas: usize,
    pub clients: usize,
    pub requests: usize,
    pub warm: usize,
}

/// Runs `shape` on a fresh schema of the PostgreSQL server at `server`. The consoles are
/// stopped and the schema dropped afterwards, also when a step fails.
pub async fn load(server: &str, registry: fn() -> Registry, shape: Shape) -> anyhow::Result<Load> {
    let Shape { kind, replicas, .. } = shape;
    let schema = format!("bench_{kind}_{replicas}_{}", std::process::id());
    let admin = db::connect(server).await?;
    sqlx::query(&format!("drop schema if exists {schema} cascade"))
        .execute(&admin)
        .await?;
    sqlx::query(&format!("create schema {schema}"))
        .execute(&admin)
        .await?;
    let separator = if server.contains('?') { '&' } else { '?' };
    let url = format!("{server}{separator}options[search_path]={schema}");
    let mut running = Running::default();
    let measured = measure(&url, &mut running, registry, shape).await;
    running.stop().await;
    sqlx::query(&format!("drop schema if exists {schema} cascade"))
        .execute(&admin)
        .await?;
    let (mut samples, elapsed) = measured?;
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Ok(Load {
        per_second: samples.len() as f64 / elapsed,
        p50_ms: at(0.50),
        p99_ms: at(0.99),
    })
}

/// Starts the consoles (into `running`), makes the provider active, warms up, then runs the
/// load: each request's latency in ms, and the seconds the load took.
async fn measure(
    url: &str,
    running: &mut Running,
    registry: fn() -> Registry,
    shape: Shape,
) -> anyhow::Result<(Vec<f64>, f64)> {
    let Shape {
        kind,
        replicas,
        clients,
        requests,
        warm,
    } = shape;
    let mut addresses = Vec::new();
    let mut first_state = None;
    for index in 0..replicas {
        let data = tempfile::tempdir()?;
        let mut config = Config::with_data_dir(data.path());
        config.listen = "127.0.0.1:0".parse()?;
        config.database_url = Some(url.to_owned());
        config.secret_key = Some(SECRET_KEY.into());
        config.admin_password = Some("benchmark admin password".into());
        config.replica_name = Some(format!("bench-{index}"));
        config.build_default_environment = false;
        running.data_dirs.push(data);
        let app = Application::build_with_registry(config, registry()).await?;
        addresses.push(format!("http://127.0.0.1:{}/api/v1/execute", app.port()));
        first_state.get_or_insert_with(|| app.state().clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        running.stops.push(stop);
        running.servers.push(tokio::spawn(app.run_until(async move {
            let _ = stopped.await;
        })));
    }
    let state = first_state.expect("at least one replica");
    let saved = state
        .sandbox
        .save(
            &Actor::admin("bench"),
            kind,
            Map::new(),
            Expected::Any,
            true,
            Gate::Anyway,
        )
        .await?;
    anyhow::ensure!(
        matches!(saved, SaveOutcome::Saved { active: true, .. }),
        "{saved:?}"
    );
    let key = api_key::create(
        &state.pool,
        "bench",
        &[sandbox_console::model::api_key::Scope::Execute],
        "bench",
        None,
    )
    .await?
    .key;
    drop(state);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(clients)
        .build()?;
    let body = json!({"language": "python", "code": "def main():\n    return 1\n"});
    let call = move |address: String| {
        let (client, key, body) = (client.clone(), key.clone(), body.clone());
        async move {
            let started = Instant::now();
            let response = client
                .post(&address)
                .bearer_auth(&key)
                .json(&body)
                .send()
                .await?;
            anyhow::ensure!(response.status() == 200, "HTTP {}", response.status());
            let answer: Value = response.json().await?;
            anyhow::ensure!(answer["status"] == "success", "{answer}");
            Ok::<_, anyhow::Error>(started.elapsed().as_secs_f64() * 1000.0)
        }
    };
    // Warm-up: every replica builds its provider and fills its connection pool.
    for _ in 0..warm {
        for address in &addresses {
            call(address.clone()).await?;
        }
    }

    let next = Arc::new(AtomicUsize::new(0));
    let addresses = Arc::new(addresses);
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (next, addresses) = (next.clone(), addresses.clone());
            let call = call.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= requests {
                        break;
                    }
                    samples.push(call(addresses[index % addresses.len()].clone()).await?);
                }
                Ok::<_, anyhow::Error>(samples)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(requests);
    for worker in workers {
        samples.extend(worker.await??);
    }
    Ok((samples, started.elapsed().as_secs_f64()))
}
