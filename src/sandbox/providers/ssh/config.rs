//! The `ssh` provider's settings: RAGFlow's fields (its keys accepted as aliases), the typed
//! config, and the one validating `build()`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{keys, known_hosts::KnownHosts, SshProvider, KIND};
use crate::{
    model::schema::{ConfigSchema, FieldGroup, FieldKind, FieldSpec},
    sandbox::{
        providers::{config_check::ConfigCheck, fields},
        Error, SandboxProvider,
    },
};

const MIB: u64 = 1024 * 1024;

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SshConfig {
    pub host: String,
    pub port: u16,
    pub username: String,
    pub password: String,
    pub private_key: String,
    pub passphrase: String,
    pub known_hosts: String,
    pub python_bin: String,
    pub node_bin: String,
    pub work_dir: String,
    pub timeout_secs: u32,
    pub memory_mb: u32,
    pub max_output_bytes: u64,
    pub max_artifacts: u32,
    pub max_artifact_bytes: u64,
}

impl Default for SshConfig {
    fn default() -> Self {
        SshConfig {
            host: String::new(),
            port: 22,
            username: String::new(),
            password: String::new(),
            private_key: String::new(),
            passphrase: String::new(),
            known_hosts: String::new(),
            python_bin: "python3".into(),
            node_bin: "node".into(),
            work_dir: "/tmp".into(),
            timeout_secs: 30,
            memory_mb: 512,
            max_output_bytes: MIB,
            max_artifacts: 20,
            max_artifact_bytes: 10 * MIB,
        }
    }
}

/// Written by hand: the password, key and passphrase never reach a log line.
impl std::fmt::Debug for SshConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("password_set", &!self.password.is_empty())
            .field("private_key_set", &!self.private_key.is_empty())
            .field("work_dir", &self.work_dir)
            .finish_non_exhaustive()
    }
}

pub fn schema() -> ConfigSchema {
    let d = SshConfig::default();
    let [max_artifacts, max_artifact_bytes] = fields::artifacts(
        d.max_artifacts,
        d.max_artifact_bytes,
        "Largest file from ./artifacts/ fetched back over SFTP.",
    );
    let deployment = |spec: FieldSpec| spec.group(FieldGroup::Deployment);
    ConfigSchema {
        fields: vec![
            deployment(FieldSpec::new("host", FieldKind::String, "Host"))
                .describe(
                    "The machine that runs the programs. Isolation is whatever its account \
                     allows: programs run as that user, with its files, processes and network.",
                )
                .placeholder("192.168.1.10")
                .destination()
                .required(),
            deployment(FieldSpec::new("port", fields::integer(1, 65_535), "Port"))
                .describe("Its SSH port.")
                .default_value(json!(d.port))
                .destination()
                .required(),
            deployment(FieldSpec::new("username", FieldKind::String, "Username"))
                .describe("The account programs run as; give it nothing it does not need.")
                .placeholder("sandbox")
                .destination()
                .required(),
            deployment(FieldSpec::new("password", FieldKind::Secret, "Password"))
                .describe("The account's password, sent to this host only.")
                .choice("password"),
            deployment(FieldSpec::new(
                "private_key",
                FieldKind::SecretText,
                "Private key",
            ))
            .describe(
                "An OpenSSH, PKCS#8 or PEM (RSA) private key: Ed25519, ECDSA or RSA. Tried \
                     before the password when both are set.",
            )
            .placeholder("-----BEGIN OPENSSH PRIVATE KEY-----")
            .choice("private_key"),
            deployment(FieldSpec::new(
                "passphrase",
                FieldKind::Secret,
                "Key passphrase",
            ))
            .describe("Only when the private key is encrypted.")
            .choice("private_key"),
            deployment(FieldSpec::new(
                "known_hosts",
                FieldKind::Multiline,
                "Known hosts",
            ))
            .describe(
                "The host's public key in known_hosts form (ssh-keyscan prints it), or the \
                     path of a known_hosts file on the console's machine. A host whose key is \
                     not here is refused; the refusal shows the key it offered.",
            )
            .placeholder("[192.168.1.10]:22 ssh-ed25519 AAAA…")
            .destination(),
            FieldSpec::new("python_bin", FieldKind::String, "Python binary")
                .describe("The Python interpreter on the host: a command name or an absolute path.")
                .default_value(json!(d.python_bin)),
            FieldSpec::new("node_bin", FieldKind::String, "Node.js binary")
                .describe(
                    "The Node.js interpreter on the host: a command name or an absolute path.",
                )
                .default_value(json!(d.node_bin)),
            FieldSpec::new("work_dir", FieldKind::String, "Work folder")
                .describe(
                    "An absolute folder on the host, writable by the account. Each run gets a \
                     private folder inside it, removed when the run ends.",
                )
                .default_value(json!(d.work_dir)),
            fields::timeout_secs(d.timeout_secs, "the run's whole process group on the host")
                .alias("timeout"),
            fields::memory_mb(
                d.memory_mb,
                "What one Python run may allocate (its data segment, set with ulimit); past it \
                 the run ends with memory_limit. Node.js runs are not limited.",
            )
            .alias("max_memory_mb"),
            fields::max_output_bytes(
                d.max_output_bytes,
                "stdout and stderr are each cut at this size while they stream; the run is then \
                 killed and reports output_limit.",
            ),
            max_artifacts,
            max_artifact_bytes,
        ],
    }
}

