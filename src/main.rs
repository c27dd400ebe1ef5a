//! The sandbox-console binary: parse the command line, set up logging, run.

use clap::Parser;
use sandbox_console::server::{
    admin_cli,
    config::{Cli, Command},
    startup::Application,
    telemetry,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    telemetry::init();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let app = Application::build(cli.config).await?;
            // Scripts (and people) read the real address here, also when --listen asked for port 0.
            println!("sandbox-console listening on http://{}", app.local_addr());
            app.run_until_stopped().await?;
        }
        Command::Admin { action } => admin_cli::run(&cli.config, action).await?,
    }
    Ok(())
}
