//! Repository for `setting_version`: every saved version of a provider's settings, secrets
//! sealed, for the settings page's History tab and Restore.

use serde_json::Value;
use sqlx::{AnyConnection, AnyExecutor};

/// One saved version.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredVersion {
    pub id: i64,
    pub setting: String,
    pub provider: String,
    /// The setting's version this became; `None` when it was kept without being applied.
    pub version: Option<i64>,
    /// Sealed secrets included.
    pub value: Value,
    pub action: String,
    pub restored_from: Option<i64>,
    pub saved_by: Option<String>,
    pub saved_at: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    setting: String,
    provider: String,
    version: Option<i64>,
    value: String,
    action: String,
    restored_from: Option<i64>,
    saved_by: Option<String>,
    saved_at: String,
}

impl From<Row> for StoredVersion {
    fn from(row: Row) -> Self {
        StoredVersion {
            id: row.id,
            setting: row.setting,
            provider: row.provider,
            version: row.version,
            // The column is checked JSON; a row that still fails reads as null.
            value: serde_json::from_str(&row.value).unwrap_or(Value::Null),
            action: row.action,
            restored_from: row.restored_from,
            saved_by: row.saved_by,
            saved_at: row.saved_at,
        }
    }
}

const COLUMNS: &str =
    "id, setting, provider, version, value, action, restored_from, saved_by, saved_at";

/// What a new version row says.
pub struct NewVersion<'a> {
    pub setting: &'a str,
    pub provider: &'a str,
    pub version: Option<i64>,
    pub value: &'a Value,
    pub action: &'a str,
    pub restored_from: Option<i64>,
    pub saved_by: &'a str,
}

/// Adds a version inside the caller's transaction; returns its id.
pub async fn insert(tx: &mut AnyConnection, new: NewVersion<'_>) -> Result<i64, sqlx::Error> {
    let (id,): (i64,) = sqlx::query_as(
        "insert into setting_version (setting, provider, version, value, action, restored_from, saved_by) \
         values ($1, $2, $3, $4, $5, $6, $7) returning id",
    )
    .bind(new.setting)
    .bind(new.provider)
    .bind(new.version)
    .bind(new.value.to_string())
    .bind(new.action)
    .bind(new.restored_from)
    .bind(new.saved_by)
    .fetch_one(&mut *tx)
    .await?;
    Ok(id)
}

/// The newest `limit` versions of `setting`, newest first.
pub async fn list(
    db: impl AnyExecutor<'_>,
    setting: &str,
    limit: i64,
) -> Result<Vec<StoredVersion>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "select {COLUMNS} from setting_version where setting = $1 order by id desc limit $2"
    ))
    .bind(setting)
    .bind(limit)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(StoredVersion::from).collect())
}

/// One version by id.
pub async fn get(db: impl AnyExecutor<'_>, id: i64) -> Result<Option<StoredVersion>, sqlx::Error> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "select {COLUMNS} from setting_version where id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await?;
    Ok(row.map(StoredVersion::from))
}
