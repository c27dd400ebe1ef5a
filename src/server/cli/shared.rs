//! What the shell commands share: the services as the server has them, over the server's
//! `--data-dir` / `--database-url` and secret key, and the caller their runs are recorded as.

use anyhow::Context;

use crate::{
    sandbox::providers,
    server::{
        config::Config, db::execution::Caller, environments::EnvironmentService,
        sandbox::SandboxService, secrets::SecretBox, startup::open_database,
    },
};

pub(crate) async fn service(config: &Config) -> anyhow::Result<SandboxService> {
    Ok(services(config).await?.0)
}

/// The sandbox and environments services as the server has them (environments mounted), for
/// commands that run code. Nothing is built in the background.
pub(crate) async fn services(
    config: &Config,
) -> anyhow::Result<(SandboxService, EnvironmentService)> {
    crate::server::startup::require_shared_secret_key(config)?;
    let pool = open_database(config).await?;
    let secrets = SecretBox::load(&config.data_dir, config.secret_key.as_deref())
        .context("cannot load the key that encrypts stored secrets")?;
    let run_dir = config.run_dir.clone().unwrap_or_default();
    let registry = providers::registry().update_context(|context| context.run_dir = run_dir);
    let environments = EnvironmentService::for_config(pool.clone(), config, &registry, Vec::new())
        .await
        .context("cannot load the package environments")?;
    let sandbox = SandboxService::start_with(
        pool,
        registry,
        secrets,
        Some(environments.catalog()),
        Vec::new(),
    )
    .await
    .context("cannot load the sandbox settings")?
    .with_replica(&config.history_replica(true))
    .with_history_spool(config.data_dir.join(crate::server::startup::HISTORY_SPOOL));
    Ok((sandbox, environments))
}

/// Who the history and the audit name for what is done from the shell.
pub(crate) fn shell_caller() -> Caller {
    let name = std::env::var("SUDO_USER")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "cli".into());
    Caller::cli(&name)
}

/// The database for a command that only reads: `None` (and a note) when there is none yet.
/// Creates nothing: no data directory, no database, no secret key.
pub(crate) async fn read_only_database(config: &Config) -> anyhow::Result<Option<sqlx::AnyPool>> {
    let url = config.database_url();
    let pool = crate::server::db::connect_read_only(&url)
        .await
        .with_context(|| {
            format!(
                "cannot open the database {}",
                crate::server::db::redacted_url(&url)
            )
        })?;
    if pool.is_none() {
        eprintln!("No database at {url} yet: nothing is configured.");
    }
    Ok(pool)
}
