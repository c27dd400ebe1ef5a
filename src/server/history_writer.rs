//! Writes history rows so that none is lost. A row is written at once while nothing waits;
//! when that fails (another process holds the database's write lock, the disk is full, the
//! database is down or frozen), and from then on until the backlog is gone, rows go to the
//! durable spool in the data directory, and one background task writes them back in batches
//! at the database's own speed. What is still spooled when the console stops is written at
//! its next start. A row is dropped only when neither the database nor the spool takes it
//! (and then counted in `history_rows_dropped`).

use std::{
    collections::VecDeque,
    path::PathBuf,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use sqlx::AnyPool;
use tokio::sync::Notify;

use crate::server::{
    db::{
        execution::NewExecution,
        history_row::{record_rows, HistoryRow},
    },
    history_spool::Spool,
    metrics::Metrics,
};

/// Rows kept in memory when the spool cannot take them either (a full disk); past it a row
/// is dropped, and counted.
const MEMORY: usize = 4096;
/// Rows written per transaction while a backlog drains.
const BATCH: usize = 256;
/// The longest one write may take before the row goes to the spool instead.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

#[derive(Clone, Default)]
struct Options {
    metrics: Option<Arc<Metrics>>,
    /// The console replica written beside each row.
    replica: Arc<str>,
    spool: Option<PathBuf>,
}

struct Shared {
    pool: AnyPool,
    options: Options,
    spool: Option<Spool>,
    /// Rows neither written nor spooled, oldest first.
    memory: Mutex<VecDeque<HistoryRow>>,
    /// Rows not yet written: spooled and in memory.
    pending: AtomicUsize,
    wake: Notify,
}

pub struct HistoryWriter {
    shared: Arc<Shared>,
    worker: tokio::task::JoinHandle<()>,
}

impl Drop for HistoryWriter {
    fn drop(&mut self) {
        self.worker.abort();
    }
}

impl HistoryWriter {
    /// Starts the writer (needs a Tokio runtime), with no spool: for tools and tests.
    pub fn new(pool: AnyPool) -> Self {
        Self::start(pool, Options::default())
    }

    /// The same writer, counting in `metrics`.
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Self {
        let mut options = self.shared.options.clone();
        options.metrics = Some(metrics);
        Self::start(self.shared.pool.clone(), options)
    }

    /// The same writer, noting `replica` as the console that ran each run.
    pub fn with_replica(self, replica: &str) -> Self {
        let mut options = self.shared.options.clone();
        options.replica = Arc::from(replica);
        Self::start(self.shared.pool.clone(), options)
    }

    /// The same writer, keeping rows the database refuses in a spool in `dir` (and writing
    /// what an earlier run of the console left there).
    pub fn with_spool(self, dir: PathBuf) -> Self {
        let mut options = self.shared.options.clone();
        options.spool = Some(dir);
        Self::start(self.shared.pool.clone(), options)
    }

    fn start(pool: AnyPool, options: Options) -> Self {
        let spool = options.spool.as_deref().and_then(|dir| match Spool::open(dir) {
            Ok(spool) => Some(spool),
            Err(error) => {
                tracing::error!(%error, dir = %dir.display(), "cannot open the history spool; rows the database refuses are kept in memory only");
                None
            }
        });
        let left = spool.as_ref().map_or(0, |spool| {
            spool.adopt();
            spool.count()
        });
        if left > 0 {
            tracing::warn!(
                rows = left,
                "history rows a stopped console spooled are being written now"
            );
        }
        let shared = Arc::new(Shared {
            pool,
            options,
            spool,
            memory: Mutex::default(),
            pending: AtomicUsize::new(left),
            wake: Notify::new(),
        });
        shared.show_pending();
        let worker = tokio::spawn(drain(shared.clone()));
        HistoryWriter { shared, worker }
    }

    /// Writes the run's row now, or keeps it (spooled) for the background writer.
    pub async fn record(&self, run: &NewExecution<'_>) {
        let row = HistoryRow::of(run);
        let shared = &self.shared;
        // Behind rows already waiting, a new row waits too: the backlog drains in batches.
        if shared.pending.load(Ordering::SeqCst) == 0 {
            let write = record_rows(
                &shared.pool,
                std::slice::from_ref(&row),
                &shared.options.replica,
            );
            match tokio::time::timeout(WRITE_DEADLINE, write).await {
                Ok(Ok(())) => return,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "could not write a history row; it waits in the spool")
                }
                Err(_) => tracing::warn!(
                    "a history row was not written within 5 s; it waits in the spool"
                ),
            }
        }
        if let Some(metrics) = &shared.options.metrics {
            metrics.history_retried();
        }
        shared.keep(row);
        shared.wake.notify_one();
    }

    /// Rows not yet written.
    pub fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::SeqCst)
    }

    /// Waits (at most `wait`) for the backlog to be written. What is left stays in the spool
    /// for the next start; only rows the spool could not take are lost, and counted.
    pub async fn flush(&self, wait: Duration) {
        let started = Instant::now();
        while self.pending() > 0 && started.elapsed() < wait {
            self.shared.wake.notify_one();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The writer stops here (the console is stopping), so that what is still in memory
        // can be moved to the spool without racing it.
        self.worker.abort();
        while !self.worker.is_finished() {
            tokio::task::yield_now().await;
        }
        let shared = &self.shared;
        let unspooled: Vec<HistoryRow> = shared
            .memory
            .lock()
            .expect("memory lock")
            .drain(..)
            .collect();
        let mut lost = 0;
        for row in unspooled {
            let kept = shared
                .spool
                .as_ref()
                .is_some_and(|s| s.append(&row).is_ok());
            if !kept {
                lost += 1;
                shared.written(1);
                if let Some(metrics) = &shared.options.metrics {
                    metrics.history_dropped();
                }
            }
        }
        if lost > 0 {
            tracing::error!(
                rows = lost,
                "history rows could be neither written nor spooled before the console stopped; they are lost"
            );
        }
        let left = self.pending();
        if left > 0 {
            tracing::warn!(
                rows = left,
                spool = %shared.spool.as_ref().map_or_else(String::new, |s| s.dir().display().to_string()),
                "history rows not yet written are kept in the spool and written at the next start"
            );
        }
        // A guest (a command beside a running console) hands its rows to the console.
        if let Some(spool) = &shared.spool {
            spool.finish();
        }
    }
}

