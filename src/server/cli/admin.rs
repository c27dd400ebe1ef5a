//! `sandbox-console admin create|reset-password`: account management from the shell, for the
//! first admin on a headless machine and for the admin who forgot their password.

use std::io::BufRead;

use anyhow::Context;

use crate::server::{
    auth::{account, password},
    config::{AdminAction, Config},
    startup::open_database,
};

pub async fn run(config: &Config, action: AdminAction) -> anyhow::Result<()> {
    let pool = open_database(config).await?;
    let result = match action {
        AdminAction::Create {
            username,
            password_stdin,
        } => {
            let (password, generated) = choose_password(password_stdin, config)?;
            let user = account::create_admin(&pool, &username, password.clone()).await?;
            println!("Created the administrator '{}'.", user.username);
            if generated {
                println!("Password (shown only now): {password}");
            }
            Ok(())
        }
        AdminAction::ResetPassword {
            username,
            password_stdin,
        } => {
            let (password, generated) = choose_password(password_stdin, config)?;
            account::reset_password(&pool, &username, password.clone()).await?;
            println!(
                "Set a new password for '{}'; their sessions are signed out.",
                username.trim().to_lowercase()
            );
            if generated {
                println!("Password (shown only now): {password}");
            }
            Ok(())
        }
    };
    pool.close().await;
    result
}

/// The password to use, and whether it was generated (and so must be printed).
fn choose_password(from_stdin: bool, config: &Config) -> anyhow::Result<(String, bool)> {
    if from_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("cannot read the password from standard input")?;
        return Ok((line.trim_end_matches(['\r', '\n']).to_owned(), false));
    }
    Ok(match &config.admin_password {
        Some(password) => (password.clone(), false),
        None => (password::generate(), true),
    })
}
