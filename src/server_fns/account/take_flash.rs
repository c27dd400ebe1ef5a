use leptos::prelude::*;

use crate::{model::admin::AccountFlash, server_fns::error::AppError};

/// The outcome of the last plain form post on the Account or Administrators page, once.
#[server(prefix = "/rpc", endpoint = "take_account_flash")]
pub async fn take_account_flash() -> Result<Option<AccountFlash>, AppError> {
    use crate::server_fns::guard::{internal, take_flash};

    // A generated password is stored sealed; it is opened only for this view.
    match take_flash().await? {
        Some(AccountFlash::OneTimePassword { username, password }) => {
            let state = expect_context::<crate::server::state::AppState>();
            let password = state.secrets.open(&password).map_err(internal)?;
            Ok(Some(AccountFlash::OneTimePassword { username, password }))
        }
        other => Ok(other),
    }
}