impl Shared {
    /// Keeps a row for the background writer: in the spool, or in memory when the spool
    /// cannot take it; dropped (and counted) only when memory is full too.
    fn keep(&self, row: HistoryRow) {
        // Counted before it can be found: the writer may take it the moment it is kept.
        self.pending.fetch_add(1, Ordering::SeqCst);
        let spooled = match &self.spool {
            Some(spool) => match spool.append(&row) {
                Ok(()) => true,
                Err(error) => {
                    tracing::warn!(%error, "the history spool refused a row; it waits in memory");
                    false
                }
            },
            None => false,
        };
        if !spooled {
            let mut memory = self.memory.lock().expect("memory lock");
            if memory.len() >= MEMORY {
                drop(memory);
                tracing::error!(
                    caller = %row.caller,
                    status = %row.status,
                    "neither the database, the spool nor memory ({MEMORY} rows) takes a history row; it is lost"
                );
                if let Some(metrics) = &self.options.metrics {
                    metrics.history_dropped();
                }
                self.written(1);
                return;
            }
            memory.push_back(row);
        }
        self.show_pending();
    }

    fn written(&self, rows: usize) {
        let _ = self
            .pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |p| {
                Some(p.saturating_sub(rows))
            });
        self.show_pending();
    }

    fn show_pending(&self) {
        if let Some(metrics) = &self.options.metrics {
            metrics.history_pending(self.pending.load(Ordering::SeqCst));
        }
    }

    /// Writes one batch of what waits: rows in memory first (they are the oldest the spool
    /// could not take), then the oldest spool segment. `Ok(false)` when nothing waits.
    async fn write_some(&self) -> Result<bool, sqlx::Error> {
        let batch: Vec<HistoryRow> = {
            let memory = self.memory.lock().expect("memory lock");
            memory.iter().take(BATCH).cloned().collect()
        };
        if !batch.is_empty() {
            self.write(&batch).await?;
            self.memory
                .lock()
                .expect("memory lock")
                .drain(..batch.len());
            self.written(batch.len());
            return Ok(true);
        }
        let Some(segment) = self.spool.as_ref().and_then(Spool::oldest) else {
            return Ok(false);
        };
        for rows in segment.rows.chunks(BATCH) {
            self.write(rows).await?;
        }
        let count = segment.rows.len();
        if let Err(error) = self
            .spool
            .as_ref()
            .expect("a segment came from it")
            .done(segment)
        {
            // Written all the same: the keys make a second write a no-op.
            tracing::warn!(%error, "cannot delete a written history spool segment");
        }
        self.written(count);
        Ok(true)
    }

    async fn write(&self, rows: &[HistoryRow]) -> Result<(), sqlx::Error> {
        match tokio::time::timeout(
            WRITE_DEADLINE * 2,
            record_rows(&self.pool, rows, &self.options.replica),
        )
        .await
        {
            Ok(written) => written,
            Err(_) => Err(sqlx::Error::PoolTimedOut),
        }
    }
}

/// How often an idle writer looks for rows a command beside the console spooled.
const ADOPT_EVERY: Duration = Duration::from_secs(10);

/// The background writer: drains whatever waits, batch after batch, as fast as the database
/// takes it; backs off while it refuses.
async fn drain(shared: Arc<Shared>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if shared.pending.load(Ordering::SeqCst) == 0 {
            let _ = tokio::time::timeout(ADOPT_EVERY, shared.wake.notified()).await;
            let adopted = shared.spool.as_ref().map_or(0, Spool::adopt);
            if adopted > 0 {
                shared.pending.fetch_add(adopted, Ordering::SeqCst);
                shared.show_pending();
            }
            continue;
        }
        match shared.write_some().await {
            Ok(true) => backoff = FIRST_BACKOFF,
            Ok(false) => {
                // Counted but not found here: a guest's own rows (the console that owns the
                // spool drains them; once it is gone this writer owns it), or a segment
                // deleted by hand. Wait for what comes next.
                let _ = tokio::time::timeout(ADOPT_EVERY, shared.wake.notified()).await;
                if let Some(spool) = &shared.spool {
                    if let Some(own) = spool.try_own() {
                        let adopted = spool.adopt();
                        tracing::info!(adopted, "this process now owns the history spool");
                        // Its own rows were counted already.
                        shared
                            .pending
                            .fetch_add(adopted.saturating_sub(own), Ordering::SeqCst);
                        shared.show_pending();
                    }
                }
            }
            Err(error) => {
                tracing::debug!(%error, "the history backlog still cannot be written");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}
