//! Repository for `artifact`: the files of each admin's latest trial run, for an hour, so the
//! console serves them as downloads from its own address.

use base64::{engine::general_purpose::STANDARD, Engine};
use rand::RngCore;
use sqlx::AnyPool;
use std::time::Duration;

use super::clock;

use crate::model::execution::Artifact;

/// How long a trial's files stay downloadable.
const KEEP: Duration = Duration::from_secs(3600);

#[derive(Debug, sqlx::FromRow)]
pub struct StoredArtifact {
    pub name: String,
    pub mime_type: String,
    pub content: Vec<u8>,
}

/// Replaces the admin's stored artifacts with `artifacts` (one transaction) and returns their
/// ids, in order. Ids are 128 random bits: unguessable, and checked against the owner anyway.
pub async fn replace_for(
    pool: &AnyPool,
    admin_user_id: i64,
    artifacts: &[Artifact],
) -> Result<Vec<String>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("delete from artifact where admin_user_id = $1")
        .bind(admin_user_id)
        .execute(&mut *tx)
        .await?;
    let mut ids = Vec::with_capacity(artifacts.len());
    for artifact in artifacts {
        let mut bytes = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        // A provider that sent something that is not base64 gets an empty download, not an
        // error page: the run itself succeeded.
        let content = STANDARD.decode(&artifact.content_b64).unwrap_or_default();
        sqlx::query(
            "insert into artifact (id, admin_user_id, name, mime_type, content, expires_at) \
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&id)
        .bind(admin_user_id)
        .bind(&artifact.name)
        .bind(&artifact.mime_type)
        .bind(content)
        .bind(clock::after(KEEP))
        .execute(&mut *tx)
        .await?;
        ids.push(id);
    }
    tx.commit().await?;
    Ok(ids)
}

/// The artifact `id` if it belongs to `admin_user_id` and has not expired.
pub async fn get(
    pool: &AnyPool,
    id: &str,
    admin_user_id: i64,
) -> Result<Option<StoredArtifact>, sqlx::Error> {
    sqlx::query_as(
        "select name, mime_type, content from artifact \
         where id = $1 and admin_user_id = $2 and expires_at > $3",
    )
    .bind(id)
    .bind(admin_user_id)
    .bind(clock::now())
    .fetch_optional(pool)
    .await
}

/// Deletes expired artifacts; run periodically by the server.
pub async fn delete_expired(pool: &AnyPool) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query("delete from artifact where expires_at <= $1")
        .bind(clock::now())
        .execute(pool)
        .await?
        .rows_affected())
}
