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
    crate::model::messages::Localize::localize(&mut settings, crate::server_fns::guard::locale());
    if crate::server_fns::guard::request_locale() == "zh-CN" {
        for card in &mut settings.providers {
            crate::model::schema_i18n::translate_info(
                &mut card.info,
                crate::model::schema_i18n::ZH_CN,
            );
            crate::model::schema_i18n::translate(
                &card.info.kind,
                &mut card.schema,
                crate::model::schema_i18n::ZH_CN,
            );
        }
    }
    Ok(settings)
}
