//! `sandbox-console api-key create|list|revoke`: API keys from the shell.

use anyhow::Context;

use super::{
    exit,
    shared::{read_only_database, shell_caller},
};
use crate::server::{
    config::{ApiKeyAction, Config},
    db::api_key,
    startup::open_database,
};

pub async fn api_key(config: &Config, action: ApiKeyAction) -> anyhow::Result<i32> {
    if matches!(action, ApiKeyAction::List) {
        if let Some(pool) = read_only_database(config).await? {
            list_keys(&pool).await?;
            pool.close().await;
        }
        return Ok(exit::OK);
    }
    let pool = open_database(config).await?;
    let actor = shell_caller().actor().to_string();
    let code = match action {
        ApiKeyAction::Create { name, scope } => {
            let name = crate::model::api_key::check_name(&name).map_err(anyhow::Error::msg)?;
            let created = api_key::create(&pool, &name, &scope, &actor, None)
                .await
                .context("cannot create the API key")?;
            let scopes: Vec<_> = created.info.scopes.iter().map(|s| s.id()).collect();
            eprintln!(
                "Created the API key '{}' (scopes: {}). It is shown only now:",
                created.info.name,
                scopes.join(", ")
            );
            println!("{}", created.key);
            exit::OK
        }
        ApiKeyAction::List => {
            list_keys(&pool).await?;
            exit::OK
        }
        ApiKeyAction::Revoke { name } => {
            let live = api_key::list(&pool)
                .await?
                .into_iter()
                .find(|k| k.name == name.trim() && k.revoked_at.is_none());
            match live {
                Some(key) => match api_key::revoke(&pool, key.id)
                    .await
                    .context("cannot revoke the API key")?
                {
                    Some(_) => {
                        println!("Revoked the API key '{}'.", key.name);
                        exit::OK
                    }
                    // Revoked by someone else between the two statements.
                    None => {
                        eprintln!("The API key {name:?} was revoked already.");
                        exit::BAD_INPUT
                    }
                },
                None => {
                    eprintln!("No live API key is named {name:?}.");
                    exit::BAD_INPUT
                }
            }
        }
    };
    pool.close().await;
    Ok(code)
}

async fn list_keys(pool: &sqlx::AnyPool) -> anyhow::Result<()> {
    for key in api_key::list(pool).await? {
        let scopes: Vec<_> = key.scopes.iter().map(|s| s.id()).collect();
        println!(
            "{:<24} {:<14} {:<16} created {} by {}; last used {}{}",
            key.name,
            key.prefix,
            scopes.join(","),
            key.created_at,
            key.created_by,
            key.last_used_at.as_deref().unwrap_or("never"),
            key.revoked_at
                .map(|at| format!("; REVOKED {at}"))
                .unwrap_or_default()
        );
    }
    Ok(())
}
