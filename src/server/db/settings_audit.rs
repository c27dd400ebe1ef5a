//! Repository for `settings_audit`: one row per settings change, connection test or sign-in,
//! never with setting or secret values.

use serde_json::{Map, Value};
use sqlx::{AnyExecutor, AnyPool};

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct AuditEntry {
    pub actor: String,
    pub setting: String,
    pub provider: Option<String>,
    pub action: String,
    /// JSON array of the keys whose values changed.
    pub changed_keys: String,
    /// JSON object: what else the event says (a test's destination and outcome, a sign-in's
    /// address).
    pub detail: String,
    pub created_at: String,
}

pub async fn record(
    db: impl AnyExecutor<'_>,
    actor: &str,
    setting: &str,
    provider: Option<&str>,
    action: &str,
    changed_keys: &[String],
) -> Result<(), sqlx::Error> {
    record_with_detail(
        db,
        actor,
        setting,
        provider,
        action,
        changed_keys,
        &Map::new(),
    )
    .await
}

/// An event that changes no key: `detail` says what happened (never a setting's value).
pub async fn record_event(
    db: impl AnyExecutor<'_>,
    actor: &str,
    setting: &str,
    provider: Option<&str>,
    action: &str,
    detail: &Map<String, Value>,
) -> Result<(), sqlx::Error> {
    record_with_detail(db, actor, setting, provider, action, &[], detail).await
}

/// A change that says more than its keys (an activation despite a failed health check).
pub async fn record_with_detail(
    db: impl AnyExecutor<'_>,
    actor: &str,
    setting: &str,
    provider: Option<&str>,
    action: &str,
    changed_keys: &[String],
    detail: &Map<String, Value>,
) -> Result<(), sqlx::Error> {
    let keys = serde_json::to_string(changed_keys).unwrap_or_else(|_| "[]".into());
    let detail = serde_json::to_string(detail).unwrap_or_else(|_| "{}".into());
    sqlx::query(
        "insert into settings_audit (actor, setting, provider, action, changed_keys, detail) \
         values ($1, $2, $3, $4, $5, $6)",
    )
    .bind(actor)
    .bind(setting)
    .bind(provider)
    .bind(action)
    .bind(keys)
    .bind(detail)
    .execute(db)
    .await?;
    Ok(())
}

/// The newest entries first.
pub async fn recent(pool: &AnyPool, limit: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
    sqlx::query_as(
        "select actor, setting, provider, action, changed_keys, detail, created_at \
         from settings_audit order by id desc limit $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The setting sign-in events are recorded under.
pub const SIGN_IN: &str = "auth.sign_in";

/// Keeps only the newest `keep` sign-in events: anyone can cause a failed sign-in, so they
/// must not grow the database without end (settings changes and tests are never trimmed).
pub async fn trim_sign_ins(pool: &AnyPool, keep: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "delete from settings_audit where setting = $1 and id < \
         coalesce((select id from settings_audit where setting = $1 order by id desc limit 1 offset $2), 0)",
    )
    .bind(SIGN_IN)
    .bind(keep - 1)
    .execute(pool)
    .await?
    .rows_affected())
}

/// `action in ($1, $2, …) and (actor contains the filter)` for `actions` and an actor filter
/// (a part of the name; blank matches everyone): bind the actions, then [`actor_pattern`].
/// The number of placeholders it used is returned with it.
fn action_filter(actions: &[&str]) -> (String, usize) {
    let list = if actions.is_empty() {
        "null".to_owned()
    } else {
        (1..=actions.len())
            .map(|n| format!("${n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let n = actions.len() + 1;
    (
        format!("action in ({list}) and lower(actor) like lower(${n}) escape '\\'"),
        n,
    )
}

/// A `like` pattern matching names that contain `actor` (its own `%`, `_` and `\` taken
/// literally); blank matches every name.
fn actor_pattern(actor: &str) -> String {
    let mut pattern = String::from("%");
    for c in actor.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Entries whose action is one of `actions` and whose actor contains `actor`.
pub async fn count(pool: &AnyPool, actions: &[&str], actor: &str) -> Result<i64, sqlx::Error> {
    let (filter, _) = action_filter(actions);
    let sql = format!("select count(*) from settings_audit where {filter}");
    let mut query = sqlx::query_scalar(&sql);
    for action in actions {
        query = query.bind(*action);
    }
    query.bind(actor_pattern(actor)).fetch_one(pool).await
}

/// Page `page` (1-based) of `size` entries whose action is one of `actions` and whose actor
/// contains `actor`, newest first.
pub async fn page(
    pool: &AnyPool,
    actions: &[&str],
    actor: &str,
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
        detail: String,
        created_at: String,
    }
    let (filter, used) = action_filter(actions);
    let sql = format!(
        "select id, actor, setting, provider, action, changed_keys, detail, created_at \
         from settings_audit where {filter} order by id desc limit ${} offset ${}",
        used + 1,
        used + 2
    );
    let mut query = sqlx::query_as(&sql);
    for action in actions {
        query = query.bind(*action);
    }
    let rows: Vec<Row> = query
        .bind(actor_pattern(actor))
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
            detail: serde_json::from_str::<Map<String, Value>>(&row.detail)
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| {
                    let text = match value {
                        Value::String(text) => text,
                        other => other.to_string(),
                    };
                    (key, text)
                })
                .collect(),
            created_at: row.created_at,
        })
        .collect())
}
