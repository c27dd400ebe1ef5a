use leptos::prelude::*;

use crate::{model::dashboard::Dashboard, server_fns::error::AppError};

/// The active provider with its latest health check (cached for a few seconds), the last hour by status, p50/p95 latency
/// over the window, and recent failures.
#[server(prefix = "/rpc", endpoint = "dashboard")]
pub async fn get_dashboard() -> Result<Dashboard, AppError> {
    use crate::{
        model::dashboard::{LatencyBucket, BUCKETS, BUCKET_MINUTES, WINDOW_MINUTES},
        server::db::execution,
        server_fns::guard::internal,
    };

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let pool = &state.pool;
    let status = state.sandbox.active_status().await;
    let (active_kind, mut active_name) = status
        .running
        .map(|running| (running.kind, running.name))
        .unwrap_or_default();
    let locale = crate::server_fns::guard::locale();
    if let Some(name) = crate::model::schema_i18n::SchemaTranslations::for_locale(locale)
        .and_then(|table| table.provider_name(&active_kind))
    {
        active_name = name.to_owned();
    }
    let mut latency = vec![LatencyBucket::default(); BUCKETS];
    for (bucket, runs, p50, p95) in execution::recent_latency(pool, WINDOW_MINUTES, BUCKET_MINUTES)
        .await
        .map_err(internal)?
    {
        if let Some(slot) = usize::try_from(bucket)
            .ok()
            .and_then(|b| latency.get_mut(b))
        {
            *slot = LatencyBucket {
                runs: u32::try_from(runs).unwrap_or(u32::MAX),
                p50_ms: p50.max(0) as u64,
                p95_ms: p95.max(0) as u64,
            };
        }
    }
    let mut dashboard = Dashboard {
        active_kind,
        active_name,
        health: status.health,
        pool: status.pool,
        last_hour: execution::last_hour_by_status(pool)
            .await
            .map_err(internal)?,
        last_hour_from: execution::last_hour_start(),
        latency,
        recent_failures: execution::recent_failures(pool, 10)
            .await
            .map_err(internal)?,
    };
    crate::model::messages::Localize::localize(&mut dashboard, locale);
    Ok(dashboard)
}
