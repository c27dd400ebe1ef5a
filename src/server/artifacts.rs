//! Trial-run artifacts kept for download (served by `routes::artifacts`, only ever as
//! attachments).

use crate::{model::execution::Artifact, server::db::artifact};

/// The URL the page links a stored artifact under.
pub fn download_url(id: &str) -> String {
    format!("/admin/artifacts/{id}")
}

/// Keeps `artifacts` of the admin's latest trial run for download; returns one URL each.
/// Nothing to keep, nothing stored (and the admin's older files stay until they expire).
pub async fn keep(
    pool: &sqlx::AnyPool,
    admin_user_id: i64,
    artifacts: &[Artifact],
) -> Result<Vec<String>, sqlx::Error> {
    if artifacts.is_empty() {
        return Ok(Vec::new());
    }
    let ids = artifact::replace_for(pool, admin_user_id, artifacts).await?;
    Ok(ids.iter().map(|id| download_url(id)).collect())
}
