//! Repository for `system_setting`: named JSON values (e.g. `sandbox.provider_type`,
//! `sandbox.<provider>`) with who changed them last and a version for optimistic locking.

use serde_json::Value;
use sqlx::{AnyConnection, AnyExecutor, AnyPool};

/// What a write expects to find stored (optimistic locking).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Whatever is stored is overwritten (the API and the CLI).
    Any,
    /// The setting must not exist yet (a form opened before the first save, seeding).
    Absent,
    /// The stored version must still be this one (a form opened at this version).
    Version(i64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub name: String,
    pub value: Value,
    pub version: i64,
    pub updated_at: String,
    pub updated_by: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    /// Someone else saved the setting since it was read.
    #[error("setting {name} was changed by someone else (now at version {current})")]
    Conflict { name: String, current: i64 },
    #[error("setting {name} holds invalid JSON: {source}")]
    Corrupt {
        name: String,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

#[derive(sqlx::FromRow)]
struct Row {
    name: String,
    value: String,
    version: i64,
    updated_at: String,
    updated_by: Option<String>,
}

impl TryFrom<Row> for Setting {
    type Error = SettingError;

    fn try_from(row: Row) -> Result<Self, SettingError> {
        let value = serde_json::from_str(&row.value).map_err(|source| SettingError::Corrupt {
            name: row.name.clone(),
            source,
        })?;
        Ok(Setting {
            name: row.name,
            value,
            version: row.version,
            updated_at: row.updated_at,
            updated_by: row.updated_by,
        })
    }
}

const COLUMNS: &str = "name, value, version, updated_at, updated_by";

pub async fn get(db: impl AnyExecutor<'_>, name: &str) -> Result<Option<Setting>, SettingError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "select {COLUMNS} from system_setting where name = $1"
    ))
    .bind(name)
    .fetch_optional(db)
    .await?;
    row.map(Setting::try_from).transpose()
}

/// All settings whose name starts with `prefix`, ordered by name.
pub async fn list(pool: &AnyPool, prefix: &str) -> Result<Vec<Setting>, SettingError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "select {COLUMNS} from system_setting where substr(name, 1, length($1)) = $1 order by name"
    ))
    .bind(prefix)
    .fetch_all(pool)
    .await?;
    rows.into_iter().map(Setting::try_from).collect()
}

/// Writes a setting in a transaction of its own; see [`put_in`].
pub async fn put(
    pool: &AnyPool,
    name: &str,
    value: &Value,
    updated_by: &str,
    expected: Expected,
) -> Result<Setting, SettingError> {
    // An explicit transaction: a `returning` row read in autocommit mode is no proof that
    // the write was committed (sqlx#2099); the commit's own result is.
    let mut tx = pool.begin().await?;
    let saved = put_in(&mut tx, name, value, updated_by, expected).await?;
    tx.commit().await?;
    Ok(saved)
}

/// Writes a setting inside the caller's transaction, if the stored version is what
/// `expected` says (else [`SettingError::Conflict`], nothing written). Returns the stored
/// setting with its new version.
pub async fn put_in(
    tx: &mut AnyConnection,
    name: &str,
    value: &Value,
    updated_by: &str,
    expected: Expected,
) -> Result<Setting, SettingError> {
    let text = value.to_string();
    let row: Option<Row> = match expected {
        Expected::Any => sqlx::query_as(&format!(
            "insert into system_setting (name, value, updated_by) values ($1, $2, $3) \
             on conflict (name) do update set value = excluded.value, updated_by = excluded.updated_by, \
             version = system_setting.version + 1, updated_at = $4 \
             returning {COLUMNS}"
        ))
        .bind(name)
        .bind(&text)
        .bind(updated_by)
        .bind(super::clock::now())
        .fetch_optional(&mut *tx)
        .await?,
        Expected::Absent => sqlx::query_as(&format!(
            "insert into system_setting (name, value, updated_by) values ($1, $2, $3) \
             on conflict (name) do nothing returning {COLUMNS}"
        ))
        .bind(name)
        .bind(&text)
        .bind(updated_by)
        .fetch_optional(&mut *tx)
        .await?,
        Expected::Version(version) => sqlx::query_as(&format!(
            "update system_setting set value = $2, updated_by = $3, version = version + 1, \
             updated_at = $5 where name = $1 and version = $4 \
             returning {COLUMNS}"
        ))
        .bind(name)
        .bind(&text)
        .bind(updated_by)
        .bind(version)
        .bind(super::clock::now())
        .fetch_optional(&mut *tx)
        .await?,
    };
    match row {
        Some(row) => row.try_into(),
        None => {
            let current = get(&mut *tx, name).await?.map_or(0, |s| s.version);
            Err(SettingError::Conflict {
                name: name.to_owned(),
                current,
            })
        }
    }
}
