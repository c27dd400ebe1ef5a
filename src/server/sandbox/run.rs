//! Runs: each in a task of its own that outlives the request that asked for it, under one
//! outer deadline, handed over to the provider that replaced a retired one, and recorded
//! (history row and metrics) in that task whatever the caller does.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::SandboxService;
use crate::{
    model::execution::{ExecRequest, ExecutionResult, Run},
    sandbox::{Error as SandboxError, SandboxProvider},
    server::{
        db::execution::{Caller, Content, NewExecution},
        history,
    },
};

/// A number for each run this process starts, so one run can be followed through the log
/// (its span carries it into the provider's own lines).
fn next_run_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs in flight: each in a task of its own that outlives the request that asked for it,
/// tracked so a shutdown can wait for them, and cancelled (their sandboxes killed by the
/// providers' drop guards) when the shutdown grace is over.
#[derive(Default)]
pub(super) struct Runs {
    tracker: TaskTracker,
    cancel: CancellationToken,
}

impl SandboxService {
    /// Runs code through the active provider, and records the run for `caller`. The request
    /// must meet [`ExecRequest::check`], whoever sends it. The run happens in a task of its
    /// own: a caller that stops waiting (a client that hung up) changes nothing about its
    /// limits, its history row or its metrics.
    #[tracing::instrument(name = "run", skip_all, fields(
        id = next_run_id(),
        caller = %caller.name,
        source = %caller.source,
        language = %request.language,
        provider = tracing::field::Empty,
    ))]
    pub async fn execute(
        self: &Arc<Self>,
        request: &ExecRequest,
        caller: &Caller,
    ) -> Result<Run, SandboxError> {
        self.execute_in(request, caller, None).await
    }

    /// [`SandboxService::execute`] in the named environment instead of the one the active
    /// provider's settings give: refused when the name is unknown or has no ready build.
    pub async fn execute_in(
        self: &Arc<Self>,
        request: &ExecRequest,
        caller: &Caller,
        environment: Option<&str>,
    ) -> Result<Run, SandboxError> {
        request.check()?;
        if self.runs.tracker.is_closed() {
            return Err(SandboxError::ShuttingDown);
        }
        let (service, request, caller) = (self.clone(), request.clone(), caller.clone());
        let environment = environment.map(str::to_owned);
        let task = self
            .runs
            .tracker
            .spawn(tracing::Instrument::in_current_span(async move {
                service
                    .run_and_record(&request, &caller, environment.as_deref())
                    .await
            }));
        task.await.unwrap_or_else(|crashed| {
            Err(SandboxError::Backend(format!("the run crashed: {crashed}")))
        })
    }

    /// Runs code on `kind` built from its saved settings (its defaults when never saved),
    /// for a trial of a provider that is not the active one; the active one's runs are
    /// [`SandboxService::execute`]'s. The provider is built for this run alone, not warmed,
    /// and shut down after it; the run is recorded under `kind`.
    pub async fn execute_saved(
        self: &Arc<Self>,
        kind: &str,
        request: &ExecRequest,
        caller: &Caller,
    ) -> Result<Run, SandboxError> {
        if self.active().is_some_and(|(active, _)| active == kind) {
            return self.execute(request, caller).await;
        }
        request.check()?;
        if self.runs.tracker.is_closed() {
            return Err(SandboxError::ShuttingDown);
        }
        let schema = (self.registry.get(kind)?.schema)();
        let stored = self.stored_values(&self.pool, kind).await.map_err(|e| {
            SandboxError::Backend(format!("the saved settings cannot be read: {e}"))
        })?;
        let values = if stored.is_empty() {
            schema
                .normalize(&serde_json::Map::new())
                .unwrap_or_default()
        } else {
            self.open_secrets(kind, stored).map_err(|e| {
                SandboxError::Backend(format!("a saved secret cannot be opened: {e}"))
            })?
        };
        let provider = self.registry.build(kind, &values)?;
        if !provider.languages().contains(&request.language) {
            provider.shutdown().await;
            return Err(SandboxError::Unsupported(request.language));
        }
        let (service, request, caller, kind) = (
            self.clone(),
            request.clone(),
            caller.clone(),
            kind.to_owned(),
        );
        let task = self.runs.tracker.spawn(async move {
            let deadline = provider.run_deadline(&request);
            let outcome = service
                .attempt(&kind, provider.as_ref(), &request, deadline, deadline)
                .await;
            provider.shutdown().await;
            service.record(&caller, &kind, &request, &outcome).await;
            outcome.map(|result| Run {
                provider: kind,
                result,
            })
        });
        task.await.unwrap_or_else(|crashed| {
            Err(SandboxError::Backend(format!("the run crashed: {crashed}")))
        })
    }

    async fn run_and_record(
        &self,
        request: &ExecRequest,
        caller: &Caller,
        environment: Option<&str>,
    ) -> Result<Run, SandboxError> {
        if let Err(error) = self.refresh().await {
            tracing::warn!(%error, "could not check the stored sandbox settings; running with the loaded ones");
        }
        let started = std::time::Instant::now();
        let mut deadline = None;
        let (kind, outcome) = loop {
            let (kind, provider) = self.active().ok_or(SandboxError::NoActiveProvider)?;
            let provider = match environment {
                Some(name) => self.in_environment(&kind, provider, name).await?,
                None => provider,
            };
            tracing::Span::current().record("provider", kind.as_str());
            if !provider.languages().contains(&request.language) {
                return Err(SandboxError::Unsupported(request.language));
            }
            // One outer deadline for the whole run, handovers included.
            let deadline = *deadline.get_or_insert_with(|| provider.run_deadline(request));
            let left = deadline.saturating_sub(started.elapsed());
            let outcome = self
                .attempt(&kind, provider.as_ref(), request, deadline, left)
                .await;
            // Waited for a sandbox of a provider that a save replaced: nothing ran, so the
            // run goes to the new one (as often as saves come, within the deadline).
            if matches!(outcome, Err(SandboxError::Retired)) && started.elapsed() < deadline {
                tokio::task::yield_now().await;
                if let Err(error) = self.refresh().await {
                    tracing::warn!(%error, "could not check the stored sandbox settings");
                }
                continue;
            }
            break (kind, outcome);
        };
        self.record(caller, &kind, request, &outcome).await;
        outcome.map(|result| Run {
            provider: kind,
            result,
        })
    }

    /// One try of `request` on `provider` with `left` of the run's outer `deadline` to go:
    /// cancelled when the console stops, abandoned past the deadline. Either drops the run's
    /// future, and the providers' drop guards then kill and remove its sandbox.
    async fn attempt(
        &self,
        kind: &str,
        provider: &dyn SandboxProvider,
        request: &ExecRequest,
        deadline: Duration,
        left: Duration,
    ) -> Result<ExecutionResult, SandboxError> {
        let run = tokio::time::timeout(left, run_once(provider, request));
        tokio::select! {
            biased;
            () = self.runs.cancel.cancelled() => Err(SandboxError::ShuttingDown),
            finished = run => finished.unwrap_or_else(|_| {
                tracing::warn!(%kind, ?deadline, "a run outlived its outer deadline; abandoned");
                Err(SandboxError::Timeout(deadline))
            }),
        }
    }

    /// Stops taking runs and gives those in flight up to `grace` to finish; then cancels the
    /// rest (their sandboxes are killed and removed, their history rows say so). Returns how
    /// many were cancelled. Call [`Self::shutdown`] after it.
    pub async fn finish_runs(&self, grace: Duration) -> usize {
        self.runs.tracker.close();
        if tokio::time::timeout(grace, self.runs.tracker.wait())
            .await
            .is_ok()
        {
            return 0;
        }
        let left = self.runs.tracker.len();
        tracing::warn!(
            left,
            ?grace,
            "runs still in flight after the shutdown grace; cancelling them"
        );
        self.runs.cancel.cancel();
        if tokio::time::timeout(Duration::from_secs(10), self.runs.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("cancelled runs did not end within 10 s");
        }
        left
    }

    /// Writes the history row of one run. A failed write is retried in the background (see
    /// `HistoryWriter`), never fatal: the caller still gets its result.
    pub(super) async fn record(
        &self,
        caller: &Caller,
        kind: &str,
        request: &ExecRequest,
        outcome: &Result<ExecutionResult, SandboxError>,
    ) {
        self.record_run(caller, kind, request, outcome, None).await
    }

    /// Records a run (its history row and metrics), as a cell or command of `session` when
    /// it is one.
    pub async fn record_run(
        &self,
        caller: &Caller,
        kind: &str,
        request: &ExecRequest,
        outcome: &Result<ExecutionResult, SandboxError>,
        session: Option<&str>,
    ) {
        let input_bytes =
            request.code.len() + serde_json::to_string(&request.arguments).map_or(0, |a| a.len());
        let (status, exit_code, duration_ms, output_bytes, error) = match outcome {
            Ok(result) => (
                result.status.id(),
                result.exit_code,
                result.wall_time_ms,
                result.stdout.len()
                    + result.stderr.len()
                    + result
                        .artifacts
                        .iter()
                        .map(|a| a.size as usize)
                        .sum::<usize>(),
                None,
            ),
            Err(error) => ("error", None, 0, 0, Some(error.to_string())),
        };
        let keep = match history::settings(&self.pool).await {
            Ok(settings) if settings.keep_content => Some(settings.max_content_bytes as usize),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(%error, "could not read the history settings; keeping no content");
                None
            }
        };
        let (stdout, stderr) = match outcome {
            Ok(result) => (result.stdout.as_str(), result.stderr.as_str()),
            Err(_) => ("", error.as_deref().unwrap_or_default()),
        };
        let content = keep.map(|max| Content {
            code: history::cut(&request.code, max),
            stdout: history::cut(stdout, max),
            stderr: history::cut(stderr, max),
        });
        let egress = outcome
            .as_ref()
            .ok()
            .and_then(|r| r.egress.as_ref())
            .and_then(|report| serde_json::to_string(report).ok());
        let row = NewExecution {
            caller,
            provider: kind,
            language: request.language.id(),
            status,
            exit_code,
            duration_ms,
            code: &request.code,
            input_bytes,
            output_bytes,
            error: error.as_deref(),
            content,
            egress: egress.as_deref(),
            session,
        };
        if let Some(metrics) = &self.metrics {
            let ran = outcome.as_ref().ok();
            metrics.execution(
                kind,
                status,
                caller.source.as_str(),
                ran.map(|r| r.wall_time_ms),
                ran.and_then(|r| r.queue_wait_ms),
            );
            if let Some(report) = ran.and_then(|r| r.egress.as_ref()) {
                metrics.egress(kind, report);
            }
        }
        self.history.record(&row).await;
    }
}

/// One run on one provider: an instance made, used and destroyed.
pub(super) async fn run_once(
    provider: &dyn SandboxProvider,
    request: &ExecRequest,
) -> Result<ExecutionResult, SandboxError> {
    let (result, destroyed) = crate::sandbox::run_once(provider, request).await;
    if let Err(error) = destroyed {
        tracing::warn!(%error, "could not destroy a sandbox instance");
    }
    result
}
