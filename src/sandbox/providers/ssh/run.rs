//! One run on the host: its private folder made and filled over SFTP, the interpreter started
//! with stdin closed, stdout and stderr read under the cap while they stream, and past the
//! deadline or the cap the run's whole session and process group killed; then its artifacts
//! read back and its folder removed, whatever happened.

use std::{
    future::Future,
    pin::Pin,
    time::{Duration, Instant},
};

use rand::Rng;
use russh::{ChannelMsg, Sig};
use serde_json::{json, Map};

use super::{
    command::{self, Short},
    connect::{self, Connection},
    error::SshError,
    files::Files,
    SshProvider,
};
use crate::{
    model::execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
    sandbox::{
        provider::timeout_secs,
        runner::{self, ArtifactLimits},
        Error,
    },
};

/// The sweep and the folder's removal.
const CLEAN_UP: Duration = Duration::from_secs(20);
/// After a kill, how long the channel may take to close.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// The kill of a run's session, under way beside the reading of its output.
type Killing<'a> = Pin<Box<dyn Future<Output = Result<Short, SshError>> + Send + 'a>>;

/// How the program's channel ended.
#[derive(Default)]
struct Streamed {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    over: bool,
    timed_out: bool,
    exit_status: Option<u32>,
    signal: Option<Sig>,
}

impl SshProvider {
    pub(super) async fn run(&self, request: &ExecRequest) -> Result<ExecutionResult, Error> {
        let started = Instant::now();
        let connection = connect::open(&self.config, self.key.as_ref(), &self.known).await?;
        let folder = format!(
            "{}/sandbox-console-{:016x}",
            self.config.work_dir.trim_end_matches('/'),
            rand::thread_rng().gen::<u64>()
        );
        let result = self.run_in(&connection, &folder, request, started).await;
        // Whatever happened: nothing of the run keeps running, and its folder goes.
        let swept = command::short(
            &connection,
            "clean-up",
            &command::sweep_line(&folder, true),
            CLEAN_UP,
        )
        .await;
        connection.close().await;
        let mut result = result?;
        if let Err(error) = swept {
            result
                .metadata
                .insert("cleanup_error".into(), json!(error.to_string()));
        }
        Ok(result)
    }

    async fn run_in(
        &self,
        connection: &Connection,
        folder: &str,
        request: &ExecRequest,
        started: Instant,
    ) -> Result<ExecutionResult, Error> {
        let config = &self.config;
        let job = runner::prepare(request);
        let files = Files::open(connection).await?;
        files.prepare(folder, &job.files).await?;
        let timeout = timeout_secs(request, config.timeout_secs);
        let interpreter = match request.language {
            Language::Python => &config.python_bin,
            Language::Javascript => &config.node_bin,
        };
        let line = command::run_line(folder, interpreter, &job, timeout, config.memory_mb);
        let ran_from = Instant::now();
        let streamed = self
            .stream(
                connection,
                folder,
                &line,
                Duration::from_secs(timeout.into()),
            )
            .await?;
        let elapsed = ran_from.elapsed();
        // The program is over: what it left behind in its session goes before anything is read.
        command::short(
            connection,
            "sweep",
            &command::sweep_line(folder, false),
            CLEAN_UP,
        )
        .await?;
        let stdout = String::from_utf8_lossy(&streamed.stdout).into_owned();
        let mut stderr = String::from_utf8_lossy(&streamed.stderr).into_owned();
        let signal = streamed.signal.as_ref().map(signal_number);
        let exit_code = streamed.exit_status.map(|s| s as i32);
        let limit = if streamed.timed_out {
            Some(ExecStatus::Timeout)
        } else {
            // `timeout`'s own kill (the console lost the channel's end) reads as exit 137.
            let signal = signal.or(matches!(exit_code, Some(137)).then_some(9));
            runner::classify(
                signal,
                exit_code.filter(|_| signal.is_none()),
                elapsed,
                Duration::from_secs(timeout.into()),
                streamed.over,
                &stderr,
            )
        };
        let outcome = runner::interpret(&job, exit_code.unwrap_or(-1), &stdout);
        let (status, stdout, result) = runner::settle(outcome, limit, &mut stderr);
        let mut metadata = Map::new();
        metadata.insert("host".into(), json!(connection.target));
        metadata.insert("remote_work_dir".into(), json!(folder));
        let limits = ArtifactLimits {
            max_count: config.max_artifacts as usize,
            max_bytes: config.max_artifact_bytes,
        };
        let mut artifacts = Vec::new();
        match files.artifacts(folder, limits).await {
            Ok((found, skipped)) => {
                artifacts = found;
                if !skipped.is_empty() {
                    metadata.insert("skipped_artifacts".into(), json!(skipped));
                }
            }
            Err(error) => {
                metadata.insert("artifact_error".into(), json!(error.to_string()));
            }
        }
        files.close().await;
        Ok(ExecutionResult {
            status,
            stdout,
            stderr,
            exit_code: exit_code.filter(|_| signal.is_none() && !streamed.timed_out),
            wall_time_ms: started.elapsed().as_millis() as u64,
            result,
            artifacts,
            queue_wait_ms: None,
            metadata,
            egress: None,
        })
    }

