//! The gateway from the shell: `providers`, `configure`, `exec` and `api-key`. Each takes the
//! server's `--data-dir` / `--database-url` and opens the same database and secret key; a
//! running server notices settings saved here on its next run (`SandboxService::refresh`).

use std::{io::Read, path::Path};

use anyhow::{bail, Context};
use serde_json::{json, Map, Value};

use crate::{
    model::{
        execution::{
            ExecRequest, ExecStatus, Language, RequestProblem, MAX_CODE_BYTES, MAX_TIMEOUT_SECS,
        },
        schema::FORM_ERROR,
        settings::SaveOutcome,
    },
    sandbox::providers,
    server::{
        config::{ApiKeyAction, Config},
        db::{
            api_key,
            execution::Caller,
            system_setting::{self, Expected},
        },
        environments::EnvironmentService,
        sandbox::{Gate, SandboxService, PROVIDER_TYPE},
        secrets::SecretBox,
        startup::open_database,
    },
};

/// Exit codes of `exec` (also listed in `--help` and the README).
pub mod exit {
    pub const OK: i32 = 0;
    pub const PROGRAM_ERROR: i32 = 1;
    pub const BAD_INPUT: i32 = 64;
    pub const PROVIDER_FAILED: i32 = 69;
    pub const POOL_BUSY: i32 = 75;
    pub const TIMEOUT: i32 = 124;
    pub const LIMIT: i32 = 125;
    pub const MEMORY: i32 = 137;
}

async fn service(config: &Config) -> anyhow::Result<SandboxService> {
    Ok(services(config).await?.0)
}

/// The sandbox and environments services as the server has them (environments mounted), for
/// commands that run code. Nothing is built in the background.
pub(crate) async fn services(
    config: &Config,
) -> anyhow::Result<(SandboxService, EnvironmentService)> {
    crate::server::startup::require_shared_secret_key(config)?;
    let pool = open_database(config).await?;
    let secrets = SecretBox::load(&config.data_dir, config.secret_key.as_deref())
        .context("cannot load the key that encrypts stored secrets")?;
    let registry = providers::registry();
    let environments = EnvironmentService::for_config(pool.clone(), config, &registry, Vec::new())
        .await
        .context("cannot load the package environments")?;
    let sandbox = SandboxService::start_with(
        pool,
        registry,
        secrets,
        Some(environments.catalog()),
        Vec::new(),
    )
    .await
    .context("cannot load the sandbox settings")?
    .with_replica(&config.history_replica(true))
    .with_history_spool(config.data_dir.join(crate::server::startup::HISTORY_SPOOL));
    Ok((sandbox, environments))
}

/// Who the history and the audit name for what is done from the shell.
pub(crate) fn shell_caller() -> Caller {
    let name = std::env::var("SUDO_USER")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "cli".into());
    Caller::cli(&name)
}

/// The database for a command that only reads: `None` (and a note) when there is none yet.
/// Creates nothing: no data directory, no database, no secret key.
async fn read_only_database(config: &Config) -> anyhow::Result<Option<sqlx::AnyPool>> {
    let url = config.database_url();
    let pool = crate::server::db::connect_read_only(&url)
        .await
        .with_context(|| {
            format!(
                "cannot open the database {}",
                crate::server::db::redacted_url(&url)
            )
        })?;
    if pool.is_none() {
        eprintln!("No database at {url} yet: nothing is configured.");
    }
    Ok(pool)
}

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

fn guess_language(file: &Path) -> Option<Language> {
    match file.extension()?.to_str()? {
        "py" => Some(Language::Python),
        "js" | "mjs" | "cjs" => Some(Language::Javascript),
        _ => None,
    }
}

/// The bytes of a program, at most one past [`MAX_CODE_BYTES`]: enough to tell it is too
/// large without loading all of it.
fn read_capped(source: impl Read) -> std::io::Result<Vec<u8>> {
    let mut code = Vec::new();
    source
        .take(MAX_CODE_BYTES as u64 + 1)
        .read_to_end(&mut code)?;
    Ok(code)
}

