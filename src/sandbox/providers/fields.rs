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

/// The network fields of a provider that runs code on this host: `network` (none or
/// allow-list), `allowed_hosts`, `static_hosts`, `max_egress_bytes`, `ca_certificates`.
pub fn network() -> [FieldSpec; 5] {
    use crate::{
        model::schema::{FieldGroup, SelectOption},
        sandbox::egress::{NetworkConfig, ALLOW_LIST, NONE},
    };
    let d = NetworkConfig::default();
    [
        FieldSpec::new(
            "network",
            FieldKind::Select {
                options: vec![
                    SelectOption {
                        value: NONE.into(),
                        label: "None: only a loopback interface".into(),
                    },
                    SelectOption {
                        value: ALLOW_LIST.into(),
                        label: "Allow-list: the hosts below, nothing else".into(),
                    },
                ],
            },
            "Network",
        )
        .describe(
            "None: sandboxes have no network. Allow-list: every connection goes through the \
             console, which lets through only the hosts listed (DNS, TCP and TLS checked by \
             name; private, loopback and cloud-metadata addresses refused unless mapped under \
             Static hosts); each run's connections are in its history.",
        )
        .default_value(json!(d.network))
        .group(FieldGroup::Network),
        FieldSpec::new("allowed_hosts", FieldKind::Multiline, "Allowed hosts")
            .describe(
                "One a line: host, host:port or *.example.com (one label or more). Ports are \
                 80 and 443 unless given. A connection must name the host it looked up: TLS by \
                 its server name, plain HTTP in every request's Host (kept-alive and pipelined \
                 ones too); ports 80 and 443 take nothing else. What travels inside TLS is not \
                 read.",
            )
            .placeholder("pypi.org\n*.githubusercontent.com\napi.example.com:8443")
            .default_value(json!(d.allowed_hosts))
            .group(FieldGroup::Network),
        FieldSpec::new("static_hosts", FieldKind::Multiline, "Static hosts")
            .describe(
                "One 'name address' a line, resolved before public DNS: names for internal \
                 services. An address here may be private; the name must still be allowed.",
            )
            .placeholder("files.internal 10.0.0.12")
            .default_value(json!(d.static_hosts))
            .group(FieldGroup::Network),
        FieldSpec::new(
            "max_egress_bytes",
            integer(1024, 10 * 1024 * MIB),
            "Max traffic per run (bytes)",
        )
        .describe("Bytes both ways one run may move; past it, its connections are cut and the run reports egress_limit.")
        .default_value(json!(d.max_egress_bytes))
        .group(FieldGroup::Network),
        FieldSpec::new("ca_certificates", FieldKind::Multiline, "Extra CA certificates")
            .describe(
                "PEM certificates programs trust besides the system's (an internal CA): given \
                 to them through SSL_CERT_FILE, REQUESTS_CA_BUNDLE and NODE_EXTRA_CA_CERTS.",
            )
            .placeholder("-----BEGIN CERTIFICATE-----")
            .default_value(json!(d.ca_certificates))
            .group(FieldGroup::Network),
    ]
}

/// Checks the network fields, each error on its own field (the policy itself is built from
/// the typed config: [`crate::sandbox::egress::NetworkConfig::policy`]).
pub fn check_network(check: &mut super::config_check::ConfigCheck<'_>) {
    use crate::sandbox::egress::{self, policy, ALLOW_LIST};
    let allow_list = check.text("network") == ALLOW_LIST;
    check.check("allowed_hosts", |c| {
        let rules = policy::parse_allowed(&c.text("allowed_hosts"))?;
        if allow_list && rules.is_empty() {
            return Err("List at least one host, or set Network to none.".into());
        }
        Ok(())
    });
    check.check("static_hosts", |c| {
        policy::parse_static(&c.text("static_hosts")).map(|_| ())
    });
    check.check("ca_certificates", |c| {
        egress::check_certificates(&c.text("ca_certificates"))
    });
}

/// The allow-list (with its sandboxes' files) of a config whose network fields passed
/// [`check_network`]; `None` without network.
pub fn network_egress(
    network: &crate::sandbox::egress::NetworkConfig,
    context: &crate::sandbox::environment::BuildContext,
) -> Result<Option<crate::sandbox::egress::Egress>, crate::sandbox::Error> {
    let policy =
        network
            .policy(&context.console)
            .map_err(|e| crate::sandbox::Error::ConfigInvalid {
                errors: [("allowed_hosts".to_owned(), e)].into(),
            })?;
    policy
        .map(|policy| crate::sandbox::egress::Egress::new(policy, &network.ca_certificates))
        .transpose()
}
