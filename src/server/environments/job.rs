//! One build run in the background: waits for a slot, builds, notes its progress (the
//! build's heartbeat) while it runs, verifies the result through the providers, records the
//! outcome, and lets the collector remove what the new build replaced.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
};

use sqlx::AnyPool;

use super::{
    build::{self},
    build_parts::{Log, Spec, Tools},
    catalog::StoreCatalog,
    collector::Collector,
    queue, Verifier, LOG_EVERY,
};
use crate::{sandbox::environment::Mount, server::db::environment as db};

pub(super) struct Job {
    pub(super) pool: AnyPool,
    /// Deletes unused builds afterwards (a store this console owns only).
    pub(super) collector: Option<Arc<Collector>>,
    pub(super) store: PathBuf,
    pub(super) catalog: Arc<StoreCatalog>,
    pub(super) tools: Tools,
    pub(super) verifier: Option<Arc<dyn Verifier>>,
    pub(super) queue: Arc<queue::BuildQueue>,
    pub(super) name: String,
    pub(super) id: i64,
    pub(super) hash: String,
    pub(super) spec: Spec,
}

impl Job {
    pub(super) async fn run(self) {
        let log = Log::default();
        let stage = Arc::new(Mutex::new("queued".to_owned()));
        // The log and stage reach the database while the build runs.
        let (pool, id) = (self.pool.clone(), self.id);
        let (shown_log, shown_stage) = (log.clone(), stage.clone());
        // Aborted when the job ends however it ends (a panic too): no heartbeat outlives it.
        let reporter = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            loop {
                tokio::time::sleep(LOG_EVERY).await;
                let stage = shown_stage.lock().expect("stage lock").clone();
                if let Err(error) = db::progress(&pool, id, &stage, &shown_log.text()).await {
                    tracing::warn!(%error, "cannot record a build's progress");
                }
            }
        }));
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
                        preload: Vec::new(),
                        lease: Default::default(),
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
