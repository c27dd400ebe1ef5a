//! `sandbox-console env list|show|build|test`: package environments from the shell, on the
//! server's `--data-dir` / `--database-url` and environment store.

use std::{io::Write, sync::Arc, time::Duration};

use anyhow::{bail, Context};

use crate::{
    model::environment::{BuildStatus, EnvironmentInfo, Verification},
    server::{
        cli::shared::{services, shell_caller},
        config::{Config, EnvAction},
        environments::{self, build_parts::STEP_DEADLINE},
    },
};

pub async fn run(config: &Config, action: EnvAction) -> anyhow::Result<i32> {
    let (sandbox, environments) = services(config).await?;
    let sandbox = Arc::new(sandbox);
    environments.set_verifier(sandbox.clone());
    let code = match action {
        EnvAction::List { json } => {
            let list = environments
                .list()
                .await
                .context("cannot list the environments")?;
            if json {
                let rows: Vec<_> = list.iter().map(environments::to_json).collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                println!(
                    "{:<20} {:<9} {:>9}  {:<8} USED BY",
                    "NAME", "STATUS", "SIZE", "DEFAULT"
                );
                for env in &list {
                    println!(
                        "{:<20} {:<9} {:>9}  {:<8} {}",
                        env.name,
                        env.status(),
                        env.ready
                            .as_ref()
                            .and_then(|b| b.size_bytes)
                            .map_or("-".into(), mib),
                        if env.is_default { "yes" } else { "" },
                        env.used_by.join(", ")
                    );
                }
            }
            0
        }
        EnvAction::Show { name, json } => {
            let Some(env) = environments.get(&name).await? else {
                bail!("there is no environment named {name:?}");
            };
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&environments::to_json(&env))?
                );
            } else {
                show(&env);
            }
            0
        }
        EnvAction::Build { name, if_needed } => {
            if if_needed && environments.is_current(&name).await? {
                eprintln!("{name:?} is built from its current spec already.");
                sandbox.shutdown().await;
                return Ok(0);
            }
            let actor = shell_caller().actor();
            let id = environments.build(&actor, &name).await?;
            eprintln!(
                "Building {name:?} (build {id}) into {}",
                environments.store().display()
            );
            let build = environments
                .wait(id, STEP_DEADLINE * 3, |piece| {
                    let _ = std::io::stderr().write_all(piece.as_bytes());
                })
                .await?
                .context("the build vanished")?;
            // The verification runs after the build is marked ready.
            environments.finish_builds(Duration::from_secs(600)).await;
            match build.status {
                BuildStatus::Ready => {
                    let env = environments
                        .get(&name)
                        .await?
                        .context("the environment vanished")?;
                    if let Some(ready) = &env.ready {
                        print_verification(&ready.verification);
                    }
                    println!("{name}: ready ({} packages)", build.lock.len());
                    0
                }
                _ => {
                    eprintln!("error: the build of {name:?} failed: {}", build.stage);
                    1
                }
            }
        }
        EnvAction::Test { name } => {
            let results = environments.test(&name).await?;
            print_verification(&results);
            if results.iter().all(|r| r.ok) {
                0
            } else {
                1
            }
        }
    };
    sandbox.shutdown().await;
    Ok(code)
}

fn mib(bytes: i64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1024.0 / 1024.0)
}

fn show(env: &EnvironmentInfo) {
    println!(
        "name:        {}{}",
        env.name,
        if env.is_default { " (default)" } else { "" }
    );
    println!("status:      {}", env.status());
    println!(
        "version:     {} (by {} at {})",
        env.version, env.updated_by, env.updated_at
    );
    println!(
        "used by:     {}",
        if env.used_by.is_empty() {
            "-".into()
        } else {
            env.used_by.join(", ")
        }
    );
    println!(
        "python:      {}",
        env.python_requirements.replace('\n', ", ")
    );
    println!("npm:         {}", env.npm_packages.replace('\n', ", "));
    if let Some(latest) = &env.latest {
        println!(
            "latest build {}: {} ({})",
            latest.id,
            latest.status.id(),
            latest.stage
        );
    }
    if let Some(ready) = &env.ready {
        println!(
            "in use:      build {} ({}), {}",
            ready.id,
            ready.spec_hash,
            ready.size_bytes.map_or("-".into(), mib)
        );
        for package in &ready.lock {
            println!(
                "  {:<5} {}=={}",
                package.ecosystem, package.name, package.version
            );
        }
        print_verification(&ready.verification);
    }
}

fn print_verification(results: &[Verification]) {
    for result in results {
        match (&result.error, result.import_ms) {
            (None, Some(ms)) => println!("  verified on {}: imports in {ms} ms", result.provider),
            (error, _) => println!(
                "  NOT usable on {}: {}",
                result.provider,
                error.as_deref().unwrap_or("unknown")
            ),
        }
    }
}
