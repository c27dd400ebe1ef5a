//! Repository for `environment`, `environment_build` and `environment_generation`. Every write
//! that changes what a name stands for bumps the generation in the same transaction.

use sqlx::{Any, AnyExecutor, AnyPool, Transaction};

use super::clock;

use crate::model::environment::{BuildInfo, BuildStatus, LockedPackage, Verification};

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("there is no environment named {0:?}")]
    Unknown(String),
    #[error("{0:?} was changed by someone else (version {1} is current); reload and try again")]
    Stale(String, i64),
    #[error("an environment named {0:?} exists already")]
    Exists(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EnvRow {
    pub name: String,
    pub python_requirements: String,
    pub npm_packages: String,
    #[sqlx(try_from = "super::Flag")]
    pub allow_sdists: bool,
    #[sqlx(try_from = "super::Flag")]
    pub is_default: bool,
    pub version: i64,
    pub ready_build: Option<i64>,
    pub updated_at: String,
    pub updated_by: String,
    /// The environment this one is based on ('' for none).
    pub base: String,
    /// The modules sandboxes started ahead preload, separated by spaces.
    pub preload: String,
}

const ENV_COLUMNS: &str = "name, python_requirements, npm_packages, allow_sdists, is_default, \
                           version, ready_build, updated_at, updated_by, base, preload";

#[derive(sqlx::FromRow)]
struct BuildRow {
    id: i64,
    environment: String,
    spec_hash: String,
    status: String,
    stage: String,
    lock: String,
    size_bytes: Option<i64>,
    verification: String,
    started_at: String,
    finished_at: Option<String>,
    started_by: String,
}

const BUILD_COLUMNS: &str = "id, environment, spec_hash, status, stage, lock, size_bytes, \
                             verification, started_at, finished_at, started_by";

impl From<BuildRow> for BuildInfo {
    fn from(row: BuildRow) -> Self {
        BuildInfo {
            id: row.id,
            environment: row.environment,
            spec_hash: row.spec_hash,
            status: BuildStatus::parse(&row.status).unwrap_or(BuildStatus::Failed),
            stage: row.stage,
            started_at: row.started_at,
            finished_at: row.finished_at,
            started_by: row.started_by,
            size_bytes: row.size_bytes,
            lock: serde_json::from_str::<Vec<LockedPackage>>(&row.lock).unwrap_or_default(),
            verification: serde_json::from_str::<Vec<Verification>>(&row.verification)
                .unwrap_or_default(),
        }
    }
}

pub async fn list(pool: &AnyPool) -> Result<Vec<EnvRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {ENV_COLUMNS} from environment order by is_default desc, name"
    ))
    .fetch_all(pool)
    .await
}

pub async fn get(db: impl AnyExecutor<'_>, name: &str) -> Result<Option<EnvRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {ENV_COLUMNS} from environment where name = $1"
    ))
    .bind(name)
    .fetch_optional(db)
    .await
}

pub async fn generation(db: impl AnyExecutor<'_>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select value from environment_generation where id = 1")
        .fetch_one(db)
        .await
}

async fn bump(tx: &mut Transaction<'_, Any>) -> Result<(), sqlx::Error> {
    sqlx::query("update environment_generation set value = value + 1 where id = 1")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The spec an environment is saved with.
pub struct Spec<'a> {
    pub python_requirements: &'a str,
    pub npm_packages: &'a str,
    pub allow_sdists: bool,
    /// The environment this one is based on ('' for none).
    pub base: &'a str,
    /// The modules to preload, separated by spaces (`None`: as stored, or the default).
    pub preload: Option<&'a str>,
}

