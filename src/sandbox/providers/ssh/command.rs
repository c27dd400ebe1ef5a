//! Remote commands over one connection: the run's command line (every word quoted, the
//! interpreter a checked single word), the sweep that kills a run's whole session and process
//! group, and short commands with a deadline and a cap on what they print.

use std::time::Duration;

use russh::ChannelMsg;

use super::{connect::Connection, error::SshError};
use crate::{
    model::execution::Language,
    sandbox::runner::{self, Job},
};

/// A short command's output, kept to this many bytes.
const SHORT_OUTPUT: usize = 64 * 1024;

/// Quotes one word for the remote POSIX shell.
pub fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| "''".into())
}

/// The run's command: from its folder, note the shell's pid (the session and process group
/// sshd made for this channel), limit Python's data segment, and start the interpreter under
/// `timeout`, which kills the group a few seconds past the deadline even when the console is
/// gone. Everything the program gets comes from files in the folder, never from this line.
pub fn run_line(
    folder: &str,
    interpreter: &str,
    job: &Job,
    timeout_secs: u32,
    memory_mb: u32,
) -> String {
    let mut line = format!("cd {} && echo $$ > _pid && ", quote(folder));
    if job.language == Language::Python {
        line.push_str(&format!("ulimit -d {} && ", u64::from(memory_mb) * 1024));
    }
    line.push_str(&format!(
        "exec timeout -s KILL {} {}",
        timeout_secs + 5,
        quote(interpreter)
    ));
    for arg in &job.interpreter_args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    line
}

/// Kills every process of the run's session and process group (the pid in `_pid`); with
/// `remove`, then deletes the folder.
pub fn sweep_line(folder: &str, remove: bool) -> String {
    let folder = quote(folder);
    let mut line = format!(
        "sid=$(cat {folder}/_pid 2>/dev/null); if [ -n \"$sid\" ]; then \
         pkill -KILL -s \"$sid\" 2>/dev/null; kill -KILL -- \"-$sid\" 2>/dev/null; fi; "
    );
    if remove {
        line.push_str(&format!("rm -rf -- {folder}"));
    } else {
        line.push_str("true");
    }
    line
}

/// What a short command printed and how it ended.
#[derive(Debug, Default)]
pub struct Short {
    /// What it printed, stdout then stderr.
    pub stdout: String,
    pub exit_status: Option<u32>,
}

/// Runs a short command within `limit`.
pub async fn short(
    connection: &Connection,
    what: &str,
    line: &str,
    limit: Duration,
) -> Result<Short, SshError> {
    let failed = |message: String| SshError::Command {
        target: connection.target.clone(),
        what: what.to_owned(),
        message,
    };
    let work = async {
        let mut channel = connection
            .handle
            .channel_open_session()
            .await
            .map_err(|e| failed(e.to_string()))?;
        channel
            .exec(true, line)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut exit_status = None;
        while let Some(message) = channel.wait().await {
            match message {
                ChannelMsg::Data { data } => {
                    runner::keep_capped(&mut out, &data, SHORT_OUTPUT);
                }
                ChannelMsg::ExtendedData { data, .. } => {
                    runner::keep_capped(&mut err, &data, SHORT_OUTPUT);
                }
                ChannelMsg::ExitStatus { exit_status: s } => exit_status = Some(s),
                ChannelMsg::Close => break,
                _ => {}
            }
        }
        out.extend_from_slice(&err);
        Ok(Short {
            stdout: String::from_utf8_lossy(&out).into_owned(),
            exit_status,
        })
    };
    tokio::time::timeout(limit, work)
        .await
        .map_err(|_| failed(format!("no answer within {} s", limit.as_secs())))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_line_quotes_every_word_and_limits_python_only() {
        let job = Job {
            language: Language::Python,
            files: Vec::new(),
            interpreter_args: vec!["-I", "_runner.py"],
            marker: String::new(),
        };

        let line = run_line("/tmp/it's", "/opt/py 3/python", &job, 30, 256);

        assert_eq!(
            line,
            "cd \"/tmp/it's\" && echo $$ > _pid && ulimit -d 262144 && exec timeout -s KILL 35 '/opt/py 3/python' -I _runner.py"
        );
        let js = Job {
            language: Language::Javascript,
            ..job
        };
        assert!(!run_line("/tmp/x", "node", &js, 30, 256).contains("ulimit"));
    }

    #[test]
    fn a_quoted_word_reaches_the_shell_as_it_was() {
        for word in [
            "plain",
            "it's",
            "a b",
            "$(touch x)",
            "`x`",
            "\\n\"q\"",
            "-rf",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(word)))
                .output()
                .unwrap();

            assert_eq!(String::from_utf8_lossy(&out.stdout), word);
        }
    }
}
