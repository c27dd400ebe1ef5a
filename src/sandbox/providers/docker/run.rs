//! One run in a leased container: its network connected, its job run (in the interpreter
//! started ahead when the container has one, in a fresh exec otherwise), what ended it told
//! and its artifacts collected.

use std::time::Duration;

use serde_json::{json, Map};

use super::{
    artifacts, drive, engine, inspect, pool, short, verdict, DockerProvider, Heartbeat,
    RUNSC_LOST_SANDBOX,
};
use crate::{
    model::execution::{ExecRequest, ExecutionResult},
    sandbox::{
        egress,
        runner::{self, ArtifactLimits},
        Error,
    },
};

impl DockerProvider {
    /// Runs one job in a leased container; tells whether the container may be reused.
    pub(super) async fn run(
        &self,
        lease: &mut pool::Lease,
        request: &ExecRequest,
        timeout: Duration,
        beat: &Heartbeat,
    ) -> Result<(ExecutionResult, bool), Error> {
        let config = &self.shared.config;
        let pool = self.pool(request.language);
        let docker = self.shared.engine.client().await?;
        let job = runner::prepare(request);
        let flag = format!("{}artifacts", job.marker);
        let max_output = config.max_output_bytes as usize;
        let mut session = self.connect(&docker, &lease.id).await;
        beat.beat();
        if session.is_err() {
            // An idle container that died behind our back has no namespace left either.
            pool.replace(&self.shared, lease).await?;
            beat.beat();
            session = self.connect(&docker, &lease.id).await;
            beat.beat();
        }
        let session = session?;
        let mut started_ahead = lease.ahead.take();
        if let Some(exec) = started_ahead.as_ref().map(|a| a.exec.id.clone()) {
            // An interpreter that has exited (killed in the container) cannot take the job.
            if !engine::exec_running(&docker, &exec).await {
                started_ahead = None;
            }
        }
        beat.beat();
        let ran_ahead = started_ahead.is_some();
        let first = match started_ahead {
            Some(ahead) => {
                let payload = runner::ahead::order(&job, &flag, timeout.as_secs() + 1);
                let bounds = drive::Bounds {
                    timeout,
                    max_output,
                };
                drive::drive(&docker, &lease.id, ahead.exec, payload, bounds, beat).await
            }
            None => {
                engine::run_job(&docker, &lease.id, &job, &flag, timeout, max_output, beat).await
            }
        };
        let raw = match first {
            Err(error) if error.container_gone() && session.is_none() => {
                // An idle container died behind our back: replace it once and run there.
                tracing::info!(
                    container = short(&lease.id),
                    "a pooled container was gone; replacing it"
                );
                pool.replace(&self.shared, lease).await?;
                beat.beat();
                engine::run_job(&docker, &lease.id, &job, &flag, timeout, max_output, beat).await?
            }
            other => other?,
        };
        // The run is over: its network closes with it, and says what it did.
        let report = session.map(|s| s.finish());
        let mut stderr = raw.stderr;
        let wants_artifacts = match stderr.find(&format!("\n{flag}\n")) {
            Some(at) => {
                stderr.replace_range(at..at + flag.len() + 2, "");
                true
            }
            None => false,
        };
        let code = raw.exit_code.unwrap_or(-1);
        // A run that failed may have taken its container down with it (gVisor dies whole on
        // an OOM kill); one inspect tells, only for runs that did not succeed.
        let failed = raw.container_died || (raw.stopped.is_none() && raw.exit_code != Some(0));
        // runsc says so when it lost its sandbox; the daemon may still call the container
        // running for a moment, so its state is read again until it agrees.
        let sandbox_lost = stderr.contains(RUNSC_LOST_SANDBOX);
        let state = || async {
            let state = inspect::state(&docker, &lease.id).await;
            beat.beat();
            state.unwrap_or((false, false))
        };
        let (mut running, mut oom_killed) = match failed {
            true => state().await,
            false => (raw.stopped.is_none(), false),
        };
        for _ in 0..30 {
            if !(sandbox_lost && running) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            (running, oom_killed) = state().await;
        }
        let died = raw.container_died || sandbox_lost || (failed && !running);
        let killed_inside = died || (raw.stopped.is_none() && code == 137);
        let oom = killed_inside
            && (oom_killed || inspect::oom_since(&docker, &lease.id, raw.started_at).await);
        beat.beat();
        let outcome = runner::interpret(&job, code, &raw.stdout);
        let limit = verdict::limit(
            &verdict::Seen {
                stopped: raw.stopped,
                died,
                oom,
                exit_code: raw.exit_code,
                elapsed: raw.elapsed,
                timeout,
            },
            &mut stderr,
        );
        let (mut status, stdout, result) = runner::settle(outcome, limit, &mut stderr);
        if let Some(report) = &report {
            egress::explain(report, &mut status, &mut stderr);
        }
        let mut metadata = Map::new();
        metadata.insert("container".into(), json!(short(&lease.id)));
        metadata.insert("cold_start".into(), json!(lease.cold));
        metadata.insert("runtime".into(), json!(config.runtime));
        metadata.insert("started_ahead".into(), json!(ran_ahead));
        if ran_ahead {
            metadata.insert("preloaded".into(), json!(self.shared.preload));
        }
        let mut artifacts = Vec::new();
        if wants_artifacts && running && raw.stopped.is_none() {
            let limits = ArtifactLimits {
                max_count: config.max_artifacts as usize,
                max_bytes: config.max_artifact_bytes,
            };
            let collected =
                artifacts::collect_artifacts(&docker, &lease.id, request.language, limits).await;
            beat.beat();
            match collected {
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
        }
        // A container that was OOM-killed or SIGKILLed inside is not trusted with another run.
        let reusable = running && !killed_inside && raw.stopped.is_none();
        Ok((
            ExecutionResult {
                status,
                result,
                stdout,
                stderr,
                exit_code: raw.exit_code,
                wall_time_ms: raw.elapsed.as_millis() as u64,
                artifacts,
                queue_wait_ms: Some(lease.waited.as_millis() as u64),
                metadata,
                egress: report,
            },
            reusable,
        ))
    }
}
