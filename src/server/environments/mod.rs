//! The environments service: named package sets stored with a version and audit, built in the
//! background into a content-addressed store (one build of a spec at a time), verified through
//! the providers that mount them, and garbage-collected when nothing uses them.
//!
//! [`catalog`] is what providers see (name → ready folder); [`build`] runs pip and npm.

pub mod build;
pub mod catalog;
pub mod network;
mod queue;
mod steps;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use sqlx::AnyPool;

use self::{
    build::{Log, Spec, Tools},
    catalog::StoreCatalog,
};
use crate::{
    model::environment::{
        self as model, BuildInfo, BuildLog, BuildStatus, EnvironmentInfo, Verification,
    },
    model::package_spec,
    sandbox::environment::{Catalog, Mount, Resolved},
    server::db::{
        environment::{self as db, EnvError, EnvRow},
        execution::Actor,
        settings_audit,
    },
};

/// Runs a ready build's modules through the providers that mount environments; the sandbox
/// service does it (set once at start-up, so this service never refers to that one).
#[async_trait]
pub trait Verifier: Send + Sync {
    async fn verify(&self, mount: &Mount, python: &[String], npm: &[String]) -> Vec<Verification>;
}

/// What a save was refused for, per field, or a store failure.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("{}", .0.values().cloned().collect::<Vec<_>>().join(" "))]
    Invalid(crate::model::schema::FieldErrors),
    #[error(transparent)]
    Store(#[from] EnvError),
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("there is no environment named {0:?}")]
    Unknown(String),
    #[error("{name:?} is in use by {}: point those providers at another environment first", .used_by.join(", "))]
    InUse { name: String, used_by: Vec<String> },
    #[error("{0:?} has never been built: build it before making it the default")]
    NotReady(String),
    #[error(transparent)]
    Store(#[from] EnvError),
}

impl From<sqlx::Error> for ChangeError {
    fn from(error: sqlx::Error) -> Self {
        ChangeError::Store(EnvError::Database(error))
    }
}

pub struct EnvironmentService {
    pool: AnyPool,
    catalog: Arc<StoreCatalog>,
    tools: Tools,
    /// Builds under way in this process, by content address: a second request for the same
    /// spec joins the first.
    running: Arc<Mutex<HashMap<String, i64>>>,
    /// Whether this console may delete unused builds from the store (not when the store is
    /// shared with other consoles, as a cache).
    collect_garbage: bool,
    collector: Arc<Collector>,
    /// Provider kinds whose settings have an Environment field.
    mounting_kinds: Vec<String>,
    verifier: OnceLock<Arc<dyn Verifier>>,
    tasks: tokio_util::task::TaskTracker,
    /// Builds run at once, the rest in order.
    queue: Arc<queue::BuildQueue>,
}

impl std::fmt::Debug for EnvironmentService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentService")
            .field("store", &self.catalog.store())
            .finish_non_exhaustive()
    }
}

/// How often a running build's log reaches the database.
const LOG_EVERY: Duration = Duration::from_millis(700);

impl EnvironmentService {
    /// Loads the catalog; builds a stopped console left `building` are marked failed.
    pub async fn start(
        pool: AnyPool,
        store: PathBuf,
        collect_garbage: bool,
        tools: Tools,
        mounting_kinds: Vec<String>,
        gc_grace: Duration,
        max_builds: usize,
    ) -> Result<Self, sqlx::Error> {
        // Alone on SQLite, every unfinished build was this console's; replicas on one
        // database only give up builds that stopped saying they are alive.
        let alone = crate::server::db::Backend::of(&pool) == crate::server::db::Backend::Sqlite;
        let abandoned = db::abandon_unfinished(&pool, alone).await?;
        if abandoned > 0 {
            tracing::warn!(
                abandoned,
                "environment builds were interrupted by a stop; build them again"
            );
        }
        let catalog = Arc::new(StoreCatalog::new(store));
        catalog.reload(&pool).await?;
        let running: Arc<Mutex<HashMap<String, i64>>> = Arc::default();
        Ok(EnvironmentService {
            pool,
            catalog,
            tools,
            collector: Arc::new(Collector {
                running: running.clone(),
                unused_since: Mutex::default(),
                grace: gc_grace,
            }),
            running,
            collect_garbage,
            mounting_kinds,
            verifier: OnceLock::new(),
            tasks: tokio_util::task::TaskTracker::new(),
            queue: Arc::new(queue::BuildQueue::new(max_builds)),
        })
    }

