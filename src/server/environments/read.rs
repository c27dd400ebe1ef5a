//! What the pages and the API read about environments: each one with the builds that matter
//! (the one in use, the newest), which providers use it, and a build's log as it grows.

use std::time::Duration;

use serde_json::Value;

use super::EnvironmentService;
use crate::{
    model::environment::{self as model, BuildInfo, BuildLog, BuildStatus, EnvironmentInfo},
    server::db::environment::{self as db, EnvRow},
};

impl EnvironmentService {
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
            base: row.base,
            preload: row.preload,
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
    pub(super) async fn uses(&self) -> Result<Vec<(String, String)>, sqlx::Error> {
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

    /// What runs lose when a provider's Environment field goes from `from` to `to` (each a
    /// name, blank for the default, `none` for no environment): the package names `from`
    /// installs and `to` does not.
    pub async fn loss(&self, from: &str, to: &str) -> Result<Vec<String>, sqlx::Error> {
        let spec_of = |name: String| async move {
            let name = match name.trim() {
                model::NONE => return Ok::<_, sqlx::Error>(None),
                "" => match db::list(&self.pool)
                    .await?
                    .into_iter()
                    .find(|r| r.is_default)
                {
                    Some(row) => row.name,
                    None => return Ok(None),
                },
                other => other.to_owned(),
            };
            match db::get(&self.pool, &name).await? {
                Some(row) => Ok(Some(super::spec::effective(&self.pool, &row).await?)),
                None => Ok(None),
            }
        };
        let (Some(before), after) = (
            spec_of(from.to_owned()).await?,
            spec_of(to.to_owned()).await?,
        ) else {
            return Ok(Vec::new());
        };
        let after = after.unwrap_or(super::build_parts::Spec {
            python: Vec::new(),
            npm: Vec::new(),
            allow_sdists: false,
        });
        Ok(super::spec::dropped(&before, &after))
    }
}
