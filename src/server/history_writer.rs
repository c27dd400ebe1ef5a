//! Writes history rows so that none is lost silently. A row is written at once; when that
//! fails (another process holds the database's write lock past the busy timeout, the disk is
//! full) it goes to a bounded queue that one background task retries in order, with backoff,
//! for up to [`GIVE_UP_AFTER`]. Rows are dropped only when the queue is full or that time is
//! up, and each drop is logged and counted (`history_rows_dropped`).

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use sqlx::AnyPool;
use tokio::sync::mpsc;

use crate::server::{
    db::execution::{self, Caller, Content, NewExecution},
    metrics::Metrics,
};

/// Rows waiting for another try at most (about 1 MiB each at worst with content kept; far
/// less without).
const QUEUE: usize = 4096;
/// How long one row is retried before it is given up on.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// A history row that owns its text, for the queue.
#[derive(Debug)]
struct Pending {
    caller: Caller,
    provider: String,
    language: String,
    status: String,
    exit_code: Option<i32>,
    duration_ms: u64,
    code: String,
    input_bytes: usize,
    output_bytes: usize,
    error: Option<String>,
    content: Option<(String, String, String)>,
    egress: Option<String>,
}

impl Pending {
    fn of(row: &NewExecution<'_>) -> Self {
        Pending {
            caller: row.caller.clone(),
            provider: row.provider.to_owned(),
            language: row.language.to_owned(),
            status: row.status.to_owned(),
            exit_code: row.exit_code,
            duration_ms: row.duration_ms,
            code: row.code.to_owned(),
            input_bytes: row.input_bytes,
            output_bytes: row.output_bytes,
            error: row.error.map(str::to_owned),
            content: row
                .content
                .as_ref()
                .map(|c| (c.code.to_owned(), c.stdout.to_owned(), c.stderr.to_owned())),
            egress: row.egress.map(str::to_owned),
        }
    }

    fn row(&self) -> NewExecution<'_> {
        NewExecution {
            caller: &self.caller,
            provider: &self.provider,
            language: &self.language,
            status: &self.status,
            exit_code: self.exit_code,
            duration_ms: self.duration_ms,
            code: &self.code,
            input_bytes: self.input_bytes,
            output_bytes: self.output_bytes,
            error: self.error.as_deref(),
            content: self.content.as_ref().map(|(code, stdout, stderr)| Content {
                code,
                stdout,
                stderr,
            }),
            egress: self.egress.as_deref(),
        }
    }
}

pub struct HistoryWriter {
    pool: AnyPool,
    queue: mpsc::Sender<Pending>,
    pending: Arc<AtomicUsize>,
    metrics: Option<Arc<Metrics>>,
    /// The console replica written beside each row.
    replica: Arc<str>,
    worker: tokio::task::JoinHandle<()>,
}

impl Drop for HistoryWriter {
    fn drop(&mut self) {
        self.worker.abort();
    }
}

impl HistoryWriter {
    /// Starts the retry task (needs a Tokio runtime).
    pub fn new(pool: AnyPool) -> Self {
        Self::start(pool, None, Arc::from(""))
    }

    /// The same writer, counting retries and drops in `metrics`.
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Self {
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        drop(self);
        Self::start(pool, Some(metrics), replica)
    }

    /// The same writer, noting `replica` as the console that ran each run.
    pub fn with_replica(self, replica: &str) -> Self {
        let (pool, metrics) = (self.pool.clone(), self.metrics.clone());
        drop(self);
        Self::start(pool, metrics, Arc::from(replica))
    }

    fn start(pool: AnyPool, metrics: Option<Arc<Metrics>>, replica: Arc<str>) -> Self {
        let (queue, rx) = mpsc::channel(QUEUE);
        let pending = Arc::new(AtomicUsize::new(0));
        let worker = tokio::spawn(retry(
            pool.clone(),
            rx,
            pending.clone(),
            metrics.clone(),
            replica.clone(),
        ));
        HistoryWriter {
            pool,
            queue,
            pending,
            metrics,
            replica,
            worker,
        }
    }

    /// Writes `row` now, or queues it for another try.
    pub async fn record(&self, row: &NewExecution<'_>) {
        // Behind rows already queued, a new row waits its turn: history keeps its order.
        if self.pending.load(Ordering::SeqCst) == 0 {
            match execution::record(&self.pool, row, &self.replica).await {
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(%error, "could not write a history row; queued for another try")
                }
            }
        }
        if let Some(metrics) = &self.metrics {
            metrics.history_retried();
        }
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.queue.try_send(Pending::of(row)).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            tracing::error!(
                caller = %row.caller.name,
                status = row.status,
                "the history retry queue is full ({QUEUE} rows); a run's history row is lost"
            );
            if let Some(metrics) = &self.metrics {
                metrics.history_dropped();
            }
        }
        self.show_pending();
    }

    /// Rows waiting for another try.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Waits (at most `wait`) for the queue to empty; says what is left in the log.
    pub async fn flush(&self, wait: Duration) {
        let started = Instant::now();
        while self.pending() > 0 && started.elapsed() < wait {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if self.pending() > 0 {
            tracing::error!(
                rows = self.pending(),
                "history rows could not be written before the console stopped; they are lost"
            );
        }
    }

    fn show_pending(&self) {
        if let Some(metrics) = &self.metrics {
            metrics.history_pending(self.pending());
        }
    }
}

async fn retry(
    pool: AnyPool,
    mut rx: mpsc::Receiver<Pending>,
    pending: Arc<AtomicUsize>,
    metrics: Option<Arc<Metrics>>,
    replica: Arc<str>,
) {
    while let Some(row) = rx.recv().await {
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        loop {
            tokio::time::sleep(backoff).await;
            match execution::record(&pool, &row.row(), &replica).await {
                Ok(_) => break,
                Err(error) if started.elapsed() >= GIVE_UP_AFTER => {
                    tracing::error!(%error, caller = %row.caller.name, status = %row.status,
                        "gave up writing a history row after {GIVE_UP_AFTER:?}; it is lost");
                    if let Some(metrics) = &metrics {
                        metrics.history_dropped();
                    }
                    break;
                }
                Err(error) => {
                    tracing::debug!(%error, "a queued history row still cannot be written");
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        let left = pending.fetch_sub(1, Ordering::SeqCst) - 1;
        if let Some(metrics) = &metrics {
            metrics.history_pending(left);
        }
    }
}
