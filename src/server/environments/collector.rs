//! Garbage collection of the environment store: build folders no environment uses are
//! deleted once unused for a grace period, unless a mount of them lives (a provider, a run in
//! flight); working folders (`.building-…`) of builds whose process is gone are deleted too.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use sqlx::AnyPool;

use super::{
    build_parts::{STEP_DEADLINE, WORK_PREFIX},
    catalog::StoreCatalog,
    owner::Owner,
};
use crate::server::db::environment as db;

/// Marks failed the builds whose process is gone (at once for a process of this host; by its
/// silence for another host's), and removes their working folders from a store this console
/// owns.
pub(super) async fn give_up_abandoned(
    pool: &AnyPool,
    store: &Path,
    owned: bool,
) -> Result<(), sqlx::Error> {
    let marked = db::abandon_unfinished(pool, |owner| {
        Owner::parse(owner).and_then(|owner| owner.alive().map(|alive| !alive))
    })
    .await?;
    if marked > 0 {
        tracing::warn!(
            marked,
            "environment builds were interrupted by a stop of their console; build them again"
        );
    }
    sweep_abandoned(store, owned);
    Ok(())
}

/// What garbage collection needs: which builds run here, which are mounted, and since when
/// each unused folder was seen unused.
#[derive(Debug)]
pub struct Collector {
    pub(super) running: Arc<Mutex<HashMap<String, i64>>>,
    pub(super) unused_since: Mutex<HashMap<String, std::time::Instant>>,
    pub(super) grace: Duration,
    pub(super) catalog: Arc<StoreCatalog>,
}

impl Collector {
    /// Deletes the folders in `store` that no environment uses, no build is writing, no
    /// mount holds, and that have been unused for the grace period.
    pub(super) async fn collect(&self, pool: &AnyPool, store: &Path) -> usize {
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
            // A mount keeps its build: a run that started on it reads it to its end.
            if keep.contains(&name)
                || in_flight
                || name.starts_with('.')
                || self.catalog.is_leased(&name)
            {
                unused_since.remove(&name);
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

/// The working folder name of a build by this process: `.building-<hash>-<pid>-<started>-`
/// (tempfile adds a random tail).
pub fn work_prefix(hash: &str) -> String {
    let me = Owner::this();
    format!("{WORK_PREFIX}{hash}-{}-{}-", me.pid, me.started)
}

/// Whether a working folder's build is over for good: its process is gone (told by the pid
/// and start time in its name), or, in a store shared with consoles elsewhere (`owned`
/// false), it is older than any build may take.
fn abandoned(name: &str, path: &Path, owned: bool) -> bool {
    let Some(rest) = name.strip_prefix(WORK_PREFIX) else {
        return false;
    };
    if owned {
        let mut parts = rest.split('-');
        let (_hash, pid, started) = (parts.next(), parts.next(), parts.next());
        if let (Some(Ok(pid)), Some(Ok(started))) =
            (pid.map(str::parse::<u32>), started.map(str::parse::<u64>))
        {
            let owner = Owner {
                pid,
                started,
                ..Owner::this()
            };
            return owner.alive() == Some(false);
        }
    }
    // A folder from an older console (no pid in its name), or in a shared store.
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| SystemTime::now().duration_since(at).ok())
        .unwrap_or_default();
    age > STEP_DEADLINE * 3
}

/// Deletes the working folders of builds that ended without cleaning up (a kill -9, a crash,
/// an OOM kill of the console); returns how many.
pub fn sweep_abandoned(store: &Path, owned: bool) -> usize {
    let mut removed = 0;
    for entry in std::fs::read_dir(store).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if abandoned(&name, &entry.path(), owned) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::warn!(
            removed,
            "removed the working folders of environment builds whose console was stopped"
        );
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::environment::{Catalog, Resolved};

    #[tokio::test]
    async fn a_mounted_build_outlives_the_grace_and_goes_once_nobody_holds_it() {
        let (_db, pool) = crate::server::db::scratch().await;
        let store = tempfile::tempdir().unwrap();
        let build = store.path().join("aaaa1111");
        std::fs::create_dir(&build).unwrap();
        std::fs::write(build.join("lock.json"), "[]").unwrap();
        let catalog = Arc::new(StoreCatalog::new(store.path().to_owned()));
        let collector = Collector {
            running: Arc::default(),
            unused_since: Mutex::default(),
            grace: Duration::ZERO,
            catalog: catalog.clone(),
        };
        // A provider holds the build (a run in flight on it).
        let Ok(Resolved::Ready(mount)) = catalog.resolve("old@aaaa1111") else {
            panic!("the build resolves");
        };

        assert_eq!(collector.collect(&pool, store.path()).await, 0);
        assert!(
            build.exists(),
            "no grace is short enough to take a build from a run"
        );
        drop(mount);
        assert_eq!(collector.collect(&pool, store.path()).await, 1);
        assert!(!build.exists());
    }

    #[test]
    fn a_dead_builds_folder_goes_and_a_live_ones_stays() {
        let store = tempfile::tempdir().unwrap();
        let live = store.path().join(format!("{}abc", work_prefix("0123abcd")));
        let dead = store
            .path()
            .join(format!("{WORK_PREFIX}0123abcd-{}-1-xyz", u32::MAX - 7));
        let build = store.path().join("0123abcd");
        for dir in [&live, &dead, &build] {
            std::fs::create_dir(dir).unwrap();
        }

        assert_eq!(sweep_abandoned(store.path(), true), 1);

        assert!(live.exists() && build.exists());
        assert!(!dead.exists());
        // In a shared store only age tells: a fresh folder of anyone stays.
        std::fs::create_dir(&dead).unwrap();
        assert_eq!(sweep_abandoned(store.path(), false), 0);
    }
}
