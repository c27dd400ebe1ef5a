use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// What one of an environment's buttons asks for.
#[cfg(feature = "ssr")]
enum Action {
    Build,
    Test,
    MakeDefault,
    Delete,
}

/// Starts a build of the environment's current spec (joins one under way for the same spec).
#[server(prefix = "/rpc", endpoint = "build_environment")]
pub async fn build_environment(name: String) -> Result<String, AppError> {
    act(name, Action::Build).await
}

/// Imports every module of the ready build through the providers that mount it.
#[server(prefix = "/rpc", endpoint = "test_environment")]
pub async fn test_environment(name: String) -> Result<String, AppError> {
    act(name, Action::Test).await
}

/// Makes the environment the default (providers whose Environment field is blank use it).
#[server(prefix = "/rpc", endpoint = "make_default_environment")]
pub async fn make_default_environment(name: String) -> Result<String, AppError> {
    act(name, Action::MakeDefault).await
}

/// Deletes an environment no provider uses.
#[server(prefix = "/rpc", endpoint = "delete_environment")]
pub async fn delete_environment(name: String) -> Result<String, AppError> {
    act(name, Action::Delete).await
}

#[cfg(feature = "ssr")]
async fn act(name: String, action: Action) -> Result<String, AppError> {
    use crate::{
        model::environment::EnvironmentFlash,
        server::{db::execution::Actor, environments::ChangeError},
        server_fns::guard::{flash_to, internal, plain_form, reject},
    };

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let actor = Actor::admin(&admin.username);
    let environments = &state.environments;
    let name = name.trim().to_owned();
    let outcome = match action {
        Action::Build => environments
            .build(&actor, &name)
            .await
            .map(|id| format!("Build {id} of '{name}' is under way; this page follows it.")),
        Action::Test => environments.test(&name).await.map(|results| {
            let failed: Vec<_> = results.iter().filter(|r| !r.ok).map(|r| r.provider.clone()).collect();
            if failed.is_empty() {
                format!("'{name}' imports cleanly on {} provider set-up(s).", results.len())
            } else {
                format!("'{name}' is not usable on: {}. See the verification below.", failed.join(", "))
            }
        }),
        Action::MakeDefault => environments
            .set_default(&actor, &name)
            .await
            .map(|()| format!("'{name}' is the default now: providers with a blank Environment field use it from their next run.")),
        Action::Delete => environments
            .delete(&actor, &name)
            .await
            .map(|()| format!("Deleted '{name}'.")),
    };
    let outcome = match outcome {
        Ok(message) => Ok(message),
        Err(ChangeError::Store(crate::server::db::environment::EnvError::Database(error))) => {
            return Err(internal(error))
        }
        Err(other) => Err(other.to_string()),
    };
    if plain_form() {
        let (flash, back) = match &outcome {
            Ok(message) => (
                EnvironmentFlash::Done {
                    message: message.clone(),
                },
                match action {
                    Action::Delete => super::PAGE.to_owned(),
                    _ => super::page_of(&name),
                },
            ),
            Err(message) => (
                EnvironmentFlash::Refused {
                    message: message.clone(),
                    errors: Default::default(),
                    form: None,
                },
                super::page_of(&name),
            ),
        };
        flash_to(&flash, &back).await?;
        // The redirect stands; the page shows the outcome from the session.
        return outcome.map_err(AppError::BadRequest);
    }
    outcome.map_err(|message| reject(AppError::BadRequest(message)))
}
