//! How a sandbox's interpreter is started: its program, folder and variables (the same for a
//! run and a session).

use std::time::Duration;

use hakoniwa::{Container, Stdio};

use super::LocalConfig;
use crate::{
    model::execution::Language,
    sandbox::{
        egress::files::NetworkFiles,
        environment::{self, Mount},
    },
};

fn interpreter(config: &LocalConfig, language: Language) -> &str {
    match language {
        Language::Python => &config.python_path,
        Language::Javascript => &config.node_path,
    }
}

/// `language`'s interpreter in `container`, started in `home` (also its `HOME`) with the
/// variables every sandbox gets and no others (the package environment's and the network's
/// among them), its stdio piped, and hakoniwa's deadline at `deadline`. The caller adds the
/// arguments.
pub(super) fn interpreter_command(
    container: &Container,
    config: &LocalConfig,
    language: Language,
    home: &str,
    mount: Option<&Mount>,
    network: Option<&NetworkFiles>,
    deadline: Duration,
) -> hakoniwa::Command {
    let mut command = container.command(interpreter(config, language));
    command
        .current_dir(home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("TMPDIR", "/tmp")
        .env("LANG", "C.UTF-8")
        .env("PYTHONIOENCODING", "utf-8");
    for (name, value) in environment::sandbox_env(mount) {
        command.env(name, &value);
    }
    if let Some(files) = network {
        for (name, value) in files.env() {
            command.env(name, &value);
        }
    }
    command
        .wait_timeout(deadline.as_secs().max(1))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}
