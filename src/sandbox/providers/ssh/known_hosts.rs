//! The host keys the `ssh` provider trusts: OpenSSH known_hosts lines (plain, wildcard and
//! hashed host patterns; `@revoked` keys refused), given in the settings or as the path of a
//! file on the console's machine (RAGFlow's form). Nothing is learnt: a host whose key is not
//! listed is refused, and the refusal shows the key to add.

use hmac::{Hmac, Mac};
use russh::keys::{
    ssh_key::{
        known_hosts::{Entry, HostPatterns, Marker},
        HashAlg, PublicKey,
    },
    PublicKeyBase64,
};
use sha1::Sha1;

#[derive(Clone, Debug, Default)]
pub struct KnownHosts {
    entries: Vec<Entry>,
}

/// What the host key check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Trusted,
    /// No line names this host with this key type: the key it offered, as a line to add.
    Unknown {
        line: String,
        fingerprint: String,
    },
    /// A line names this host with another key of the same type: possibly an impostor.
    Changed {
        fingerprint: String,
    },
    Revoked {
        fingerprint: String,
    },
}

impl KnownHosts {
    /// Parses known_hosts text, or reads the file a single absolute path names.
    pub fn load(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.starts_with('/') && !text.contains(char::is_whitespace) {
            let contents = std::fs::read_to_string(text)
                .map_err(|e| format!("Cannot read {text} on the console's machine: {e}."))?;
            return Self::parse(&contents).map_err(|e| format!("{text}: {e}"));
        }
        Self::parse(text)
    }

    fn parse(text: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let entry = line.parse::<Entry>().map_err(|e| {
                format!(
                    "Line {} is not a known_hosts line ({e}): expected 'host key-type base64-key'.",
                    number + 1
                )
            })?;
            entries.push(entry);
        }
        Ok(KnownHosts { entries })
    }

    /// Checks the key `host:port` offered.
    pub fn verdict(&self, host: &str, port: u16, key: &PublicKey) -> Verdict {
        let name = if port == 22 {
            host.to_owned()
        } else {
            format!("[{host}]:{port}")
        };
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let mut changed = false;
        for entry in self
            .entries
            .iter()
            .filter(|e| names(e.host_patterns(), &name))
        {
            let same_key = entry.public_key().key_data() == key.key_data();
            match entry.marker() {
                Some(Marker::Revoked) if same_key => return Verdict::Revoked { fingerprint },
                Some(_) => {}
                None if same_key => return Verdict::Trusted,
                None if entry.public_key().algorithm() == key.algorithm() => changed = true,
                None => {}
            }
        }
        if changed {
            return Verdict::Changed { fingerprint };
        }
        Verdict::Unknown {
            line: format!(
                "{name} {} {}",
                key.algorithm().as_str(),
                key.public_key_base64()
            ),
            fingerprint,
        }
    }
}

/// Whether `patterns` name `host` (`host` or `[host]:port`): a negated match wins.
fn names(patterns: &HostPatterns, host: &str) -> bool {
    match patterns {
        HostPatterns::Patterns(list) => {
            let mut matched = false;
            for pattern in list {
                if let Some(negated) = pattern.strip_prefix('!') {
                    if wildcard(&negated.to_ascii_lowercase(), &host.to_ascii_lowercase()) {
                        return false;
                    }
                } else if wildcard(&pattern.to_ascii_lowercase(), &host.to_ascii_lowercase()) {
                    matched = true;
                }
            }
            matched
        }
        HostPatterns::HashedName { salt, hash } => Hmac::<Sha1>::new_from_slice(salt)
            .map(|mac| mac.chain_update(host.as_bytes()).verify_slice(hash).is_ok())
            .unwrap_or(false),
    }
}

/// OpenSSH's `*` (any run) and `?` (one character) patterns.
fn wildcard(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const OTHER: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHaLq2oxG3QzlHvkYbNjnUQXNwsUHnJxBRcGQuNmbWEe";

    fn key(text: &str) -> PublicKey {
        PublicKey::from_openssh(text).unwrap()
    }

    #[test]
    fn plain_wildcard_and_port_forms_name_the_host() {
        let known = KnownHosts::load(&format!(
            "# comment\n[10.0.0.5]:2222 {KEY}\n*.example.com,!bad.example.com {KEY}\n"
        ))
        .unwrap();

        assert_eq!(known.verdict("10.0.0.5", 2222, &key(KEY)), Verdict::Trusted);
        assert_eq!(
            known.verdict("a.example.com", 22, &key(KEY)),
            Verdict::Trusted
        );
        assert!(matches!(
            known.verdict("bad.example.com", 22, &key(KEY)),
            Verdict::Unknown { .. }
        ));
        let Verdict::Unknown { line, .. } = known.verdict("10.0.0.5", 22, &key(KEY)) else {
            panic!("port 22 is not port 2222")
        };
        assert_eq!(line, format!("10.0.0.5 {KEY}"));
    }

    #[test]
    fn another_key_for_a_known_host_is_a_change_and_a_revoked_key_is_refused() {
        let known = KnownHosts::load(&format!("h {KEY}\n@revoked r {OTHER}\nr {OTHER}\n")).unwrap();

        assert!(matches!(
            known.verdict("h", 22, &key(OTHER)),
            Verdict::Changed { .. }
        ));
        assert!(matches!(
            known.verdict("r", 22, &key(OTHER)),
            Verdict::Revoked { .. }
        ));
    }

    #[test]
    fn a_hashed_name_matches_its_host_only() {
        // `ssh-keygen -H` of "h.example.com": HMAC-SHA1 keyed with the salt.
        let salt = [7u8; 20];
        let hash = Hmac::<Sha1>::new_from_slice(&salt)
            .unwrap()
            .chain_update(b"h.example.com")
            .finalize()
            .into_bytes();
        use base64::{engine::general_purpose::STANDARD, Engine};
        let line = format!(
            "|1|{}|{} {KEY}",
            STANDARD.encode(salt),
            STANDARD.encode(hash)
        );
        let known = KnownHosts::load(&line).unwrap();

        assert_eq!(
            known.verdict("h.example.com", 22, &key(KEY)),
            Verdict::Trusted
        );
        assert!(matches!(
            known.verdict("x.example.com", 22, &key(KEY)),
            Verdict::Unknown { .. }
        ));
    }

    #[test]
    fn a_line_that_is_not_known_hosts_is_named() {
        let error = KnownHosts::load("h ssh-ed25519 AAAA\n").unwrap_err();

        assert!(
            error.starts_with("Line 1 is not a known_hosts line"),
            "{error}"
        );
    }
}