    /// The service as `config` sets it up, for the kinds in `registry` with an Environment
    /// field; seeds the default environment on a first start.
    pub async fn for_config(
        pool: AnyPool,
        config: &crate::server::config::Config,
        registry: &crate::sandbox::registry::Registry,
        console: Vec<std::net::SocketAddr>,
    ) -> Result<Self, EnvError> {
        let store = config
            .environment_store
            .clone()
            .unwrap_or_else(|| config.data_dir.join("environments"));
        let tools = Tools {
            python: config.environment_python.clone(),
            npm: config.environment_npm.clone(),
            index_url: config.package_index.clone(),
            npm_registry: config.npm_registry.clone(),
            console,
        };
        let mounting = registry
            .kinds()
            .filter(|kind| {
                (kind.schema)()
                    .fields
                    .iter()
                    .any(|f| f.key == "environment")
            })
            .map(|kind| (kind.info)().kind)
            .collect();
        let service = Self::start(
            pool,
            store,
            config.environment_store.is_none(),
            tools,
            mounting,
            Duration::from_secs(config.environment_gc_grace_secs),
            config.max_concurrent_builds,
        )
        .await?;
        service.seed_default().await?;
        Ok(service)
    }

    /// Builds the default environment when it has neither a ready build nor one under way.
    pub async fn build_default_if_needed(&self) -> Result<Option<i64>, ChangeError> {
        let Some(default) = db::list(&self.pool)
            .await?
            .into_iter()
            .find(|row| row.is_default)
        else {
            return Ok(None);
        };
        if default.ready_build.is_some() {
            return Ok(None);
        }
        let actor = Actor::admin("system");
        Ok(Some(self.build(&actor, &default.name).await?))
    }

    /// The catalog providers are built with.
    pub fn catalog(&self) -> Arc<StoreCatalog> {
        self.catalog.clone()
    }

    pub fn set_verifier(&self, verifier: Arc<dyn Verifier>) {
        let _ = self.verifier.set(verifier);
    }

    pub fn store(&self) -> &Path {
        self.catalog.store()
    }

    /// Creates the default environment (RAGFlow's image's packages) when there is none at
    /// all; returns whether it did.
    pub async fn seed_default(&self) -> Result<bool, EnvError> {
        if !db::list(&self.pool).await?.is_empty() {
            return Ok(false);
        }
        let spec = db::Spec {
            python_requirements: model::DEFAULT_PYTHON,
            npm_packages: model::DEFAULT_NPM,
            allow_sdists: false,
        };
        match db::save(&self.pool, model::DEFAULT_NAME, &spec, None, "system").await {
            Ok(_) | Err(EnvError::Exists(_)) => {}
            Err(error) => return Err(error),
        }
        self.catalog.reload(&self.pool).await?;
        Ok(true)
    }

    /// Every environment, the default first.
    pub async fn list(&self) -> Result<Vec<EnvironmentInfo>, sqlx::Error> {
        let uses = self.uses().await?;
        let mut out = Vec::new();
        for row in db::list(&self.pool).await? {
            out.push(self.info(row, &uses).await?);
        }
        Ok(out)
    }

    pub async fn get(&self, name: &str) -> Result<Option<EnvironmentInfo>, sqlx::Error> {
        let Some(row) = db::get(&self.pool, name).await? else {
            return Ok(None);
        };
        let uses = self.uses().await?;
        Ok(Some(self.info(row, &uses).await?))
    }

    async fn info(
        &self,
        row: EnvRow,
        uses: &[(String, String)],
    ) -> Result<EnvironmentInfo, sqlx::Error> {
        // The latest build first, then which build is ready: a build that became ready did
        // so in the transaction that made it the ready one, so read in this order the two
        // agree (the row may have been read before the build finished).
        let latest = db::latest_build(&self.pool, &row.name).await?;
        let ready_build = match db::get(&self.pool, &row.name).await? {
            Some(fresh) => fresh.ready_build,
            None => row.ready_build,
        };
        let ready = match ready_build {
            Some(id) => db::build(&self.pool, id).await?,
            None => None,
        };
        let latest = latest.filter(|latest| Some(latest.id) != ready_build);
        let used_by = uses
            .iter()
            .filter(|(_, name)| *name == row.name || (name.is_empty() && row.is_default))
            .map(|(kind, _)| kind.clone())
            .collect();
        Ok(EnvironmentInfo {
            name: row.name,
            python_requirements: row.python_requirements,
            npm_packages: row.npm_packages,
            allow_sdists: row.allow_sdists,
            version: row.version,
            is_default: row.is_default,
            updated_at: row.updated_at,
            updated_by: row.updated_by,
            ready,
            latest,
            used_by,
        })
    }

