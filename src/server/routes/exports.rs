//! Exports: the history (`GET /admin/history/export.csv` and `.json`) and the audit
//! (`GET /admin/audit/export.csv`).

use axum::{
    extract::{Query, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Extension,
};

use crate::{
    model::{
        admin::AdminInfo,
        history::{ExecutionSummary, HistoryFilter},
    },
    server::{db::execution, state::AppState},
};

/// Most runs one export holds; narrow the filter for more.
pub const EXPORT_LIMIT: u32 = 100_000;

/// `GET /admin/history/export.csv` and `.json`: the runs matching the filter (the list's query
/// string), newest first, for a signed-in admin (the gate redirects anyone else to sign in).
pub async fn export_csv(
    state: State<AppState>,
    admin: Option<Extension<AdminInfo>>,
    filter: Query<HistoryFilter>,
) -> Response {
    export(state, admin, filter, true).await
}

pub async fn export_json(
    state: State<AppState>,
    admin: Option<Extension<AdminInfo>>,
    filter: Query<HistoryFilter>,
) -> Response {
    export(state, admin, filter, false).await
}

#[tracing::instrument(name = "GET /admin/history/export", skip_all)]
async fn export(
    State(state): State<AppState>,
    admin: Option<Extension<AdminInfo>>,
    Query(filter): Query<HistoryFilter>,
    csv: bool,
) -> Response {
    if admin.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let (content_type, extension) = if csv {
        ("text/csv; charset=utf-8", "csv")
    } else {
        ("application/json", "json")
    };
    let rows = match execution::search(&state.pool, &filter, EXPORT_LIMIT, 0).await {
        Ok(rows) => rows,
        Err(execution::QueryError::BadFilter(message)) => {
            return (StatusCode::BAD_REQUEST, message).into_response()
        }
        Err(execution::QueryError::Database(error)) => {
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

/// One CSV cell. A cell a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, or a tab
/// or CR before one) starts with a quote instead: callers' names come from outside (the CLI
/// takes $USER, keys are named by admins, a failed sign-in records what was typed), so a
/// cell must never run.
fn field(text: &str) -> String {
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

/// Query of the audit export: the view and the actor filter, as on the page.
#[derive(Debug, Default, serde::Deserialize)]
pub struct AuditQuery {
    #[serde(default)]
    view: String,
    #[serde(default)]
    actor: String,
}

/// `GET /admin/audit/export.csv`: the entries of one view of the audit (with the page's
/// actor filter), newest first, up to [`EXPORT_LIMIT`], for a signed-in admin.
#[tracing::instrument(name = "GET /admin/audit/export.csv", skip_all)]
pub async fn export_audit_csv(
    State(state): State<AppState>,
    admin: Option<Extension<AdminInfo>>,
    Query(query): Query<AuditQuery>,
) -> Response {
    if admin.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let view = crate::model::audit::AuditView::from_id(&query.view);
    let actor: String = query.actor.trim().chars().take(64).collect();
    let entries = match crate::server::db::settings_audit::page(
        &state.pool,
        view.actions(),
        &actor,
        1,
        EXPORT_LIMIT,
    )
    .await
    {
        Ok(entries) => entries,
        Err(error) => {
            tracing::error!(%error, "audit export failed");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let mut out = String::from("id,created_at,actor,setting,provider,action,changed_keys,detail\n");
    for e in &entries {
        let detail: Vec<String> = e.detail.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let line = [
            e.id.to_string(),
            field(&e.created_at),
            field(&e.actor),
            field(&e.setting),
            field(e.provider.as_deref().unwrap_or_default()),
            field(&e.action),
            field(&e.changed_keys.join(" ")),
            field(&detail.join("; ")),
        ]
        .join(",");
        out.push_str(&line);
        out.push('\n');
    }
    let name = format!("attachment; filename=\"sandbox-audit-{}.csv\"", view.id());
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (header::CONTENT_DISPOSITION, name),
        ],
        out,
    )
        .into_response()
}

fn to_csv(rows: &[ExecutionSummary]) -> String {
    let mut out = String::from(
        "id,created_at,caller,caller_kind,source,provider,language,status,exit_code,duration_ms,input_bytes,output_bytes,replica\n",
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
            field(&r.replica),
        ]
        .join(",");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::to_csv;
    use crate::model::history::ExecutionSummary;

    #[test]
    fn csv_cells_never_start_a_formula() {
        let mut row: ExecutionSummary = serde_json::from_value(serde_json::json!({
            "id": 1, "created_at": "2026-12-03T10:00:00.000Z", "caller": "=HYPERLINK(\"http://x\")",
            "caller_kind": "cli", "source": "+1", "provider": "-2", "language": "@SUM(A1)",
            "status": "success", "exit_code": -124, "duration_ms": 5, "input_bytes": 1, "output_bytes": 2,
            "replica": "=cmd"
        }))
        .unwrap();
        row.status = "\t=1".into();

        let csv = to_csv(&[row]);
        let line = csv.lines().nth(1).unwrap();

        assert_eq!(
            line,
            "1,2026-12-03T10:00:00.000Z,\"'=HYPERLINK(\"\"http://x\"\")\",cli,'+1,'-2,'@SUM(A1),'\t=1,-124,5,1,2,'=cmd"
        );
    }
}
