//! Sandbox sessions held for API keys: opened on the active provider, capped per key and in
//! all, closed when idle, at the end of their lifetime, on request and at shutdown. Each cell
//! and command is a history row tied to its session. A key sees only its own sessions.

mod record;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::{Map, Value};

use crate::server::session_limits::SessionLimits;
use crate::{
    model::execution::{Language, MAX_TIMEOUT_SECS},
    sandbox::{
        session::{CellOutcome, CommandOutcome, CommandSpec, EventSink, Session, SessionSpec},
        Error as SandboxError,
    },
    server::{db::execution::Caller, sandbox::SandboxService},
};

/// Who holds a session: an API key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub key_id: i64,
    pub key_name: String,
}

/// One open session and what the console knows of it.
#[derive(Debug)]
pub struct Held {
    pub id: String,
    pub owner: Owner,
    pub provider: String,
    pub language: Language,
    /// UTC, as the history writes times.
    pub created_at: String,
    /// The code contexts made besides `default` (E2B's `/contexts`): `{id, language, cwd}`.
    pub contexts: Mutex<Vec<Value>>,
    /// The token E2B's clients send as `X-Access-Token` on sandbox calls.
    pub access_token: String,
    /// What the caller attached at creation (E2B's `metadata`).
    pub metadata: Map<String, Value>,
    pub session: Arc<dyn Session>,
    created: Instant,
    last_used: Mutex<Instant>,
    ends_at: Mutex<Instant>,
    cells: AtomicU64,
    in_flight: AtomicUsize,
}

impl Held {
    pub fn cells(&self) -> u64 {
        self.cells.load(Ordering::SeqCst)
    }

    pub fn age(&self) -> Duration {
        self.created.elapsed()
    }

    pub fn idle(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// How long until its lifetime ends.
    pub fn remaining(&self) -> Duration {
        self.ends_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .saturating_duration_since(Instant::now())
    }

    /// Marks the session in use until the guard is dropped (the idle reaper leaves it alone).
    pub fn using(self: &Arc<Self>) -> InUse {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.touch();
        InUse(self.clone())
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }
}

/// A request in progress on a session.
pub struct InUse(Arc<Held>);

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why a session was not opened or not found.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Full(String),
    #[error("no such session")]
    NotFound,
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// The sessions of this console.
pub struct SandboxSessions {
    sandbox: Arc<SandboxService>,
    limits: SessionLimits,
    live: Mutex<Live>,
    closing: AtomicBool,
}

/// The open sessions, and the keys of those still starting (they count against the caps).
#[derive(Default)]
struct Live {
    held: HashMap<String, Arc<Held>>,
    starting: Vec<i64>,
}

impl std::fmt::Debug for SandboxSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxSessions")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// An unguessable id (128 random bits), for sessions and their access tokens.
fn random_id(prefix: &str) -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

impl SandboxSessions {
    pub fn new(sandbox: Arc<SandboxService>, limits: SessionLimits) -> Arc<Self> {
        Arc::new(SandboxSessions {
            sandbox,
            limits,
            live: Mutex::default(),
            closing: AtomicBool::new(false),
        })
    }

