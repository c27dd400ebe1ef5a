//! Saving an environment's spec: every field checked (name, requirements, npm packages,
//! base, preloaded modules), the row written, the change audited and the catalog reloaded.

use serde_json::json;

use super::{db, model, package_spec, spec, EnvError, EnvironmentService, SaveError};
use crate::server::db::execution::Actor;

impl EnvironmentService {
    /// Creates (`expected` None) or changes an environment's spec, based on `base` ('' for
    /// none). Nothing is built here. Returns the new version and the packages (by name) the
    /// change takes away from the providers that use the environment.
    #[allow(clippy::too_many_arguments)]
    pub async fn save(
        &self,
        actor: &Actor,
        name: &str,
        python: &str,
        npm: &str,
        allow_sdists: bool,
        base: &str,
        preload: Option<&str>,
        expected: Option<i64>,
    ) -> Result<(i64, Vec<String>), SaveError> {
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
        let preload = preload.map(model::check_preload).transpose();
        let preload = preload.unwrap_or_else(|message| {
            errors.insert("preload".into(), message);
            None
        });
        let count = python.lines().count() + npm.lines().count();
        if errors.is_empty() && count > model::MAX_PACKAGES {
            errors.insert(
                "python_requirements".into(),
                format!("List at most {} packages in all.", model::MAX_PACKAGES),
            );
        }
        let base = base.trim();
        if errors.is_empty() {
            if let Err(message) = spec::check_base(&self.pool, &name, base).await {
                errors.insert("base".into(), message);
            }
        }
        if !errors.is_empty() {
            return Err(SaveError::Invalid(errors));
        }
        let before = match db::get(&self.pool, &name).await.map_err(EnvError::from)? {
            Some(row) => Some(
                spec::effective(&self.pool, &row)
                    .await
                    .map_err(EnvError::from)?,
            ),
            None => None,
        };
        let spec = db::Spec {
            python_requirements: &python,
            npm_packages: &npm,
            allow_sdists,
            base,
            preload: preload.as_deref(),
        };
        let version = db::save(&self.pool, &name, &spec, expected, actor.as_str()).await?;
        let dropped = match (
            before,
            db::get(&self.pool, &name).await.map_err(EnvError::from)?,
        ) {
            (Some(before), Some(row)) => {
                let after = spec::effective(&self.pool, &row)
                    .await
                    .map_err(EnvError::from)?;
                spec::dropped(&before, &after)
            }
            _ => Vec::new(),
        };
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
                "base": base,
                "preload": preload,
                "dropped": dropped,
            }),
        )
        .await
        .map_err(EnvError::from)?;
        self.catalog
            .reload(&self.pool)
            .await
            .map_err(EnvError::from)?;
        Ok((version, dropped))
    }
}
