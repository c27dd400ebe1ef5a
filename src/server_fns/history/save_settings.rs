use leptos::prelude::*;

use crate::{model::history::HistorySettings, server_fns::error::AppError};

/// Saves what the history keeps (checkbox `keep_content`) and for how long; the retention is
/// applied at once.
#[server(prefix = "/rpc", endpoint = "save_history_settings")]
pub async fn save_history_settings(
    #[server(default)] keep_content: Option<String>,
    max_content_bytes: String,
    retention_days: String,
    max_rows: String,
) -> Result<HistorySettings, AppError> {
    use crate::{
        model::history::HistoryFlash,
        server_fns::guard::{flash_to, internal, plain_form, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let number = |text: &str, what: &str| {
        text.trim()
            .parse::<u32>()
            .map_err(|_| format!("{what} must be a whole number."))
    };
    let parsed = (|| {
        Ok::<_, String>(HistorySettings {
            keep_content: keep_content.is_some(),
            max_content_bytes: number(&max_content_bytes, "The content size")?,
            retention_days: number(&retention_days, "The retention in days")?,
            max_rows: number(&max_rows, "The number of runs kept")?,
        })
    })();
    let state = expect_context::<crate::server::state::AppState>();
    let outcome = match parsed {
        Ok(settings) => {
            match crate::server::history::save(
                &state.pool,
                &crate::server::db::execution::Actor::admin(&admin.username),
                &settings,
            )
            .await
            {
                Ok(()) => Ok(settings),
                Err(crate::server::history::SaveError::Invalid(message)) => Err(message),
                Err(error) => return Err(internal(error)),
            }
        }
        Err(message) => Err(message),
    };
    if plain_form() {
        let flash = match &outcome {
            Ok(_) => HistoryFlash::Saved,
            Err(message) => HistoryFlash::Invalid(message.clone()),
        };
        flash_to(&flash, super::PAGE).await?;
        return outcome.map_err(AppError::BadRequest);
    }
    outcome.map_err(|message| reject(AppError::BadRequest(message)))
}
