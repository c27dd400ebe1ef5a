//! The execution history's settings (`history.settings` in `system_setting`) and retention:
//! a background task deletes runs past the age or count the admin chose.

use sqlx::AnyPool;

use crate::{
    model::history::HistorySettings,
    server::db::{
        execution::{self, Actor},
        settings_audit,
        system_setting::{self, Expected, SettingError},
    },
};

pub const SETTING: &str = "history.settings";

pub async fn settings(pool: &AnyPool) -> Result<HistorySettings, SettingError> {
    Ok(system_setting::get(pool, SETTING)
        .await?
        .and_then(|s| serde_json::from_value(s.value).ok())
        .unwrap_or_default())
}

/// Why history settings were not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Values out of range: a message for the admin.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Setting(#[from] SettingError),
}

impl From<sqlx::Error> for SaveError {
    fn from(error: sqlx::Error) -> Self {
        SaveError::Setting(error.into())
    }
}

/// Saves checked settings (recorded in the settings audit) and applies the retention at once.
#[tracing::instrument(skip_all, fields(actor = %actor))]
pub async fn save(pool: &AnyPool, actor: &Actor, new: &HistorySettings) -> Result<(), SaveError> {
    let actor = actor.as_str();
    new.check().map_err(SaveError::Invalid)?;
    // The setting and its audit row together, or neither. A write transaction from the
    // start: it reads first, and a read transaction cannot always become a write one.
    let mut tx = crate::server::db::begin_write(pool).await?;
    let old: HistorySettings = system_setting::get(&mut *tx, SETTING)
        .await?
        .and_then(|s| serde_json::from_value(s.value).ok())
        .unwrap_or_default();
    let value = serde_json::to_value(new).unwrap_or_default();
    system_setting::put_in(&mut tx, SETTING, &value, actor, Expected::Any).await?;
    let changed: Vec<String> = [
        ("keep_content", old.keep_content != new.keep_content),
        (
            "max_content_bytes",
            old.max_content_bytes != new.max_content_bytes,
        ),
        ("retention_days", old.retention_days != new.retention_days),
        ("max_rows", old.max_rows != new.max_rows),
    ]
    .into_iter()
    .filter(|(_, differs)| *differs)
    .map(|(key, _)| key.to_owned())
    .collect();
    settings_audit::record(&mut *tx, actor, SETTING, None, "save", &changed).await?;
    tx.commit().await?;
    execution::enforce_retention(pool, new.retention_days, new.max_rows).await?;
    Ok(())
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Applies the history retention once (a background job).
pub async fn apply_retention(pool: AnyPool) {
    let outcome = async {
        let s = settings(&pool).await?;
        Ok::<_, SettingError>(
            execution::enforce_retention(&pool, s.retention_days, s.max_rows).await?,
        )
    }
    .await;
    match outcome {
        Ok(0) => {}
        Ok(n) => tracing::info!(n, "deleted runs past the history retention"),
        Err(error) => tracing::warn!(%error, "could not apply the history retention"),
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cuts_respect_characters() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
    }
}
