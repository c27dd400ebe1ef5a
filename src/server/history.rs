//! The execution history's settings (`history.settings` in `system_setting`) and retention:
//! a background task deletes runs past the age or count the admin chose.

use std::time::Duration;

use sqlx::SqlitePool;

use crate::{
    model::history::HistorySettings,
    server::db::{
        execution, settings_audit,
        system_setting::{self, Expected, SettingError},
    },
};

pub const SETTING: &str = "history.settings";

pub async fn settings(pool: &SqlitePool) -> Result<HistorySettings, SettingError> {
    Ok(system_setting::get(pool, SETTING)
        .await?
        .and_then(|s| serde_json::from_value(s.value).ok())
        .unwrap_or_default())
}

/// Saves checked settings (recorded in the settings audit) and applies the retention at once.
pub async fn save(
    pool: &SqlitePool,
    actor: &str,
    new: &HistorySettings,
) -> Result<Result<(), String>, SettingError> {
    if let Err(message) = new.check() {
        return Ok(Err(message));
    }
    // The setting and its audit row together, or neither.
    let mut tx = pool.begin().await?;
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
    Ok(Ok(()))
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

/// Applies the retention now and then every `every`.
pub async fn keep_trimmed(pool: SqlitePool, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
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
}

/// Most runs one export holds; narrow the filter for more.
pub const EXPORT_LIMIT: u32 = 100_000;

/// `GET /admin/history/export.csv` and `.json`: the runs matching the filter (the list's query
/// string), newest first, for a signed-in admin (the gate redirects anyone else to sign in).
pub async fn export_csv(
    state: axum::extract::State<crate::server::state::AppState>,
    admin: Option<axum::Extension<crate::model::admin::AdminInfo>>,
    filter: axum::extract::Query<crate::model::history::HistoryFilter>,
) -> axum::response::Response {
    export(state, admin, filter, true).await
}

pub async fn export_json(
    state: axum::extract::State<crate::server::state::AppState>,
    admin: Option<axum::Extension<crate::model::admin::AdminInfo>>,
    filter: axum::extract::Query<crate::model::history::HistoryFilter>,
) -> axum::response::Response {
    export(state, admin, filter, false).await
}

async fn export(
    axum::extract::State(state): axum::extract::State<crate::server::state::AppState>,
    admin: Option<axum::Extension<crate::model::admin::AdminInfo>>,
    axum::extract::Query(filter): axum::extract::Query<crate::model::history::HistoryFilter>,
    csv: bool,
) -> axum::response::Response {
    use axum::{
        http::{header, StatusCode},
        response::IntoResponse,
    };

    if admin.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let (content_type, extension) = if csv {
        ("text/csv; charset=utf-8", "csv")
    } else {
        ("application/json", "json")
    };
    let rows = match execution::search(&state.pool, &filter, EXPORT_LIMIT, 0).await {
        Ok(Ok(rows)) => rows,
        Ok(Err(message)) => return (StatusCode::BAD_REQUEST, message).into_response(),
        Err(error) => {
            tracing::error!(%error, "history export failed");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let body = if csv {
        to_csv(&rows)
    } else {
        serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into())
    };
    let name = format!("attachment; filename=\"sandbox-history.{extension}\"");
    (
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::CONTENT_DISPOSITION, name),
        ],
        body,
    )
        .into_response()
}

fn to_csv(rows: &[crate::model::history::ExecutionSummary]) -> String {
    fn field(text: &str) -> String {
        // A cell a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, or a tab or CR
        // before one) starts with a quote instead: callers' names come from outside (the
        // CLI takes $USER, keys are named by admins), so a cell must never run.
        let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
            format!("'{text}")
        } else {
            text.to_owned()
        };
        if text.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", text.replace('"', "\"\""))
        } else {
            text
        }
    }
    let mut out = String::from(
        "id,created_at,caller,caller_kind,source,provider,language,status,exit_code,duration_ms,input_bytes,output_bytes\n",
    );
    for r in rows {
        let line = [
            r.id.to_string(),
            field(&r.created_at),
            field(&r.caller),
            field(&r.caller_kind),
            field(&r.source),
            field(&r.provider),
            field(&r.language),
            field(&r.status),
            r.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            r.duration_ms.to_string(),
            r.input_bytes.to_string(),
            r.output_bytes.to_string(),
        ]
        .join(",");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{cut, to_csv};
    use crate::model::history::ExecutionSummary;

    #[test]
    fn csv_cells_never_start_a_formula() {
        let mut row: ExecutionSummary = serde_json::from_value(serde_json::json!({
            "id": 1, "created_at": "2026-12-03T10:00:00.000Z", "caller": "=HYPERLINK(\"http://x\")",
            "caller_kind": "cli", "source": "+1", "provider": "-2", "language": "@SUM(A1)",
            "status": "success", "exit_code": -124, "duration_ms": 5, "input_bytes": 1, "output_bytes": 2
        }))
        .unwrap();
        row.status = "\t=1".into();

        let csv = to_csv(&[row]);
        let line = csv.lines().nth(1).unwrap();

        assert_eq!(
            line,
            "1,2026-12-03T10:00:00.000Z,\"'=HYPERLINK(\"\"http://x\"\")\",cli,'+1,'-2,'@SUM(A1),'\t=1,-124,5,1,2"
        );
    }

    #[test]
    fn cuts_respect_characters() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
    }
}
