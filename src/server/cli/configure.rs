//! `sandbox-console providers` and `configure`: the provider kinds and their schemas, and a
//! provider's settings validated and saved from the shell. A running server notices settings
//! saved here on its next run (`SandboxService::refresh`).

use anyhow::{bail, Context};
use serde_json::{json, Map, Value};

use super::{
    exit,
    shared::{read_only_database, service, shell_caller},
};
use crate::{
    model::{schema::FORM_ERROR, settings::SaveOutcome},
    sandbox::providers,
    server::{
        config::Config,
        db::system_setting::{self, Expected},
        sandbox::{Gate, PROVIDER_TYPE},
    },
};

pub async fn providers(config: &Config, as_json: bool) -> anyhow::Result<i32> {
    let registry = providers::registry();
    let active = match read_only_database(config).await? {
        Some(pool) => {
            let stored = system_setting::get(&pool, PROVIDER_TYPE)
                .await
                .context("cannot read the active provider")?;
            pool.close().await;
            stored
                .and_then(|s| s.value.as_str().map(str::to_owned))
                .unwrap_or_default()
        }
        None => String::new(),
    };
    let mut listed = Vec::new();
    for kind in registry.kinds() {
        let info = (kind.info)();
        let schema = (kind.schema)();
        if as_json {
            listed.push(json!({
                "kind": info.kind, "name": info.name, "description": info.description,
                "tags": info.tags, "active": info.kind == active, "schema": schema,
            }));
            continue;
        }
        let mark = if info.kind == active { " (active)" } else { "" };
        println!(
            "{}{mark} — {}\n  {}",
            info.kind, info.name, info.description
        );
        for field in &schema.fields {
            let default = field
                .default
                .as_ref()
                .map(|d| format!(" [default {d}]"))
                .unwrap_or_default();
            let required = if field.required { " required" } else { "" };
            let kind = serde_json::to_value(&field.kind)
                .ok()
                .and_then(|k| k.get("type").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            println!(
                "    {:<22} {kind}{required}{default}\n    {:<22} {}",
                field.key, "", field.label
            );
        }
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
    }
    Ok(exit::OK)
}

/// `KEY=VALUE` pairs as strings: the schema types them (as it does form posts).
fn parse_sets(sets: &[String]) -> anyhow::Result<Map<String, Value>> {
    sets.iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_owned(), Value::String(value.to_owned())))
            }
            _ => bail!("--set takes KEY=VALUE, got {pair:?}"),
        })
        .collect()
}

pub async fn configure(
    config: &Config,
    kind: &str,
    sets: &[String],
    from_env: bool,
    activate: bool,
) -> anyhow::Result<i32> {
    let service = service(config).await?;
    let Some(schema) = service.schema_of(kind) else {
        let known: Vec<_> = service
            .provider_infos()
            .into_iter()
            .map(|i| i.kind)
            .collect();
        bail!("unknown provider {kind:?}; available: {}", known.join(", "));
    };
    let mut values = service.public_config(kind).await?;
    let mut from = Vec::new();
    if from_env {
        for field in &schema.fields {
            let set: Vec<(String, String)> = field
                .env_names(kind)
                .into_iter()
                .filter_map(|name| std::env::var(&name).ok().map(|v| (name, v)))
                .collect();
            match set.as_slice() {
                [] => {}
                [(name, value)] => {
                    values.insert(field.key.clone(), Value::String(value.clone()));
                    from.push(format!("{} from {name}", field.key));
                }
                several => bail!(
                    "{} all set {kind}'s {}; nothing was saved. Set one of them.",
                    several
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    field.key
                ),
            }
        }
        // A variable with this provider's prefix that names no setting is a typo (or a
        // RAGFlow name we do not share): refuse it rather than ignore it.
        let prefix = crate::model::schema::env_prefix(kind);
        let known: Vec<String> = schema
            .fields
            .iter()
            .flat_map(|f| f.env_names(kind))
            .collect();
        let mut stray: Vec<String> = std::env::vars()
            .map(|(name, _)| name)
            .filter(|name| name.starts_with(&prefix) && !known.contains(name))
            .collect();
        if !stray.is_empty() {
            stray.sort();
            bail!(
                "{} name no {kind} setting; nothing was saved. The variables read are {prefix}<KEY> for: {}",
                stray.join(", "),
                schema.describe_keys()
            );
        }
    }
    for (key, value) in parse_sets(sets)? {
        let Some(field) = schema.field_named(&key) else {
            bail!(
                "{kind} has no setting {key:?}; nothing was saved. Its settings: {}",
                schema.describe_keys()
            );
        };
        values.insert(field.key.clone(), value);
    }
    let actor = shell_caller().actor();
    match service
        .save(&actor, kind, values, Expected::Any, activate, Gate::Anyway)
        .await?
    {
        SaveOutcome::Saved {
            version, active, ..
        } => {
            for line in from {
                eprintln!("  {line}");
            }
            println!(
                "Saved the {kind} settings (version {version}){}.",
                if active {
                    "; it is the active provider"
                } else {
                    ""
                }
            );
            Ok(exit::OK)
        }
        SaveOutcome::Invalid { errors } => {
            eprintln!("Nothing was saved; fix these settings:");
            for (key, message) in errors {
                if key == FORM_ERROR {
                    eprintln!("  {message}");
                } else {
                    eprintln!("  {key}: {message}");
                }
            }
            Ok(exit::BAD_INPUT)
        }
        SaveOutcome::Conflict { message } => bail!(message),
        // The CLI saves whatever the health check says (Gate::Anyway).
        SaveOutcome::Unhealthy { health, .. } => {
            bail!(
                "nothing was saved: the health check failed: {}",
                health.message
            )
        }
        SaveOutcome::Kept { id } => {
            println!("Kept the {kind} settings as version #{id}, not applied.");
            Ok(exit::OK)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_need_a_key_and_an_equals_sign() {
        let values = parse_sets(&["a=1".into(), "b==x".into()]).unwrap();
        assert_eq!(values["a"], "1");
        assert_eq!(values["b"], "=x");
        assert!(parse_sets(&["novalue".into()]).is_err());
        assert!(parse_sets(&["=1".into()]).is_err());
    }
}
