//! The environments service: named package sets stored with a version and audit, built in the
//! background into a content-addressed store (one build of a spec at a time), verified through
//! the providers that mount them, and garbage-collected when nothing uses them.
//!
//! [`catalog`] is what providers see (name → ready folder); [`build`] runs pip and npm.

pub mod build;
pub mod build_parts;
pub mod catalog;
mod collector;
mod job;
pub mod network;
mod owner;
mod queue;
mod read;
mod save;
pub mod spec;
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
    build_parts::{Spec, Tools},
    catalog::StoreCatalog,
    collector::Collector,
    job::Job,
    owner::Owner,
};
use crate::{
    model::environment::{self as model, EnvironmentInfo, Verification},
    model::package_spec,
    sandbox::environment::{Catalog, Mount, Resolved},
    server::db::{
        environment::{self as db, EnvError},
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
/// How often a console looks for builds whose process is gone.
const ABANDON_EVERY: Duration = Duration::from_secs(30);

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
        // Only builds whose process is gone: a command started beside a running console
        // leaves that console's builds alone.
        collector::give_up_abandoned(&pool, &store, collect_garbage).await?;
        let catalog = Arc::new(StoreCatalog::new(store));
        catalog.reload(&pool).await?;
        let running: Arc<Mutex<HashMap<String, i64>>> = Arc::default();
        Ok(EnvironmentService {
            pool,
            tools,
            collector: Arc::new(Collector {
                running: running.clone(),
                unused_since: Mutex::default(),
                grace: gc_grace,
                catalog: catalog.clone(),
            }),
            catalog,
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
            base: "",
            preload: None,
        };
        match db::save(&self.pool, model::DEFAULT_NAME, &spec, None, "system").await {
            Ok(_) | Err(EnvError::Exists(_)) => {}
            Err(error) => return Err(error),
        }
        self.catalog.reload(&self.pool).await?;
        Ok(true)
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
        let based: Vec<String> = db::list(&self.pool)
            .await?
            .into_iter()
            .filter(|row| row.base == info.name)
            .map(|row| format!("environment {}", row.name))
            .collect();
        if !based.is_empty() {
            return Err(ChangeError::InUse {
                name: info.name,
                used_by: based,
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
        let hash = spec::effective(&self.pool, &row).await?.hash(&self.tools);
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
        let spec = spec::effective(&self.pool, &row).await?;
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
        let owner = Owner::this().text();
        let id = match db::start_build(&self.pool, name, &hash, actor.as_str(), &owner).await {
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
    /// Also, every [`ABANDON_EVERY`], gives up builds whose process is gone (another
    /// replica's, killed), so none shows "building" for long after its console died.
    pub fn keep_collecting(self: &Arc<Self>, every: Duration) {
        let service = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut collected = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(ABANDON_EVERY.min(every)).await;
                let Some(service) = service.upgrade() else {
                    return;
                };
                let (store, owned) = (service.store().to_owned(), service.collect_garbage);
                if let Err(error) = collector::give_up_abandoned(&service.pool, &store, owned).await
                {
                    tracing::warn!(%error, "could not check for interrupted environment builds");
                }
                if service.collect_garbage && collected.elapsed() >= every {
                    service.collect_garbage().await;
                    collected = tokio::time::Instant::now();
                }
            }
        });
    }

    /// Waits for builds under way (at most `grace`).
    pub async fn finish_builds(&self, grace: Duration) {
        self.tasks.close();
        let _ = tokio::time::timeout(grace, self.tasks.wait()).await;
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
