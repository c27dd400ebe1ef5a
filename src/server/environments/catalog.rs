//! What each environment's name stands for right now, kept in memory for providers' `build`
//! (which cannot wait on the database) and reloaded when the stored generation moves.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, RwLock, Weak},
};

use sqlx::AnyPool;

use crate::{
    model::environment::NONE,
    sandbox::environment::{self, Catalog, Lease, Mount, Resolved},
    server::db::environment as db,
};

#[derive(Debug, Default)]
struct Snapshot {
    generation: i64,
    default: Option<String>,
    /// Each environment and its ready build's content address, if it has one.
    environments: HashMap<String, Option<String>>,
    /// Each environment's preloaded modules.
    preload: HashMap<String, Vec<String>>,
}

/// The console's environments as providers see them.
#[derive(Debug)]
pub struct StoreCatalog {
    store: PathBuf,
    snapshot: RwLock<Snapshot>,
    /// Each build handed out in a mount, while some mount of it lives.
    leases: Mutex<HashMap<String, Weak<()>>>,
}

impl StoreCatalog {
    pub fn new(store: PathBuf) -> Self {
        StoreCatalog {
            store,
            snapshot: RwLock::new(Snapshot {
                generation: -1,
                ..Snapshot::default()
            }),
            leases: Mutex::default(),
        }
    }

    /// A lease on build `hash` for a mount handed out now.
    fn lease(&self, hash: &str) -> Lease {
        let mut leases = self.leases.lock().expect("leases lock");
        leases.retain(|_, token| token.strong_count() > 0);
        let token = leases.get(hash).and_then(Weak::upgrade).unwrap_or_else(|| {
            let token = Arc::new(());
            leases.insert(hash.to_owned(), Arc::downgrade(&token));
            token
        });
        Lease::new(token)
    }

    /// Whether some mount of build `hash` lives (a provider, a run in flight, a check).
    pub fn is_leased(&self, hash: &str) -> bool {
        self.leases
            .lock()
            .expect("leases lock")
            .get(hash)
            .is_some_and(|token| token.strong_count() > 0)
    }

    pub fn store(&self) -> &std::path::Path {
        &self.store
    }

    /// The generation last loaded.
    pub fn generation(&self) -> i64 {
        self.snapshot.read().expect("catalog lock").generation
    }

    /// Reads every environment and its ready build again.
    pub async fn reload(&self, pool: &AnyPool) -> Result<(), sqlx::Error> {
        let generation = db::generation(pool).await?;
        let rows: Vec<(String, i64, Option<String>, String)> = sqlx::query_as(
            "select e.name, e.is_default, b.spec_hash, e.preload from environment e \
             left join environment_build b on b.id = e.ready_build",
        )
        .fetch_all(pool)
        .await?;
        let mut next = Snapshot {
            generation,
            ..Snapshot::default()
        };
        for (name, is_default, hash, preload) in rows {
            if is_default != 0 {
                next.default = Some(name.clone());
            }
            let modules = preload.split_whitespace().map(str::to_owned).collect();
            next.preload.insert(name.clone(), modules);
            next.environments.insert(name, hash);
        }
        *self.snapshot.write().expect("catalog lock") = next;
        Ok(())
    }
}

impl Catalog for StoreCatalog {
    fn resolve(&self, name: &str) -> Result<Resolved, String> {
        // `name@build` pins one build of an environment (verification runs a build before it
        // is the one in use).
        if let Some((name, build)) = name.trim().split_once('@') {
            let dir = self.store.join(build);
            let plain = !build.is_empty() && build.chars().all(|c| c.is_ascii_hexdigit());
            if !plain || !environment::is_complete(&dir) {
                return Err(format!("There is no complete build {build} of '{name}'."));
            }
            let preload = self
                .snapshot
                .read()
                .expect("catalog lock")
                .preload
                .get(name)
                .cloned();
            return Ok(Resolved::Ready(Mount {
                name: name.to_owned(),
                build: build.to_owned(),
                dir,
                preload: preload.unwrap_or_default(),
                lease: self.lease(build),
            }));
        }
        let snapshot = self.snapshot.read().expect("catalog lock");
        let name = match name.trim() {
            NONE => return Ok(Resolved::Bare),
            "" => match &snapshot.default {
                Some(name) => name.clone(),
                None => return Ok(Resolved::Bare),
            },
            other => other.to_owned(),
        };
        let Some(build) = snapshot.environments.get(&name) else {
            return Err(format!(
                "There is no environment named '{name}'. Create it on the Environments page, or \
                 leave the field blank for the default."
            ));
        };
        let Some(hash) = build else {
            return Ok(Resolved::Pending { name });
        };
        let dir = self.store.join(hash);
        if !environment::is_complete(&dir) {
            // The folder went missing (deleted by hand, a store on another disk): run bare
            // rather than fail every run; the Environments page shows it.
            tracing::warn!(%name, dir = %dir.display(), "an environment's ready build is missing from the store");
            return Ok(Resolved::Pending { name });
        }
        Ok(Resolved::Ready(Mount {
            preload: snapshot.preload.get(&name).cloned().unwrap_or_default(),
            name,
            lease: self.lease(hash),
            build: hash.clone(),
            dir,
        }))
    }
}