    pub fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a session for `owner` on the active provider. `lifetime` is capped by the
    /// console's; past the caps the answer is [`SessionError::Full`].
    pub async fn open(
        &self,
        owner: &Owner,
        language: Language,
        lifetime: Option<Duration>,
        metadata: Map<String, Value>,
    ) -> Result<Arc<Held>, SessionError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(SandboxError::ShuttingDown.into());
        }
        let most = Duration::from_secs(self.limits.lifetime_secs.max(1));
        let lifetime = lifetime.unwrap_or(most).clamp(Duration::from_secs(1), most);
        // A place is taken before the sandbox starts, so racing opens cannot pass the caps.
        {
            let mut live = self.live();
            let total = live.held.len() + live.starting.len();
            let mine = live
                .held
                .values()
                .filter(|h| h.owner.key_id == owner.key_id)
                .count()
                + live.starting.iter().filter(|k| **k == owner.key_id).count();
            if total >= self.limits.max_total {
                return Err(SessionError::Full(format!(
                    "{total} sessions are open, the most this console holds; close one or retry later"
                )));
            }
            if mine >= self.limits.max_per_key {
                return Err(SessionError::Full(format!(
                    "this key has {mine} sessions open, the most a key may hold; close one first"
                )));
            }
            live.starting.push(owner.key_id);
        }
        let opened = self.start(owner, language, lifetime, metadata).await;
        let held = {
            let mut live = self.live();
            if let Some(at) = live.starting.iter().position(|k| *k == owner.key_id) {
                live.starting.swap_remove(at);
            }
            let held = opened?;
            if !self.closing.load(Ordering::SeqCst) {
                live.held.insert(held.id.clone(), held.clone());
                return Ok(held);
            }
            held
        };
        held.session.close().await;
        Err(SandboxError::ShuttingDown.into())
    }

    async fn start(
        &self,
        owner: &Owner,
        language: Language,
        lifetime: Duration,
        metadata: Map<String, Value>,
    ) -> Result<Arc<Held>, SessionError> {
        let (kind, provider) = self
            .sandbox
            .active()
            .ok_or(SandboxError::NoActiveProvider)?;
        if !provider.languages().contains(&language) {
            return Err(SandboxError::Unsupported(language).into());
        }
        let session = provider
            .open_session(&SessionSpec { language, lifetime })
            .await?;
        Ok(Arc::new(Held {
            id: random_id("sbx"),
            owner: owner.clone(),
            provider: kind,
            language,
            created_at: crate::server::db::clock::now(),
            contexts: Mutex::default(),
            access_token: random_id("envd-"),
            metadata,
            session,
            created: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            ends_at: Mutex::new(Instant::now() + lifetime),
            cells: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }))
    }

    /// Session `id`, whoever holds it: for calls that prove themselves otherwise (E2B's
    /// sandbox calls carry the session's own access token).
    pub fn by_id(&self, id: &str) -> Option<Arc<Held>> {
        self.live().held.get(id).cloned()
    }

    /// `owner`'s session `id` (another key's is not found).
    pub fn get(&self, owner: &Owner, id: &str) -> Result<Arc<Held>, SessionError> {
        self.live()
            .held
            .get(id)
            .filter(|held| held.owner.key_id == owner.key_id)
            .cloned()
            .ok_or(SessionError::NotFound)
    }

    /// `owner`'s open sessions, oldest first.
    pub fn list(&self, owner: &Owner) -> Vec<Arc<Held>> {
        let mut mine: Vec<_> = self
            .live()
            .held
            .values()
            .filter(|held| held.owner.key_id == owner.key_id)
            .cloned()
            .collect();
        mine.sort_by_key(|held| held.created);
        mine
    }

    /// Every open session (the console's Sessions page).
    pub fn all(&self) -> Vec<Arc<Held>> {
        let mut all: Vec<_> = self.live().held.values().cloned().collect();
        all.sort_by_key(|held| held.created);
        all
    }

    /// Closes `owner`'s session `id`.
    pub async fn close(&self, owner: &Owner, id: &str) -> Result<(), SessionError> {
        let held = self.get(owner, id)?;
        self.end(&held, "closed").await;
        Ok(())
    }

    /// Closes session `id` whoever holds it (an admin on the Sessions page); the session, if
    /// it was open.
    pub async fn close_any(&self, id: &str) -> Option<Arc<Held>> {
        let held = self.by_id(id)?;
        self.end(&held, "closed by an admin").await;
        Some(held)
    }

    async fn end(&self, held: &Held, why: &str) {
        self.live().held.remove(&held.id);
        held.session.close().await;
        tracing::info!(session = %held.id, provider = %held.provider, why, "a sandbox session ended");
    }

    /// Sets the session's remaining lifetime to `from_now` (E2B's `set_timeout`), within the
    /// console's longest lifetime counted from its start.
    pub fn extend(&self, held: &Held, from_now: Duration) {
        let most = Duration::from_secs(self.limits.lifetime_secs.max(1));
        let latest = held.created + most;
        let wanted = Instant::now() + from_now;
        *held.ends_at.lock().unwrap_or_else(|e| e.into_inner()) = wanted.min(latest);
    }

    /// The deadline of one cell or command: what the caller asks (1..600 s), within the
    /// active provider's run time limit and the session's remaining lifetime.
    pub async fn cell_deadline(&self, held: &Held, asked: Option<u32>) -> Duration {
        let limit = self.sandbox.run_time_limit(&held.provider).await;
        let secs = asked.unwrap_or(limit).clamp(1, limit.min(MAX_TIMEOUT_SECS));
        Duration::from_secs(secs.into()).min(held.remaining().max(Duration::from_secs(1)))
    }

    /// Runs a cell and records it (a history row tied to the session).
    pub async fn run_cell(
        &self,
        held: &Arc<Held>,
        caller: &Caller,
        context: &str,
        code: &str,
        asked: Option<u32>,
        sink: Option<EventSink>,
    ) -> Result<CellOutcome, SandboxError> {
        let _in_use = held.using();
        let deadline = self.cell_deadline(held, asked).await;
        let outcome = held.session.run_cell(context, code, deadline, sink).await;
        if outcome.is_ok() {
            held.cells.fetch_add(1, Ordering::SeqCst);
        }
        record::cell(&self.sandbox, held, caller, code, &outcome).await;
        if outcome.as_ref().is_ok_and(|o| o.session_ended) {
            self.end(held, "its sandbox ended during a cell").await;
        }
        outcome
    }

    /// Runs a command and records it.
    pub async fn command(
        &self,
        held: &Arc<Held>,
        caller: &Caller,
        command: &CommandSpec,
    ) -> Result<CommandOutcome, SandboxError> {
        let _in_use = held.using();
        let deadline = self.cell_deadline(held, command.timeout_secs).await;
        let outcome = held.session.command(command, deadline).await;
        record::command(&self.sandbox, held, caller, command, &outcome).await;
        outcome
    }

    /// Closes sessions idle too long, past their lifetime, or whose sandbox is gone: every
    /// second, until the console stops.
    pub fn keep_reaping(self: &Arc<Self>) {
        let sessions = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                sessions.reap().await;
            }
        });
    }

    /// One round of [`Self::keep_reaping`]; returns how many sessions it closed.
    pub async fn reap(&self) -> usize {
        let idle = Duration::from_secs(self.limits.idle_secs.max(1));
        let done: Vec<(Arc<Held>, &str)> = self
            .all()
            .into_iter()
            .filter_map(|held| {
                let busy = held.in_flight.load(Ordering::SeqCst) > 0;
                let why = if !held.session.alive() {
                    "its sandbox is gone"
                } else if held.remaining().is_zero() {
                    "its lifetime is over"
                } else if !busy && held.idle() >= idle {
                    "it was idle"
                } else {
                    return None;
                };
                Some((held, why))
            })
            .collect();
        for (held, why) in &done {
            self.end(held, why).await;
        }
        done.len()
    }

    /// Closes every session and takes no more (the console is stopping).
    pub async fn close_all(&self) {
        self.closing.store(true, Ordering::SeqCst);
        for held in self.all() {
            self.end(&held, "the console is stopping").await;
        }
    }
}