    /// Each provider kind with an Environment field and the name its saved settings give
    /// (blank: the default).
    async fn uses(&self) -> Result<Vec<(String, String)>, sqlx::Error> {
        let mut uses = Vec::new();
        for kind in &self.mounting_kinds {
            let stored: Option<String> =
                sqlx::query_scalar("select value from system_setting where name = $1")
                    .bind(format!("sandbox.{kind}"))
                    .fetch_optional(&self.pool)
                    .await?;
            let Some(stored) = stored else { continue };
            let value: Value = serde_json::from_str(&stored).unwrap_or_default();
            let name = value["environment"].as_str().unwrap_or_default().trim();
            if name != model::NONE {
                uses.push((kind.clone(), name.to_owned()));
            }
        }
        Ok(uses)
    }

    /// Creates (`expected` None) or changes an environment's spec. Nothing is built here.
    pub async fn save(
        &self,
        actor: &Actor,
        name: &str,
        python: &str,
        npm: &str,
        allow_sdists: bool,
        expected: Option<i64>,
    ) -> Result<i64, SaveError> {
        let mut errors = crate::model::schema::FieldErrors::new();
        let name = match model::check_name(name) {
            Ok(name) => name,
            Err(message) => {
                errors.insert("name".into(), message);
                String::new()
            }
        };
        let python = match package_spec::parse_requirements(python) {
            Ok(lines) => lines.join("\n"),
            Err(message) => {
                errors.insert("python_requirements".into(), message);
                String::new()
            }
        };
        let npm = match package_spec::parse_npm(npm) {
            Ok(items) => items.join("\n"),
            Err(message) => {
                errors.insert("npm_packages".into(), message);
                String::new()
            }
        };
        let count = python.lines().count() + npm.lines().count();
        if errors.is_empty() && count > model::MAX_PACKAGES {
            errors.insert(
                "python_requirements".into(),
                format!("List at most {} packages in all.", model::MAX_PACKAGES),
            );
        }
        if !errors.is_empty() {
            return Err(SaveError::Invalid(errors));
        }
        let spec = db::Spec {
            python_requirements: &python,
            npm_packages: &npm,
            allow_sdists,
        };
        let version = db::save(&self.pool, &name, &spec, expected, actor.as_str()).await?;
        self.audit(
            actor,
            &name,
            if expected.is_some() {
                "environment_update"
            } else {
                "environment_create"
            },
            json!({
                "version": version,
                "allow_sdists": allow_sdists,
            }),
        )
        .await
        .map_err(EnvError::from)?;
        self.catalog
            .reload(&self.pool)
            .await
            .map_err(EnvError::from)?;
        Ok(version)
    }

    async fn audit(
        &self,
        actor: &Actor,
        name: &str,
        action: &str,
        detail: Value,
    ) -> Result<(), sqlx::Error> {
        let detail = detail.as_object().cloned().unwrap_or_default();
        settings_audit::record_event(
            &self.pool,
            actor.as_str(),
            &format!("environment.{name}"),
            None,
            action,
            &detail,
        )
        .await
    }

    /// Deletes an environment no provider uses; its unused builds go with the next collection.
    pub async fn delete(&self, actor: &Actor, name: &str) -> Result<(), ChangeError> {
        let Some(info) = self.get(name).await? else {
            return Err(ChangeError::Unknown(name.to_owned()));
        };
        if !info.used_by.is_empty() {
            return Err(ChangeError::InUse {
                name: info.name,
                used_by: info.used_by,
            });
        }
        if info.is_default && self.uses().await?.iter().any(|(_, n)| n.is_empty()) {
            return Err(ChangeError::InUse {
                name: info.name,
                used_by: vec!["providers using the default".into()],
            });
        }
        db::delete(&self.pool, name).await?;
        self.audit(actor, name, "environment_delete", json!({}))
            .await?;
        self.catalog.reload(&self.pool).await?;
        self.collect_garbage().await;
        Ok(())
    }

