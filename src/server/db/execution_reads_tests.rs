//! The history reads of `execution` (latency buckets, filter menus) over rows written the way
//! runs write them (`history_row`).

use sqlx::AnyPool;

use super::{
    execution::{distinct, recent_latency, Caller, NewExecution, Source},
    history_row::{record_rows, HistoryRow},
};

async fn insert(pool: &AnyPool, provider: &str, status: &str, duration_ms: u64) {
    let caller = Caller::admin("admin", Source::Trial);
    let row = NewExecution {
        caller: &caller,
        provider,
        language: "python",
        status,
        exit_code: Some(0),
        duration_ms,
        code: "x",
        input_bytes: 1,
        output_bytes: 0,
        error: None,
        content: None,
        egress: None,
        session: None,
    };
    let row = HistoryRow::of(&row);
    record_rows(pool, &[row], "test-replica").await.unwrap();
}

#[tokio::test]
async fn latency_percentiles_in_sql_are_the_nearest_rank_of_the_bucket() {
    use crate::model::dashboard::percentile;
    let (_dir, pool) = crate::server::db::scratch().await;
    // Shuffled durations: 37 runs, one provider error that must not count.
    let mut durations: Vec<u64> = (0..37).map(|i| (i * 7919 % 101) + 1).collect();
    for ms in &durations {
        insert(&pool, "local", "success", *ms).await;
    }
    insert(&pool, "local", "error", 100_000).await;
    durations.sort_unstable();

    let buckets = recent_latency(&pool, 360, 15).await.unwrap();

    assert_eq!(buckets.len(), 1, "{buckets:?}");
    let (bucket, runs, p50, p95) = buckets[0];
    assert_eq!(bucket, 23, "the newest of 24 buckets");
    assert_eq!(runs, 37);
    assert_eq!(p50 as u64, percentile(&durations, 50));
    assert_eq!(p95 as u64, percentile(&durations, 95));
}

#[tokio::test]
async fn filter_menus_list_each_value_once_by_index_seeks() {
    let (_dir, pool) = crate::server::db::scratch().await;
    for (provider, status) in [
        ("local", "success"),
        ("docker", "timeout"),
        ("local", "timeout"),
        ("e2b", "success"),
    ] {
        insert(&pool, provider, status, 5).await;
    }

    let providers = distinct(&pool, "provider").await.unwrap();
    let statuses = distinct(&pool, "status").await.unwrap();
    let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(
        "explain query plan select min(provider) from execution where provider > 'a'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();

    assert_eq!(providers, ["docker", "e2b", "local"]);
    assert_eq!(statuses, ["success", "timeout"]);
    assert_eq!(distinct(&pool, "replica").await.unwrap(), ["test-replica"]);
    let replica_plan: Vec<(i64, i64, i64, String)> =
        sqlx::query_as("explain query plan select min(replica) from execution where replica > 'a'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(
        replica_plan
            .iter()
            .any(|(_, _, _, step)| step.contains("execution_replica")),
        "{replica_plan:?}"
    );
    assert!(
        plan.iter()
            .any(|(_, _, _, step)| step.contains("execution_provider")),
        "each step is a seek in the provider index: {plan:?}"
    );
}