pub fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, Error> {
    Ok(Arc::new(build_provider(raw)?))
}

/// Validates stored or submitted values and builds the provider, every bad field at once:
/// a sign-in method, a key that decodes, known hosts that parse, interpreters and a folder
/// that can be written into the remote command without becoming anything else.
pub fn build_provider(raw: &Map<String, Value>) -> Result<SshProvider, Error> {
    let mut check = ConfigCheck::new(KIND, &schema(), raw);
    let mut key = None;
    let mut known = KnownHosts::default();
    check.check("host", |c| check_host(&c.text("host")));
    check.check("username", |c| {
        check_word(&c.text("username"), "A user name")
    });
    if check.submitted("password").is_empty() && check.submitted("private_key").is_empty() {
        check.check("password", |_| {
            Err("Enter a password or a private key.".into())
        });
    }
    let passphrase = check.submitted("passphrase").to_owned();
    check.check_if_set("private_key", |text| {
        key = Some(keys::load(text, &passphrase)?);
        Ok(())
    });
    check.check_if_set("known_hosts", |text| {
        known = KnownHosts::load(text)?;
        Ok(())
    });
    for field in ["python_bin", "node_bin"] {
        check.check(field, |c| check_program(&c.text(field)));
    }
    check.check("work_dir", |c| check_folder(&c.text("work_dir")));
    let config: SshConfig = check.finish()?;
    Ok(SshProvider::new(config, key.map(Arc::new), known))
}

fn check_host(host: &str) -> Result<(), String> {
    let plain = !host.is_empty()
        && !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'));
    if plain {
        Ok(())
    } else {
        Err("Enter a host name or an IP address, e.g. 192.168.1.10.".into())
    }
}

fn check_word(text: &str, what: &str) -> Result<(), String> {
    if !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@'))
    {
        Ok(())
    } else {
        Err(format!(
            "{what} has letters, digits and . - _ @ only, and does not start with -."
        ))
    }
}

/// An interpreter: a command name or an absolute path, one word that cannot become an option.
fn check_program(text: &str) -> Result<(), String> {
    let plain = !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | '+'));
    if plain {
        Ok(())
    } else {
        Err("Enter a command name or an absolute path (letters, digits, . - _ / +).".into())
    }
}

fn check_folder(text: &str) -> Result<(), String> {
    let plain = text.starts_with('/')
        && !text.contains("/../")
        && !text.ends_with("/..")
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | '+'));
    if plain {
        Ok(())
    } else {
        Err("Enter an absolute folder, e.g. /tmp (letters, digits, . - _ / +).".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::testkit;

    #[test]
    fn every_schema_field_deserializes_into_the_config() {
        let given = Map::from_iter([
            ("host".to_owned(), json!("10.0.0.5")),
            ("username".to_owned(), json!("runner")),
            ("password".to_owned(), json!("pw")),
        ]);

        let config: SshConfig = testkit::schema_matches_config(&schema(), &given).unwrap();

        assert_eq!(config.port, 22);
        assert_eq!(config.work_dir, "/tmp");
    }

    #[test]
    fn ragflow_keys_apply_and_bad_fields_are_each_named() {
        let raw = json!({
            "host": "-oProxyCommand=x", "username": "a b", "port": 22, "timeout": 45,
            "python_bin": "python3 -c", "work_dir": "tmp", "private_key": "not a key",
            "known_hosts": "nonsense",
        });

        let canonical = schema()
            .canonical(raw.as_object().cloned().unwrap())
            .unwrap();
        let Err(Error::ConfigInvalid { errors }) = build(&canonical) else {
            panic!("accepted")
        };

        assert_eq!(canonical["timeout_secs"], 45, "RAGFlow's key");
        for field in [
            "host",
            "username",
            "python_bin",
            "work_dir",
            "private_key",
            "known_hosts",
        ] {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
    }

    #[test]
    fn a_password_or_a_key_is_needed() {
        let raw = json!({ "host": "h", "username": "u" });

        let Err(Error::ConfigInvalid { errors }) = build(raw.as_object().unwrap()) else {
            panic!("accepted")
        };

        assert_eq!(errors["password"], "Enter a password or a private key.");
    }
}