    pub async fn set_default(&self, actor: &Actor, name: &str) -> Result<(), ChangeError> {
        db::set_default(&self.pool, name)
            .await
            .map_err(|e| match e {
                EnvError::Unknown(name) => ChangeError::Unknown(name),
                other => ChangeError::Store(other),
            })?;
        self.audit(actor, name, "environment_default", json!({}))
            .await?;
        self.catalog.reload(&self.pool).await?;
        Ok(())
    }

    /// Whether the build in use is of the environment's current spec (and still complete).
    pub async fn is_current(&self, name: &str) -> Result<bool, ChangeError> {
        let Some(row) = db::get(&self.pool, name).await? else {
            return Err(ChangeError::Unknown(name.to_owned()));
        };
        let Some(id) = row.ready_build else {
            return Ok(false);
        };
        let hash = spec_of(&row).hash(&self.tools);
        let ready = db::build(&self.pool, id).await?;
        Ok(ready.is_some_and(|b| b.spec_hash == hash)
            && crate::sandbox::environment::is_complete(&self.store().join(&hash)))
    }

    /// Starts a build of the environment's current spec in the background and returns its
    /// id; when a build of the same spec is under way here, returns that one instead.
    pub async fn build(&self, actor: &Actor, name: &str) -> Result<i64, ChangeError> {
        let Some(row) = db::get(&self.pool, name).await? else {
            return Err(ChangeError::Unknown(name.to_owned()));
        };
        let spec = spec_of(&row);
        let hash = spec.hash(&self.tools);
        // The check and the claim happen under one lock: two requests never both start. The
        // claim holds a placeholder until the build's row exists.
        let claimed = {
            let mut running = self.running.lock().expect("running builds lock");
            match running.get(&hash) {
                Some(id) if *id > 0 => return Ok(*id),
                Some(_) => false,
                None => {
                    running.insert(hash.clone(), -1);
                    true
                }
            }
        };
        if claimed {
            return self.start_build(actor, name, hash, spec).await;
        }
        // Another request is creating the row for this spec: wait for its id.
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            match self.running.lock().expect("running builds lock").get(&hash) {
                Some(id) if *id > 0 => return Ok(*id),
                Some(_) => continue,
                None => break,
            }
        }
        let latest = db::latest_build(&self.pool, name).await?;
        Ok(latest.map_or(0, |b| b.id))
    }

    async fn start_build(
        &self,
        actor: &Actor,
        name: &str,
        hash: String,
        spec: Spec,
    ) -> Result<i64, ChangeError> {
        let id = match db::start_build(&self.pool, name, &hash, actor.as_str()).await {
            Ok(id) => id,
            Err(error) => {
                self.running
                    .lock()
                    .expect("running builds lock")
                    .remove(&hash);
                return Err(error.into());
            }
        };
        self.running
            .lock()
            .expect("running builds lock")
            .insert(hash.clone(), id);
        self.audit(
            actor,
            name,
            "environment_build",
            json!({ "build": id, "spec_hash": hash }),
        )
        .await?;
        let job = Job {
            pool: self.pool.clone(),
            collector: self.collect_garbage.then(|| self.collector.clone()),
            store: self.catalog.store().to_owned(),
            catalog: self.catalog.clone(),
            tools: self.tools.clone(),
            verifier: self.verifier.get().cloned(),
            queue: self.queue.clone(),
            name: name.to_owned(),
            id,
            hash: hash.clone(),
            spec,
        };
        // The claim is released when the build ends, whatever happened in it (a panic too).
        let running = self.running.clone();
        let build = tokio::spawn(job.run());
        self.tasks.spawn(async move {
            if let Err(panic) = build.await {
                tracing::error!(%panic, "an environment build crashed");
            }
            running.lock().expect("running builds lock").remove(&hash);
        });
        Ok(id)
    }

    /// A build and its log so far.
    pub async fn build_log(&self, id: i64) -> Result<Option<BuildLog>, sqlx::Error> {
        let Some(build) = db::build(&self.pool, id).await? else {
            return Ok(None);
        };
        let log = db::build_log(&self.pool, id).await?.unwrap_or_default();
        Ok(Some(BuildLog { build, log }))
    }

    /// Waits until build `id` is no longer building (at most `deadline`), calling `progress`
    /// with each new piece of its log.
    pub async fn wait(
        &self,
        id: i64,
        deadline: Duration,
        mut progress: impl FnMut(&str),
    ) -> Result<Option<BuildInfo>, sqlx::Error> {
        let started = tokio::time::Instant::now();
        let mut shown = 0;
        loop {
            let Some(log) = self.build_log(id).await? else {
                return Ok(None);
            };
            if log.log.len() > shown {
                progress(&log.log[shown.min(log.log.len())..]);
                shown = log.log.len();
            }
            if log.build.status != BuildStatus::Building || started.elapsed() > deadline {
                return Ok(Some(log.build));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Verifies a ready environment again through the providers that mount it.
    pub async fn test(&self, name: &str) -> Result<Vec<Verification>, ChangeError> {
        let Some(row) = db::get(&self.pool, name).await? else {
            return Err(ChangeError::Unknown(name.to_owned()));
        };
        let Some(id) = row.ready_build else {
            return Err(ChangeError::NotReady(name.to_owned()));
        };
        let Resolved::Ready(mount) = self
            .catalog
            .resolve(name)
            .map_err(|_| ChangeError::Unknown(name.to_owned()))?
        else {
            return Err(ChangeError::NotReady(name.to_owned()));
        };
        let build = db::build(&self.pool, id)
            .await?
            .ok_or_else(|| ChangeError::NotReady(name.to_owned()))?;
        let Some(verifier) = self.verifier.get() else {
            return Ok(Vec::new());
        };
        let (python, npm) = build::modules(&mount.dir, &build.lock);
        let results = verifier.verify(&mount, &python, &npm).await;
        db::set_verification(&self.pool, id, &results).await?;
        Ok(results)
    }

    /// Deletes store folders no environment uses (and that no build is writing). Only for
    /// a store this console owns.
    pub async fn collect_garbage(&self) -> usize {
        if !self.collect_garbage {
            return 0;
        }
        self.collector.collect(&self.pool, self.store()).await
    }

    /// Collects garbage every `every` (a store this console owns only).
    pub fn keep_collecting(self: &Arc<Self>, every: Duration) {
        if !self.collect_garbage {
            return;
        }
        let service = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(service) = service.upgrade() else {
                    return;
                };
                service.collect_garbage().await;
            }
        });
    }

    /// Waits for builds under way (at most `grace`).
    pub async fn finish_builds(&self, grace: Duration) {
        self.tasks.close();
        let _ = tokio::time::timeout(grace, self.tasks.wait()).await;
    }
}

