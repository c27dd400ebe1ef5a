//! Every provider that runs code on this host returns a program's whole output up to the cap,
//! and past it says `output_limit` (2026-12-06 probe, R2-2: under gVisor a 100 KB Python
//! `print` came back as exactly 65,537 bytes, `success`). 100 KB, 1 MB and over the cap, from
//! Python and JavaScript, on stdout and on stderr, on local, docker runc and docker runsc.

use serde_json::{json, Map};

use crate::{docker_provider, helpers::run_once};
use sandbox_console::{
    model::execution::{ExecRequest, ExecStatus, Language},
    sandbox::{providers, SandboxProvider},
};

const MIB: usize = 1024 * 1024;
/// A cap above 1 MB, so that 1 MB comes back whole.
const CAP: usize = 2 * MIB;

fn program(language: Language, stream: &str, size: usize) -> String {
    match language {
        Language::Python => format!(
            "import sys\ndef main():\n    sys.{stream}.write('x' * {size})\n    return {size}\n"
        ),
        Language::Javascript => format!(
            "function main() {{ process.{stream}.write('x'.repeat({size})); return {size}; }}\n"
        ),
    }
}

async fn check(name: &str, provider: &dyn SandboxProvider) {
    for language in [Language::Python, Language::Javascript] {
        for stream in ["stdout", "stderr"] {
            for size in [100_000, MIB, CAP + 100_000] {
                let request = ExecRequest {
                    language,
                    code: program(language, stream, size),
                    arguments: Map::new(),
                    timeout_secs: Some(30),
                };
                let result = run_once(provider, &request).await.unwrap();
                let out = if stream == "stdout" {
                    &result.stdout
                } else {
                    &result.stderr
                };
                let what = format!("{name} {language} {stream} {size}");
                // The program's own bytes lead the stream (a message after them may follow).
                let xs = out.bytes().take_while(|b| *b == b'x').count();
                if size <= CAP {
                    assert_eq!(
                        result.status,
                        ExecStatus::Success,
                        "{what}: {}",
                        result.stderr.len()
                    );
                    assert_eq!(xs, size, "{what}: the whole output");
                    assert_eq!(result.result.value, json!(size), "{what}");
                } else {
                    assert_eq!(
                        result.status,
                        ExecStatus::OutputLimit,
                        "{what}: cut, and says so"
                    );
                    assert!(
                        (CAP - 64 * 1024..=CAP).contains(&xs),
                        "{what}: {xs} bytes kept"
                    );
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_output_up_to_the_cap_and_a_typed_cut_past_it_on_every_runtime() {
    let local = providers::local::build(
        json!({"max_output_bytes": CAP, "environment": "none", "timeout_secs": 30, "memory_mb": 512})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    check("local", local.as_ref()).await;
    for runtime in docker_provider::RUNTIMES {
        let provider = docker_provider::provider(
            runtime,
            json!({"max_output_bytes": CAP, "timeout_secs": 30, "memory_mb": 512, "pool_size": 1}),
        );
        check(&format!("docker {runtime}"), provider.as_ref()).await;
        provider.shutdown().await;
    }
}