/// Creates (`expected` = None) or updates (`expected` = the version the form showed) an
/// environment's spec. The first environment ever created becomes the default.
pub async fn save(
    pool: &AnyPool,
    name: &str,
    spec: &Spec<'_>,
    expected: Option<i64>,
    actor: &str,
) -> Result<i64, EnvError> {
    let mut tx = super::begin_write(pool).await?;
    let current = get(&mut *tx, name).await?;
    let version = match (current, expected) {
        (Some(row), Some(version)) if row.version == version => {
            let preload = spec.preload.unwrap_or(&row.preload);
            sqlx::query(
                "update environment set python_requirements = $1, npm_packages = $2, \
                 allow_sdists = $3, version = version + 1, updated_by = $4, \
                 updated_at = $5, base = $6, preload = $7 where name = $8",
            )
            .bind(spec.python_requirements)
            .bind(spec.npm_packages)
            .bind(i64::from(spec.allow_sdists))
            .bind(actor)
            .bind(clock::now_seconds())
            .bind(spec.base)
            .bind(preload)
            .bind(name)
            .execute(&mut *tx)
            .await?;
            // Providers take the new list (they are rebuilt when the generation moves).
            if preload != row.preload {
                bump(&mut tx).await?;
            }
            version + 1
        }
        (Some(row), Some(_)) => return Err(EnvError::Stale(name.to_owned(), row.version)),
        (Some(_), None) => return Err(EnvError::Exists(name.to_owned())),
        (None, Some(_)) => return Err(EnvError::Unknown(name.to_owned())),
        (None, None) => {
            let existing: i64 = sqlx::query_scalar("select count(*) from environment")
                .fetch_one(&mut *tx)
                .await?;
            let first = existing == 0;
            sqlx::query(
                "insert into environment (name, python_requirements, npm_packages, \
                 allow_sdists, is_default, updated_by, base, preload) \
                 values ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(name)
            .bind(spec.python_requirements)
            .bind(spec.npm_packages)
            .bind(i64::from(spec.allow_sdists))
            .bind(i64::from(first))
            .bind(actor)
            .bind(spec.base)
            .bind(
                spec.preload
                    .unwrap_or(crate::model::environment::DEFAULT_PRELOAD),
            )
            .execute(&mut *tx)
            .await?;
            if first {
                bump(&mut tx).await?;
            }
            1
        }
    };
    tx.commit().await?;
    Ok(version)
}

pub async fn set_default(pool: &AnyPool, name: &str) -> Result<(), EnvError> {
    let mut tx = super::begin_write(pool).await?;
    if get(&mut *tx, name).await?.is_none() {
        return Err(EnvError::Unknown(name.to_owned()));
    }
    sqlx::query("update environment set is_default = 0 where is_default = 1")
        .execute(&mut *tx)
        .await?;
    sqlx::query("update environment set is_default = 1 where name = $1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    bump(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Deletes an environment and its build rows; returns the content addresses its builds had.
pub async fn delete(pool: &AnyPool, name: &str) -> Result<Vec<String>, EnvError> {
    let mut tx = super::begin_write(pool).await?;
    if get(&mut *tx, name).await?.is_none() {
        return Err(EnvError::Unknown(name.to_owned()));
    }
    let hashes: Vec<String> = sqlx::query_scalar(
        "select distinct spec_hash from environment_build where environment = $1",
    )
    .bind(name)
    .fetch_all(&mut *tx)
    .await?;
    sqlx::query("delete from environment_build where environment = $1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    sqlx::query("delete from environment where name = $1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    bump(&mut tx).await?;
    tx.commit().await?;
    Ok(hashes)
}

pub async fn start_build(
    pool: &AnyPool,
    name: &str,
    spec_hash: &str,
    actor: &str,
    owner: &str,
) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let id = sqlx::query_scalar(
        "insert into environment_build (environment, spec_hash, status, stage, started_by, \
         heartbeat_at, owner) values ($1, $2, 'building', 'queued', $3, $4, $5) returning id",
    )
    .bind(name)
    .bind(spec_hash)
    .bind(actor)
    .bind(clock::now_seconds())
    .bind(owner)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// A build in progress: its stage and the log so far (and a sign it is alive).
pub async fn progress(pool: &AnyPool, id: i64, stage: &str, log: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update environment_build set stage = $1, log = $2, heartbeat_at = $3 \
         where id = $4 and status = 'building'",
    )
    .bind(stage)
    .bind(log)
    .bind(clock::now_seconds())
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// A build that failed: the environment keeps the build it had.
pub async fn fail_build(pool: &AnyPool, id: i64, why: &str, log: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update environment_build set status = 'failed', stage = $1, log = $2, \
         finished_at = $3 where id = $4",
    )
    .bind(why)
    .bind(log)
    .bind(clock::now_seconds())
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// A build that is ready becomes the one its environment's runs use.
pub async fn finish_build(
    pool: &AnyPool,
    id: i64,
    log: &str,
    lock: &[LockedPackage],
    size_bytes: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = super::begin_write(pool).await?;
    sqlx::query(
        "update environment_build set status = 'ready', stage = 'ready', log = $1, lock = $2, \
         size_bytes = $3, finished_at = $4 where id = $5",
    )
    .bind(log)
    .bind(serde_json::to_string(lock).unwrap_or_else(|_| "[]".into()))
    .bind(size_bytes)
    .bind(clock::now_seconds())
    .bind(id)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "update environment set ready_build = $1 \
         where name = (select environment from environment_build where id = $2)",
    )
    .bind(id)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    bump(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn set_verification(
    pool: &AnyPool,
    id: i64,
    verification: &[Verification],
) -> Result<(), sqlx::Error> {
    sqlx::query("update environment_build set verification = $1 where id = $2")
        .bind(serde_json::to_string(verification).unwrap_or_else(|_| "[]".into()))
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

pub async fn build(pool: &AnyPool, id: i64) -> Result<Option<BuildInfo>, sqlx::Error> {
    let row: Option<BuildRow> = sqlx::query_as(&format!(
        "select {BUILD_COLUMNS} from environment_build where id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(BuildInfo::from))
}

pub async fn build_log(pool: &AnyPool, id: i64) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("select log from environment_build where id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// The newest build of an environment.
pub async fn latest_build(pool: &AnyPool, name: &str) -> Result<Option<BuildInfo>, sqlx::Error> {
    let row: Option<BuildRow> = sqlx::query_as(&format!(
        "select {BUILD_COLUMNS} from environment_build where environment = $1 order by id desc limit 1"
    ))
    .bind(name)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(BuildInfo::from))
}

/// How long a build may go without a progress note before it counts as interrupted (its
/// console notes progress every second or so while it builds).
pub const BUILD_SILENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Builds left `building` by a process that stopped: they never finish now. `gone` tells, from
/// a build's owner (`boot|pid|start`), whether that process is gone: `Some(true)` for a
/// process of this host that no longer runs, `Some(false)` for one that does, `None` when it
/// cannot tell (another host, an older console); then only a build silent for
/// [`BUILD_SILENCE`] is given up. Returns how many were marked.
pub async fn abandon_unfinished(
    pool: &AnyPool,
    gone: impl Fn(&str) -> Option<bool>,
) -> Result<u64, sqlx::Error> {
    let rows: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "select id, owner, heartbeat_at from environment_build where status = 'building'",
    )
    .fetch_all(pool)
    .await?;
    let silent_since = clock::seconds_before(BUILD_SILENCE);
    let mut marked = 0;
    for (id, owner, heartbeat) in rows {
        let over = match gone(&owner) {
            Some(gone) => gone,
            None => heartbeat.is_none_or(|at| at < silent_since),
        };
        if !over {
            continue;
        }
        let done = sqlx::query(
            "update environment_build set status = 'failed', \
             stage = 'interrupted: the console stopped during the build', \
             finished_at = $1 where id = $2 and status = 'building'",
        )
        .bind(clock::now_seconds())
        .bind(id)
        .execute(pool)
        .await?;
        marked += done.rows_affected();
    }
    Ok(marked)
}

/// Content addresses still needed: the builds environments use, and builds under way.
pub async fn hashes_in_use(pool: &AnyPool) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "select spec_hash from environment_build where status = 'building' \
         or id in (select ready_build from environment where ready_build is not null)",
    )
    .fetch_all(pool)
    .await
}