/// What `exec` exits with for a result status.
pub fn exit_code_for(status: ExecStatus, program_exit: Option<i32>) -> i32 {
    match status {
        ExecStatus::Success => exit::OK,
        ExecStatus::ProgramError => program_exit
            .filter(|c| (1..=255).contains(c))
            .unwrap_or(exit::PROGRAM_ERROR),
        ExecStatus::Timeout => exit::TIMEOUT,
        ExecStatus::MemoryLimit => exit::MEMORY,
        ExecStatus::OutputLimit | ExecStatus::ProcessLimit | ExecStatus::EgressLimit => exit::LIMIT,
        ExecStatus::PoolBusy => exit::POOL_BUSY,
        ExecStatus::ProviderError => exit::PROVIDER_FAILED,
    }
}

pub struct ExecArgs<'a> {
    pub file: &'a Path,
    pub language: Option<&'a str>,
    pub args: Option<&'a str>,
    pub timeout: Option<u32>,
    pub json: bool,
}

pub async fn exec(config: &Config, a: ExecArgs<'_>) -> anyhow::Result<i32> {
    let usage = |message: String| -> anyhow::Result<i32> {
        eprintln!("sandbox-console exec: {message}");
        Ok(exit::BAD_INPUT)
    };
    // Read no more than one byte past the limit: a huge file is refused, not loaded.
    let from_stdin = a.file == Path::new("-");
    let source = if from_stdin {
        "the program on standard input".to_owned()
    } else {
        a.file.display().to_string()
    };
    let bytes = if from_stdin {
        read_capped(std::io::stdin().lock())
            .context("cannot read the program from standard input")?
    } else {
        match std::fs::File::open(a.file).and_then(read_capped) {
            Ok(bytes) => bytes,
            Err(e) => return usage(format!("cannot read {source}: {e}")),
        }
    };
    let too_large =
        format!("{source} is larger than {MAX_CODE_BYTES} bytes, the limit for a program");
    // Judged by size before it is decoded: a cut may fall inside a character.
    if bytes.len() > MAX_CODE_BYTES {
        return usage(too_large);
    }
    let code = match String::from_utf8(bytes) {
        Ok(code) => code,
        Err(e) => return usage(format!("cannot read {source}: {e}")),
    };
    let language = match a.language {
        Some(name) => match name.parse() {
            Ok(language) => language,
            Err(message) => return usage(message),
        },
        None => match guess_language(a.file) {
            Some(language) => language,
            None => return usage(
                "cannot tell the language from the file name; pass --language python|javascript"
                    .into(),
            ),
        },
    };
    let arguments = match a.args.map(serde_json::from_str::<Value>) {
        None => Map::new(),
        Some(Ok(Value::Object(map))) => map,
        Some(Ok(_)) => {
            return usage("--args must be a JSON object, e.g. '{\"name\": \"Ada\"}'".into())
        }
        Some(Err(e)) => return usage(format!("--args is not valid JSON: {e}")),
    };
    let request = ExecRequest {
        language,
        code,
        arguments,
        timeout_secs: a.timeout,
    };
    match request.check() {
        Ok(()) => {}
        Err(RequestProblem::CodeTooLarge { .. }) => return usage(too_large),
        Err(RequestProblem::TimeoutOutOfRange { .. }) => {
            return usage(format!(
                "--timeout must be a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}"
            ))
        }
        Err(other) => return usage(other.to_string()),
    }
    let service = std::sync::Arc::new(service(config).await?);
    let caller = shell_caller();
    let outcome = service.execute(&request, &caller).await;
    // A one-shot command: whatever the provider opened for this run (a container) goes now.
    service.shutdown().await;
    let run = match outcome {
        Ok(run) => run,
        Err(error) => {
            if a.json {
                println!("{}", json!({ "error": error.to_string() }));
            }
            eprintln!("sandbox-console exec: {error}");
            return Ok(match error {
                crate::sandbox::Error::PoolBusy { .. } => exit::POOL_BUSY,
                crate::sandbox::Error::Unsupported(_) | crate::sandbox::Error::Request(_) => {
                    exit::BAD_INPUT
                }
                _ => exit::PROVIDER_FAILED,
            });
        }
    };
    let provider = run.provider.clone();
    let result = run.into_shown();
    let code = exit_code_for(result.status, result.exit_code);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(code);
    }
    print!("{}", result.stdout);
    eprint!("{}", result.stderr);
    if result.result.present {
        println!("{}", result.result.value);
    }
    eprintln!(
        "[{} · {} ms · {} · exit code {}{}]",
        result.status.id(),
        result.wall_time_ms,
        provider,
        result
            .exit_code
            .map_or("none".to_owned(), |c| c.to_string()),
        if result.artifacts.is_empty() {
            String::new()
        } else {
            format!(" · {} artifact(s): use --json", result.artifacts.len())
        }
    );
    Ok(code)
}