/// What garbage collection needs: which builds run, and since when each unused folder was
/// seen unused (it is deleted only after `grace`: runs that started on a replaced build may
/// still be reading it).
#[derive(Debug)]
pub struct Collector {
    running: Arc<Mutex<HashMap<String, i64>>>,
    unused_since: Mutex<HashMap<String, std::time::Instant>>,
    grace: Duration,
}

impl Collector {
    /// Deletes the folders in `store` that no environment uses, no build is writing, and
    /// that have been unused for the grace period.
    async fn collect(&self, pool: &AnyPool, store: &Path) -> usize {
        let keep = match db::hashes_in_use(pool).await {
            Ok(keep) => keep,
            Err(error) => {
                tracing::warn!(%error, "cannot tell which environment builds are in use");
                return 0;
            }
        };
        let now = std::time::Instant::now();
        let mut removed = 0;
        let mut unused_since = self.unused_since.lock().expect("collector lock");
        unused_since.retain(|hash, _| !keep.contains(hash));
        for entry in std::fs::read_dir(store).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let in_flight = self
                .running
                .lock()
                .expect("running builds lock")
                .keys()
                .any(|hash| name.contains(hash.as_str()));
            if keep.contains(&name) || in_flight || name.starts_with('.') {
                continue;
            }
            let since = *unused_since.entry(name.clone()).or_insert(now);
            if now.duration_since(since) < self.grace {
                continue;
            }
            if std::fs::remove_dir_all(entry.path()).is_ok() {
                unused_since.remove(&name);
                removed += 1;
            }
        }
        if removed > 0 {
            tracing::info!(removed, "removed unused environment builds");
        }
        removed
    }
}

fn spec_of(row: &EnvRow) -> Spec {
    Spec {
        python: row.python_requirements.lines().map(str::to_owned).collect(),
        npm: row.npm_packages.lines().map(str::to_owned).collect(),
        allow_sdists: row.allow_sdists,
    }
}

