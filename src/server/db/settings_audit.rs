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

pub async fn count(pool: &SqlitePool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select count(*) from settings_audit")
        .fetch_one(pool)
        .await
}

/// Page `page` (1-based) of `size` entries, newest first.
pub async fn page(
    pool: &SqlitePool,
    page: u32,
    size: u32,
) -> Result<Vec<crate::model::audit::AuditEntry>, sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: i64,
        actor: String,
        setting: String,
        provider: Option<String>,
        action: String,
        changed_keys: String,
        created_at: String,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "select id, actor, setting, provider, action, changed_keys, created_at from settings_audit \
         order by id desc limit ? offset ?",
    )
    .bind(i64::from(size))
    .bind(i64::from(page.saturating_sub(1)) * i64::from(size))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| crate::model::audit::AuditEntry {
            id: row.id,
            actor: row.actor,
            setting: row.setting,
            provider: row.provider,
            action: row.action,
            changed_keys: serde_json::from_str(&row.changed_keys).unwrap_or_default(),
            created_at: row.created_at,
        })
        .collect())
}
