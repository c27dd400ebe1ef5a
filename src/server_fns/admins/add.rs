use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Adds an administrator named `username` with a generated password, answered (or, for a
/// plain form post, shown on the next page view) once; it must be changed at first sign-in.
#[server(prefix = "/rpc", endpoint = "add_administrator")]
pub async fn add_administrator(#[server(default)] username: String) -> Result<String, AppError> {
    use crate::server::auth::account::{self, AccountError};
    use crate::server_fns::{
        account::{audit, refuse},
        guard::internal,
    };

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    match account::add_with_generated(&state.pool, &username).await {
        Ok((user, password)) => {
            audit(
                &admin.username,
                "admin_add",
                &[("administrator", user.username.clone())],
            )
            .await;
            super::flash_password(&user.username, &password).await?;
            Ok(password)
        }
        Err(e @ (AccountError::InvalidUsername(_) | AccountError::Exists(_))) => {
            let mut message = e.to_string();
            if let Some(first) = message.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            let message = format!("{message}. Nobody was added.");
            let typed: String = username.chars().take(64).collect();
            Err(refuse(
                super::PAGE,
                "username",
                &typed,
                AppError::BadRequest(message),
            )
            .await)
        }
        Err(other) => Err(internal(other)),
    }
}
