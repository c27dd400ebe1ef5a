//! `sandbox-console exec`: a program run through the active provider from the shell, its
//! result printed and its status turned into the exit code.

use std::{io::Read, path::Path};

use anyhow::Context;
use serde_json::{json, Map, Value};

use super::{
    exit,
    shared::{service, shell_caller},
};
use crate::{
    model::execution::{
        ExecRequest, ExecStatus, Language, RequestProblem, MAX_CODE_BYTES, MAX_TIMEOUT_SECS,
    },
    server::config::Config,
};

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
}
