use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Closes an open sandbox session (its sandbox and everything in it go), and audits it.
#[server(prefix = "/rpc", endpoint = "close_sandbox_session")]
pub async fn close_sandbox_session(id: String) -> Result<(), AppError> {
    use crate::server_fns::guard::{plain_form, reject};

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let closed = state.sessions.close_any(id.trim()).await;
    if let Some(held) = &closed {
        crate::server_fns::account::audit(
            &admin.username,
            "session_close",
            &[
                ("session", held.id.clone()),
                ("key", held.owner.key_name.clone()),
            ],
        )
        .await;
    }
    if plain_form() {
        leptos_axum::redirect(super::PAGE);
        return Ok(());
    }
    closed.map(|_| ()).ok_or_else(|| {
        reject(AppError::BadRequest(
            "That session is closed already.".into(),
        ))
    })
}
