use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Creates an environment (no `version`) or changes its spec (`version` = the one the form
/// showed), based on `base` (another environment whose packages come first; blank for none),
/// then starts a build of it. Refused with per-field messages, the form kept. A change that
/// takes packages away from the providers using the environment says which.
#[server(prefix = "/rpc", endpoint = "save_environment")]
pub async fn save_environment(
    name: String,
    #[server(default)] python_requirements: String,
    #[server(default)] npm_packages: String,
    #[server(default)] allow_sdists: Option<String>,
    #[server(default)] base: String,
    #[server(default)] preload: Option<String>,
    #[server(default)] version: Option<String>,
) -> Result<String, AppError> {
    use crate::{
        model::environment::{EnvironmentFlash, EnvironmentForm},
        server::{
            db::{environment::EnvError, execution::Actor},
            environments::SaveError,
        },
        server_fns::guard::{flash_to, internal, plain_form, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let actor = Actor::admin(&admin.username);
    let allow = allow_sdists.is_some_and(|v| v == "on" || v == "true");
    let version = match version.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(
            text.parse::<i64>()
                .map_err(|_| reject(AppError::BadRequest("version must be a number".into())))?,
        ),
    };
    let form = EnvironmentForm {
        name: name.trim().to_owned(),
        python_requirements: python_requirements.clone(),
        npm_packages: npm_packages.clone(),
        allow_sdists: allow,
        base: base.trim().to_owned(),
        preload: preload.clone().unwrap_or_default(),
        version,
    };
    let saved = state
        .environments
        .save(
            &actor,
            &name,
            &python_requirements,
            &npm_packages,
            allow,
            &form.base,
            preload.as_deref(),
            version,
        )
        .await;
    let mut dropped_note = None;
    let outcome = match saved {
        Ok((_, dropped)) => {
            let name = form.name.clone();
            if !dropped.is_empty() {
                let used_by = state
                    .environments
                    .get(&name)
                    .await
                    .map_err(internal)?
                    .map(|info| info.used_by)
                    .unwrap_or_default();
                if !used_by.is_empty() {
                    dropped_note = Some(format!(
                        " It no longer has {}, which {} had from it.",
                        dropped.join(", "),
                        used_by.join(", ")
                    ));
                }
            }
            match state.environments.build(&actor, &name).await {
                Ok(_) => Ok(name),
                Err(error) => Err((error.to_string(), std::collections::BTreeMap::new())),
            }
        }
        Err(SaveError::Invalid(errors)) => Err((
            "Fix the marked fields.".to_owned(),
            errors
                .into_iter()
                .collect::<std::collections::BTreeMap<String, String>>(),
        )),
        Err(SaveError::Store(EnvError::Database(error))) => return Err(internal(error)),
        Err(SaveError::Store(other)) => Err((other.to_string(), std::collections::BTreeMap::new())),
    };
    if plain_form() {
        match &outcome {
            Ok(name) => {
                let flash = EnvironmentFlash::Done {
                    message: format!(
                        "Saved '{name}'. Its build has started; this page follows it.{}",
                        dropped_note.clone().unwrap_or_default()
                    ),
                };
                flash_to(&flash, &super::page_of(name)).await?;
            }
            Err((message, errors)) => {
                let flash = EnvironmentFlash::Refused {
                    message: message.clone(),
                    errors: errors.clone(),
                    form: Some(form.clone()),
                };
                let back = match version {
                    Some(_) => super::page_of(&form.name),
                    None => super::PAGE.to_owned(),
                };
                flash_to(&flash, &back).await?;
            }
        }
        // The redirect stands; the page shows the outcome from the session.
        return outcome.map_err(|(message, _)| AppError::BadRequest(message));
    }
    outcome.map_err(|(message, errors)| {
        let detail = errors
            .iter()
            .map(|(field, why)| format!("{field}: {why}"))
            .collect::<Vec<_>>()
            .join(" ");
        reject(AppError::BadRequest(if detail.is_empty() {
            message
        } else {
            format!("{message} {detail}")
        }))
    })
}
