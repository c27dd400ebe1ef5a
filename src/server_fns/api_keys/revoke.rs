use leptos::prelude::*;

use crate::{model::api_key::ApiKeyInfo, server_fns::error::AppError};

/// Revokes the live key with this id: from now on it is refused with 401.
#[server(prefix = "/rpc", endpoint = "revoke_api_key")]
pub async fn revoke_api_key(id: String) -> Result<ApiKeyInfo, AppError> {
    use crate::{
        model::api_key::ApiKeyFlash,
        server_fns::guard::{flash_to, internal, plain_form, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let id: i64 = id
        .trim()
        .parse()
        .map_err(|_| reject(AppError::BadRequest("id must be a number".into())))?;
    let state = expect_context::<crate::server::state::AppState>();
    let revoked = crate::server::db::api_key::revoke(&state.pool, id)
        .await
        .map_err(internal)?
        .ok_or_else(|| "That key does not exist or was revoked already.".to_owned());
    if let Ok(key) = &revoked {
        crate::server_fns::account::audit(
            &admin.username,
            "key_revoke",
            &[("key", key.name.clone())],
        )
        .await;
    }
    if plain_form() {
        let flash = match &revoked {
            Ok(key) => ApiKeyFlash::Revoked {
                name: key.name.clone(),
            },
            Err(message) => ApiKeyFlash::Invalid {
                message: message.clone(),
                name: String::new(),
                scopes: vec![],
            },
        };
        flash_to(&flash, super::PAGE).await?;
        return revoked.map_err(AppError::BadRequest);
    }
    revoked.map_err(|message| reject(AppError::BadRequest(message)))
}
