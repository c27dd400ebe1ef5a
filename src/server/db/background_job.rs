//! Repository for `background_job`: one row per periodic job, claimed by the replica that
//! runs it this round.

use std::time::Duration;

use sqlx::AnyPool;

use super::clock;

/// Claims this round of job `name` for `replica`: true when no one ran it within `every`
/// (it is then marked as run now, by `replica`); false when another replica (or this one)
/// did. One statement, so of replicas claiming at once exactly one wins.
pub async fn claim(
    pool: &AnyPool,
    name: &str,
    every: Duration,
    replica: &str,
) -> Result<bool, sqlx::Error> {
    let won: Option<i64> = sqlx::query_scalar(
        "insert into background_job (name, last_run_at, replica, runs) values ($1, $2, $3, 1) \
         on conflict (name) do update set last_run_at = excluded.last_run_at, \
         replica = excluded.replica, runs = background_job.runs + 1 \
         where background_job.last_run_at <= $4 returning runs",
    )
    .bind(name)
    .bind(clock::now())
    .bind(replica)
    .bind(clock::before(every))
    .fetch_optional(pool)
    .await?;
    Ok(won.is_some())
}

/// How often job `name` has run, and the replica that ran it last.
pub async fn runs(pool: &AnyPool, name: &str) -> Result<Option<(i64, String)>, sqlx::Error> {
    sqlx::query_as("select runs, replica from background_job where name = $1")
        .bind(name)
        .fetch_optional(pool)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn of_replicas_claiming_one_round_exactly_one_wins_and_the_next_round_is_free_again() {
        let (_dir, pool) = crate::server::db::scratch().await;
        let every = Duration::from_secs(3600);

        let claims = futures_util::future::join_all(
            ["a", "b", "c"].map(|replica| claim(&pool, "retention", every, replica)),
        )
        .await;
        let won: Vec<bool> = claims.into_iter().map(Result::unwrap).collect();
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
        assert_eq!(runs(&pool, "retention").await.unwrap().unwrap().0, 1);

        // A round later (a zero-length round here), the job is free to claim again.
        assert!(claim(&pool, "retention", Duration::ZERO, "b")
            .await
            .unwrap());
        assert_eq!(
            runs(&pool, "retention").await.unwrap(),
            Some((2, "b".to_owned()))
        );
        assert!(!claim(&pool, "retention", every, "a").await.unwrap());
    }
}