    /// Starts `line` and reads its channel to the end, each stream kept to the cap; past the
    /// deadline or the cap, kills the run's session and reads what is left for a moment.
    async fn stream(
        &self,
        connection: &Connection,
        folder: &str,
        line: &str,
        timeout: Duration,
    ) -> Result<Streamed, SshError> {
        let failed = |message: String| SshError::Command {
            target: connection.target.clone(),
            what: "run".into(),
            message,
        };
        let mut channel = connection
            .handle
            .channel_open_session()
            .await
            .map_err(|e| failed(e.to_string()))?;
        channel
            .exec(true, line)
            .await
            .map_err(|e| failed(e.to_string()))?;
        // Nothing comes on stdin: the program reads its input from a file.
        let _ = channel.eof().await;
        let cap = self.config.max_output_bytes as usize;
        let mut streamed = Streamed::default();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut killed_at: Option<tokio::time::Instant> = None;
        // The kill runs on another channel of the same connection while this one is still
        // read: a program that floods its output would otherwise fill the connection's
        // buffers, and the kill's answer would wait behind them (seen in CI: 20 s, then a
        // failed run).
        let mut kill: Option<Killing<'_>> = None;
        loop {
            let until = killed_at.map_or(deadline, |at| at + AFTER_KILL);
            let waited = tokio::select! {
                waited = tokio::time::timeout_at(until, channel.wait()) => waited,
                killed = async { kill.as_mut().expect("a kill").await }, if kill.is_some() => {
                    kill = None;
                    killed?;
                    continue;
                }
            };
            let message = match waited {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(_) if killed_at.is_some() => break,
                Err(_) => {
                    streamed.timed_out = true;
                    kill = Some(Box::pin(self.kill(connection, folder)));
                    killed_at = Some(tokio::time::Instant::now());
                    continue;
                }
            };
            match message {
                ChannelMsg::Data { data } => {
                    streamed.over |= runner::keep_capped(&mut streamed.stdout, &data, cap);
                }
                ChannelMsg::ExtendedData { data, .. } => {
                    streamed.over |= runner::keep_capped(&mut streamed.stderr, &data, cap);
                }
                ChannelMsg::ExitStatus { exit_status } => streamed.exit_status = Some(exit_status),
                ChannelMsg::ExitSignal { signal_name, .. } => streamed.signal = Some(signal_name),
                ChannelMsg::Close => break,
                _ => {}
            }
            if streamed.over && killed_at.is_none() {
                kill = Some(Box::pin(self.kill(connection, folder)));
                killed_at = Some(tokio::time::Instant::now());
            }
        }
        if let Some(kill) = kill {
            kill.await?;
        }
        let _ = channel.close().await;
        Ok(streamed)
    }

    async fn kill(&self, connection: &Connection, folder: &str) -> Result<Short, SshError> {
        command::short(
            connection,
            "kill",
            &command::sweep_line(folder, false),
            CLEAN_UP,
        )
        .await
    }
}

fn signal_number(signal: &Sig) -> i32 {
    match signal {
        Sig::ABRT => 6,
        Sig::ALRM => 14,
        Sig::FPE => 8,
        Sig::HUP => 1,
        Sig::ILL => 4,
        Sig::INT => 2,
        Sig::KILL => 9,
        Sig::PIPE => 13,
        Sig::QUIT => 3,
        Sig::SEGV => 11,
        Sig::TERM => 15,
        Sig::USR1 => 10,
        Sig::Custom(name) => match name.as_str() {
            "XCPU" => 24,
            "XFSZ" => 25,
            _ => 0,
        },
    }
}