pub async fn api_key(config: &Config, action: ApiKeyAction) -> anyhow::Result<i32> {
    if matches!(action, ApiKeyAction::List) {
        if let Some(pool) = read_only_database(config).await? {
            list_keys(&pool).await?;
            pool.close().await;
        }
        return Ok(exit::OK);
    }
    let pool = open_database(config).await?;
    let actor = shell_caller().actor().to_string();
    let code = match action {
        ApiKeyAction::Create { name, scope } => {
            let name = crate::model::api_key::check_name(&name).map_err(anyhow::Error::msg)?;
            let created = api_key::create(&pool, &name, &scope, &actor, None)
                .await
                .context("cannot create the API key")?;
            let scopes: Vec<_> = created.info.scopes.iter().map(|s| s.id()).collect();
            eprintln!(
                "Created the API key '{}' (scopes: {}). It is shown only now:",
                created.info.name,
                scopes.join(", ")
            );
            println!("{}", created.key);
            exit::OK
        }
        ApiKeyAction::List => {
            list_keys(&pool).await?;
            exit::OK
        }
        ApiKeyAction::Revoke { name } => {
            let live = api_key::list(&pool)
                .await?
                .into_iter()
                .find(|k| k.name == name.trim() && k.revoked_at.is_none());
            match live {
                Some(key) => match api_key::revoke(&pool, key.id)
                    .await
                    .context("cannot revoke the API key")?
                {
                    Some(_) => {
                        println!("Revoked the API key '{}'.", key.name);
                        exit::OK
                    }
                    // Revoked by someone else between the two statements.
                    None => {
                        eprintln!("The API key {name:?} was revoked already.");
                        exit::BAD_INPUT
                    }
                },
                None => {
                    eprintln!("No live API key is named {name:?}.");
                    exit::BAD_INPUT
                }
            }
        }
    };
    pool.close().await;
    Ok(code)
}

async fn list_keys(pool: &sqlx::AnyPool) -> anyhow::Result<()> {
    for key in api_key::list(pool).await? {
        let scopes: Vec<_> = key.scopes.iter().map(|s| s.id()).collect();
        println!(
            "{:<24} {:<14} {:<16} created {} by {}; last used {}{}",
            key.name,
            key.prefix,
            scopes.join(","),
            key.created_at,
            key.created_by,
            key.last_used_at.as_deref().unwrap_or("never"),
            key.revoked_at
                .map(|at| format!("; REVOKED {at}"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_status() {
        assert_eq!(exit_code_for(ExecStatus::Success, Some(0)), 0);
        assert_eq!(exit_code_for(ExecStatus::ProgramError, Some(3)), 3);
        assert_eq!(exit_code_for(ExecStatus::ProgramError, None), 1);
        assert_eq!(exit_code_for(ExecStatus::Timeout, None), 124);
        assert_eq!(exit_code_for(ExecStatus::MemoryLimit, None), 137);
    }

    #[test]
    fn sets_need_a_key_and_an_equals_sign() {
        let values = parse_sets(&["a=1".into(), "b==x".into()]).unwrap();
        assert_eq!(values["a"], "1");
        assert_eq!(values["b"], "=x");
        assert!(parse_sets(&["novalue".into()]).is_err());
        assert!(parse_sets(&["=1".into()]).is_err());
    }
}
