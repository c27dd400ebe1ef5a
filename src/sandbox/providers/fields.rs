//! Settings fields every provider that runs code itself has, with one range and one wording:
//! the form and the validation stay the same from provider to provider.

use serde_json::json;

use crate::model::schema::{FieldKind, FieldSpec};

const MIB: i64 = 1024 * 1024;

/// A whole number from `min` to `max`.
pub fn integer(min: i64, max: i64) -> FieldKind {
    FieldKind::Integer {
        min: Some(min),
        max: Some(max),
    }
}

/// `timeout_secs`, 1..600; `killed` says what the deadline kills.
pub fn timeout_secs(default: u32, killed: &str) -> FieldSpec {
    FieldSpec::new("timeout_secs", integer(1, 600), "Timeout (seconds)")
        .describe(&format!(
            "Wall-clock limit of one run; {killed} is killed when it passes."
        ))
        .default_value(json!(default))
}

/// `memory_mb`, 32..16384.
pub fn memory_mb(default: u32, description: &str) -> FieldSpec {
    FieldSpec::new("memory_mb", integer(32, 16_384), "Memory (MB)")
        .describe(description)
        .default_value(json!(default))
}

/// `max_output_bytes`, 1 KiB..64 MiB, for stdout and stderr each.
pub fn max_output_bytes(default: u64, description: &str) -> FieldSpec {
    FieldSpec::new(
        "max_output_bytes",
        integer(1024, 64 * MIB),
        "Max output (bytes)",
    )
    .describe(description)
    .default_value(json!(default))
}

/// `max_artifacts`, 0..50, and `max_artifact_bytes`, 1 B..100 MiB.
pub fn artifacts(max_count: u32, max_bytes: u64, bytes_description: &str) -> [FieldSpec; 2] {
    [
        FieldSpec::new("max_artifacts", integer(0, 50), "Max artifacts")
            .describe("How many files from ./artifacts/ come back with a result.")
            .default_value(json!(max_count)),
        FieldSpec::new(
            "max_artifact_bytes",
            integer(1, 100 * MIB),
            "Max artifact size (bytes)",
        )
        .describe(bytes_description)
        .default_value(json!(max_bytes)),
    ]
}

/// `queue_wait_secs`, 0..300; `what` is what a run waits for.
pub fn queue_wait_secs(default: u32, what: &str) -> FieldSpec {
    FieldSpec::new("queue_wait_secs", integer(0, 300), "Queue wait (seconds)")
        .describe(&format!(
            "How long a run waits for {what} before it is refused as pool_busy \
             (the API answers 429 with Retry-After)."
        ))
        .default_value(json!(default))
}

/// `environment`: which package environment every sandbox mounts read-only. Blank is the
/// console's default environment; `none` the bare interpreter.
pub fn environment() -> FieldSpec {
    FieldSpec::new("environment", FieldKind::String, "Environment")
        .describe(
            "Package environment mounted read-only into every sandbox (see Environments). Leave \
             blank for the default environment; 'none' runs the bare interpreter. Changing it \
             replaces the warm sandboxes.",
        )
        .placeholder("default environment")
        .default_value(json!(""))
}

/// Resolves the `environment` field through the console's environments; an unknown name is
/// the field's error.
pub fn resolve_environment(
    check: &mut super::config_check::ConfigCheck<'_>,
    context: &crate::sandbox::environment::BuildContext,
) -> crate::sandbox::environment::Resolved {
    use crate::sandbox::environment::Resolved;
    let mut resolved = Resolved::Bare;
    check.check("environment", |c| {
        resolved = context.environments.resolve(&c.text("environment"))?;
        Ok(())
    });
    resolved
}
