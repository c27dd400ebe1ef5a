use leptos::prelude::*;

use crate::{model::dashboard::Dashboard, server_fns::error::AppError};

/// The active provider with its latest health check (cached for a few seconds), the last hour by status, p50/p95 latency
/// over the window, and recent failures.
#[server(prefix = "/rpc", endpoint = "dashboard")]
pub async fn get_dashboard() -> Result<Dashboard, AppError> {
    use crate::{
        model::{
            dashboard::{percentile, LatencyBucket, BUCKETS, BUCKET_MINUTES, WINDOW_MINUTES},
            provider::HealthReport,
        },
        server::db::execution,
        server_fns::guard::internal,
    };

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let pool = &state.pool;
    let (active_kind, active_name, health, pool_state) = match state.sandbox.active() {
        Some((kind, provider)) => (
            kind,
            provider.info().name.clone(),
            state.sandbox.active_health().await,
            provider.pool_state(),
        ),
        None => (
            String::new(),
            String::new(),
            HealthReport {
                healthy: false,
                message: "No provider is active: save valid settings for one.".into(),
                details: Default::default(),
            },
            None,
        ),
    };
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); BUCKETS];
    for (bucket, ms) in execution::recent_durations(pool, WINDOW_MINUTES, BUCKET_MINUTES)
        .await
        .map_err(internal)?
    {
        if let Some(slot) = usize::try_from(bucket)
            .ok()
            .and_then(|b| samples.get_mut(b))
        {
            slot.push(ms.max(0) as u64);
        }
    }
    let latency = samples
        .into_iter()
        .map(|mut ms| {
            ms.sort_unstable();
            LatencyBucket {
                runs: ms.len() as u32,
                p50_ms: percentile(&ms, 50),
                p95_ms: percentile(&ms, 95),
            }
        })
        .collect();
    Ok(Dashboard {
        active_kind,
        active_name,
        health,
        pool: pool_state,
        last_hour: execution::last_hour_by_status(pool)
            .await
            .map_err(internal)?,
        latency,
        recent_failures: execution::recent_failures(pool, 10)
            .await
            .map_err(internal)?,
    })
}
