use leptos::prelude::*;

use crate::{
    model::environment::{EnvironmentFlash, EnvironmentInfo, EnvironmentPage},
    server_fns::error::AppError,
};

/// Every environment, the default first, and the list page's flash.
#[server(prefix = "/rpc", endpoint = "list_environments")]
pub async fn list_environments(
) -> Result<(Vec<EnvironmentInfo>, Option<EnvironmentFlash>), AppError> {
    use crate::server_fns::guard::{internal, take_flash};

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let list = state.environments.list().await.map_err(internal)?;
    let flash = take_flash::<EnvironmentFlash>().await?;
    Ok((list, flash))
}

/// One environment, its newest build's log, and the page's flash.
#[server(prefix = "/rpc", endpoint = "get_environment")]
pub async fn get_environment(name: String) -> Result<EnvironmentPage, AppError> {
    use crate::server_fns::guard::{internal, reject, take_flash};

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let Some(environment) = state.environments.get(&name).await.map_err(internal)? else {
        return Err(reject(AppError::NotFound(format!(
            "There is no environment named '{name}'."
        ))));
    };
    let newest = environment
        .latest
        .as_ref()
        .or(environment.ready.as_ref())
        .map(|build| build.id);
    let log = match newest {
        Some(id) => state.environments.build_log(id).await.map_err(internal)?,
        None => None,
    };
    let flash = take_flash::<EnvironmentFlash>().await?;
    let names = state
        .environments
        .list()
        .await
        .map_err(internal)?
        .into_iter()
        .map(|e| e.name)
        .collect();
    Ok(EnvironmentPage {
        environment,
        log,
        flash,
        names,
    })
}

/// A line for every page while an environment in use has no ready build (building, or its
/// build failed): runs use the bare interpreter until it is ready.
#[server(prefix = "/rpc", endpoint = "environment_notice")]
pub async fn environment_notice() -> Result<Option<String>, AppError> {
    use crate::server_fns::guard::internal;

    crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let list = state.environments.list().await.map_err(internal)?;
    let waiting: Vec<String> = list
        .iter()
        .filter(|env| env.ready.is_none() && !env.used_by.is_empty())
        .map(|env| match env.status() {
            "building" => format!("environment '{}' is building", env.name),
            "failed" => format!("environment '{}' failed to build", env.name),
            _ => format!("environment '{}' has never been built", env.name),
        })
        .collect();
    Ok((!waiting.is_empty()).then(|| {
        format!(
            "The {}: runs use the bare interpreter until it is ready.",
            waiting.join("; the ")
        )
    }))
}
