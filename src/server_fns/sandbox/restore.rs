use leptos::prelude::*;

use crate::{
    model::settings::{SaveOutcome, SettingVersion},
    server_fns::error::AppError,
};

/// The saved versions of provider `kind`'s settings, newest first, with what changed.
#[server(prefix = "/rpc", endpoint = "sandbox_setting_versions")]
pub async fn get_setting_versions(kind: String) -> Result<Vec<SettingVersion>, AppError> {
    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    state
        .sandbox
        .versions(&kind)
        .await
        .map_err(crate::server_fns::guard::internal)
}

/// Makes saved version `id` of `kind`'s settings the current one (a new version, audited).
/// `expected_version` is the version the page showed as current. Like a save, a restore of
/// the active provider goes live only when it passes the health check, unless `anyway` is
/// `activate`.
#[server(prefix = "/rpc", endpoint = "restore_sandbox_settings")]
pub async fn restore_sandbox_settings(
    kind: String,
    id: String,
    #[server(default)] expected_version: String,
    #[server(default)] anyway: String,
) -> Result<SaveOutcome, AppError> {
    use crate::{
        model::settings::FlashOutcome,
        server::{
            db::{execution::Actor, system_setting::Expected},
            sandbox::Gate,
        },
        server_fns::guard::{internal, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let bad = |message: &str| reject(AppError::BadRequest(message.into()));
    let id = id
        .trim()
        .parse::<i64>()
        .map_err(|_| bad("id must be a number"))?;
    let expected = match expected_version.trim() {
        "" => Expected::Any,
        text => Expected::Version(
            text.parse()
                .map_err(|_| bad("expected_version must be a number"))?,
        ),
    };
    let gate = match anyway.as_str() {
        "" => Gate::HealthyOnly,
        "activate" => Gate::AfterWarning,
        _ => return Err(bad("anyway must be activate")),
    };
    let state = expect_context::<crate::server::state::AppState>();
    let outcome = state
        .sandbox
        .restore(&Actor::admin(&admin.username), &kind, id, expected, gate)
        .await
        .map_err(internal)?;
    if crate::server_fns::guard::plain_form() {
        let flash = crate::model::settings::SandboxFlash {
            kind: kind.clone(),
            values: Default::default(),
            trial: None,
            outcome: FlashOutcome::Restore {
                id,
                outcome: outcome.clone(),
            },
        };
        crate::server_fns::guard::flash_to(&flash, &super::history_url(&kind)).await?;
    }
    let mut outcome = outcome;
    crate::model::messages::Localize::localize(&mut outcome, crate::server_fns::guard::locale());
    Ok(outcome)
}
