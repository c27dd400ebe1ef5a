//! Repository for `settings_audit`: one row per settings change, never with secret values.

use sqlx::SqlitePool;

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct AuditEntry {
    pub actor: String,
    pub setting: String,
    pub provider: Option<String>,
    pub action: String,
    /// JSON array of the keys whose values changed.
    pub changed_keys: String,
    pub created_at: String,
}

pub async fn record(
    pool: &SqlitePool,
    actor: &str,
    setting: &str,
    provider: Option<&str>,
    action: &str,
    changed_keys: &[String],
) -> Result<(), sqlx::Error> {
    let keys = serde_json::to_string(changed_keys).unwrap_or_else(|_| "[]".into());
    sqlx::query("insert into settings_audit (actor, setting, provider, action, changed_keys) values (?, ?, ?, ?, ?)")
        .bind(actor)
        .bind(setting)
        .bind(provider)
        .bind(action)
        .bind(keys)
        .execute(pool)
        .await?;
    Ok(())
}

/// The newest entries first.
pub async fn recent(pool: &SqlitePool, limit: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
    sqlx::query_as(
        "select actor, setting, provider, action, changed_keys, created_at from settings_audit \
         order by id desc limit ?",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
}
