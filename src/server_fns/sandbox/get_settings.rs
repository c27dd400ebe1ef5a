use leptos::prelude::*;

use crate::{model::settings::SandboxSettings, server_fns::error::AppError};

/// Every provider with its schema and saved values (never secrets), and which one is active.
#[server(prefix = "/rpc", endpoint = "sandbox_settings")]
pub async fn get_sandbox_settings() -> Result<SandboxSettings, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let mut settings = state
        .sandbox
        .settings()
        .await
        .map_err(crate::server_fns::guard::internal)?;
    let environments = state
        .environments
        .list()
        .await
        .map_err(crate::server_fns::guard::internal)?;
    crate::server::sandbox::choices::offer(&mut settings, &environments).await;
    let locale = crate::server_fns::guard::locale();
    crate::model::messages::Localize::localize(&mut settings, locale);
    if let Some(table) = crate::model::schema_i18n::SchemaTranslations::for_locale(locale) {
        for card in &mut settings.providers {
            table.translate_info(&mut card.info);
            table.translate(&card.info.kind, &mut card.schema);
        }
    }
    Ok(settings)
}