struct Job {
    pool: AnyPool,
    /// Deletes unused builds afterwards (a store this console owns only).
    collector: Option<Arc<Collector>>,
    store: PathBuf,
    catalog: Arc<StoreCatalog>,
    tools: Tools,
    verifier: Option<Arc<dyn Verifier>>,
    queue: Arc<queue::BuildQueue>,
    name: String,
    id: i64,
    hash: String,
    spec: Spec,
}

impl Job {
    async fn run(self) {
        let log = Log::default();
        let stage = Arc::new(Mutex::new("queued".to_owned()));
        // The log and stage reach the database while the build runs.
        let (pool, id) = (self.pool.clone(), self.id);
        let (shown_log, shown_stage) = (log.clone(), stage.clone());
        let reporter = tokio::spawn(async move {
            loop {
                tokio::time::sleep(LOG_EVERY).await;
                let stage = shown_stage.lock().expect("stage lock").clone();
                if let Err(error) = db::progress(&pool, id, &stage, &shown_log.text()).await {
                    tracing::warn!(%error, "cannot record a build's progress");
                }
            }
        });
        let set_stage = {
            let stage = stage.clone();
            move |now: &str| *stage.lock().expect("stage lock") = now.to_owned()
        };
        let _slot = self
            .queue
            .admit(&|ahead| {
                set_stage(&match ahead {
                    0 => "queued: next, once a running build ends".to_owned(),
                    1 => "queued: 1 build ahead".to_owned(),
                    n => format!("queued: {n} builds ahead"),
                })
            })
            .await;
        let outcome = build::build(
            &self.store,
            &self.hash,
            &self.spec,
            &self.tools,
            &log,
            &set_stage,
        )
        .await;
        // The reporter keeps noting progress (the build's heartbeat) through verification,
        // which may take minutes: replicas mark silent builds interrupted.
        match outcome {
            Err(error) => {
                reporter.abort();
                log.line(&format!("Build failed: {error}"));
                tracing::warn!(environment = %self.name, %error, "an environment build failed");
                if let Err(e) =
                    db::fail_build(&self.pool, self.id, &error.to_string(), &log.text()).await
                {
                    tracing::error!(error = %e, "cannot record a failed build");
                }
            }
            Ok(built) => {
                // Verified before it is the build in use: the page shows the result with it.
                if let Some(verifier) = &self.verifier {
                    set_stage("verifying under each provider");
                    let _ = db::progress(
                        &self.pool,
                        self.id,
                        "verifying under each provider",
                        &log.text(),
                    )
                    .await;
                    let mount = Mount {
                        name: self.name.clone(),
                        build: self.hash.clone(),
                        dir: self.store.join(&self.hash),
                    };
                    let (python, npm) = build::modules(&mount.dir, &built.lock);
                    let results = verifier.verify(&mount, &python, &npm).await;
                    for result in &results {
                        log.line(&match (&result.error, result.import_ms) {
                            (None, Some(ms)) => format!(
                                "Verified on {}: every module imports ({ms} ms).",
                                result.provider
                            ),
                            (error, _) => format!(
                                "Not usable on {}: {}",
                                result.provider,
                                error.as_deref().unwrap_or("unknown")
                            ),
                        });
                    }
                    if let Err(error) = db::set_verification(&self.pool, self.id, &results).await {
                        tracing::warn!(%error, "cannot record an environment's verification");
                    }
                }
                reporter.abort();
                if let Err(error) = db::finish_build(
                    &self.pool,
                    self.id,
                    &log.text(),
                    &built.lock,
                    built.size_bytes,
                )
                .await
                {
                    tracing::error!(%error, "cannot record a finished build");
                    return;
                }
                tracing::info!(environment = %self.name, build = %self.hash, reused = built.reused, "an environment build is ready");
                if let Err(error) = self.catalog.reload(&self.pool).await {
                    tracing::warn!(%error, "cannot reload the environments");
                }
                // The build this one replaced goes once providers are rebuilt (a run that
                // still holds it keeps its open files).
                if let Some(collector) = &self.collector {
                    collector.collect(&self.pool, &self.store).await;
                }
            }
        }
    }
}

/// Shown in JSON for the API: what `GET /api/v1/environments` lists.
pub fn to_json(info: &EnvironmentInfo) -> Map<String, Value> {
    serde_json::to_value(info)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .map(|mut map| {
            map.insert("status".into(), json!(info.status()));
            map
        })
        .unwrap_or_default()
}
