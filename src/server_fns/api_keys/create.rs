use leptos::prelude::*;

use crate::{model::api_key::CreatedKey, server_fns::error::AppError};

/// Creates an API key named `name` with the ticked scopes (checkboxes `execute`, `admin`),
/// expiring after `expires_days` days (blank: never).
/// The key is in the answer (or, for a plain form post, on the next page view, kept sealed in
/// the session until then) and never again.
#[server(prefix = "/rpc", endpoint = "create_api_key")]
pub async fn create_api_key(
    name: String,
    #[server(default)] execute: Option<String>,
    #[server(default)] admin: Option<String>,
    #[server(default)] expires_days: String,
) -> Result<CreatedKey, AppError> {
    use crate::{
        model::api_key::{check_expiry, check_name, ApiKeyFlash, Scope},
        server::db::api_key::{self, KeyError},
        server_fns::guard::{flash_to, internal, plain_form, reject},
    };

    let signed_in = crate::server_fns::require_admin().await?;
    let scopes: Vec<Scope> = [(execute, Scope::Execute), (admin, Scope::Admin)]
        .into_iter()
        .filter_map(|(ticked, scope)| ticked.map(|_| scope))
        .collect();
    let state = expect_context::<crate::server::state::AppState>();
    let expiry = check_expiry(&expires_days);
    let outcome = match check_name(&name) {
        Err(message) => Err(message),
        Ok(_) if expiry.is_err() => Err(expiry.clone().err().unwrap_or_default()),
        Ok(_) if scopes.is_empty() => {
            Err("Tick at least one scope: a key without scopes can do nothing.".to_owned())
        }
        Ok(checked) => {
            let days = expiry.clone().ok().flatten();
            match api_key::create(&state.pool, &checked, &scopes, &signed_in.username, days).await {
                Ok(created) => {
                    let scope_ids: Vec<&str> = created.info.scopes.iter().map(|s| s.id()).collect();
                    crate::server_fns::account::audit(
                        &signed_in.username,
                        "key_create",
                        &[
                            ("key", created.info.name.clone()),
                            ("scopes", scope_ids.join(", ")),
                            ("expires", created.info.expires_at.clone().unwrap_or_else(|| "never".into())),
                        ],
                    )
                    .await;
                    Ok(created)
                }
                Err(KeyError::NameTaken(_)) => Err(format!(
                    "A live key is already named '{checked}'. Choose another name or revoke that key first."
                )),
                Err(KeyError::Database(error)) => return Err(internal(error)),
            }
        }
    };
    if plain_form() {
        let flash = match &outcome {
            // The key waits in the session row for the page view after the redirect: sealed
            // with the console's secret key, so neither the database nor its write-ahead log
            // ever holds it in clear. Taking the flash deletes it.
            Ok(created) => ApiKeyFlash::Created(crate::model::api_key::CreatedKey {
                info: created.info.clone(),
                key: state.secrets.seal(&created.key),
            }),
            Err(message) => ApiKeyFlash::Invalid {
                message: message.clone(),
                name: name.clone(),
                scopes,
            },
        };
        flash_to(&flash, super::PAGE).await?;
        // The redirect stands; the page shows the outcome from the session.
        return outcome.map_err(AppError::BadRequest);
    }
    outcome.map_err(|message| reject(AppError::BadRequest(message)))
}
