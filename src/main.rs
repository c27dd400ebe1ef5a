//! The sandbox-console binary: parse the command line, set up logging, run.

use clap::Parser;
use sandbox_console::server::{
    cli::{self, exec::ExecArgs},
    config::{Cli, Command},
    startup::Application,
    telemetry,
};

#[tokio::main]
async fn main() {
    // One clear line for a failure (`error: what: why: cause`), never a backtrace or a
    // Debug dump: admins read this in a terminal or a unit's log.
    match run().await {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(1)
        }
    }
}

async fn run() -> anyhow::Result<i32> {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Command::Serve);
    if matches!(command, Command::Serve | Command::Admin { .. }) {
        telemetry::init();
    } else {
        telemetry::init_with("warn,libcgroups=error");
    }
    let config = &cli.config;
    let code = match command {
        Command::Serve => {
            let app = Application::build(config.clone()).await?;
            // Scripts (and people) read the real address here, also when --listen asked for port 0.
            println!("sandbox-console listening on http://{}", app.local_addr());
            if let Some(address) = app.metrics_addr() {
                println!("metrics (no authentication) on http://{address}/metrics");
            }
            app.run_until_stopped().await?;
            0
        }
        Command::Admin { action } => {
            cli::admin::run(config, action).await?;
            0
        }
        Command::Providers { json } => cli::configure::providers(config, json).await?,
        Command::Configure {
            provider,
            set,
            from_env,
            activate,
        } => cli::configure::configure(config, &provider, &set, from_env, activate).await?,
        Command::Exec {
            file,
            language,
            args,
            timeout,
            json,
        } => {
            let args = ExecArgs {
                file: &file,
                language: language.as_deref(),
                args: args.as_deref(),
                timeout,
                json,
            };
            cli::exec::exec(config, args).await?
        }
        Command::ApiKey { action } => cli::api_key::api_key(config, action).await?,
        Command::Env { action } => cli::env::run(config, action).await?,
        Command::Probe { path, timeout } => cli::probe::run(config, &path, timeout).await,
    };
    Ok(code)
}
