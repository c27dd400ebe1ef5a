//! The `ssh` provider's private key: OpenSSH, PKCS#8 or PEM (PKCS#1 RSA, also encrypted with
//! a passphrase) text, or the path of such a file on the console's machine (RAGFlow's form).

use russh::keys::{decode_secret_key, Error as KeyError, PrivateKey};

/// Decodes the key, or says in one sentence why it cannot be used.
pub fn load(text: &str, passphrase: &str) -> Result<PrivateKey, String> {
    let text = text.trim();
    let contents;
    let text = if text.starts_with('/') && !text.contains(char::is_whitespace) {
        contents = std::fs::read_to_string(text)
            .map_err(|e| format!("Cannot read {text} on the console's machine: {e}."))?;
        contents.as_str()
    } else {
        text
    };
    let passphrase = (!passphrase.is_empty()).then_some(passphrase);
    decode_secret_key(text, passphrase).map_err(|error| match error {
        KeyError::KeyIsEncrypted if passphrase.is_none() => {
            "The key is encrypted: enter its passphrase.".to_owned()
        }
        KeyError::CouldNotReadKey | KeyError::Decode(_) => {
            "Not a private key: paste the whole key, from its -----BEGIN line to its -----END line."
                .to_owned()
        }
        KeyError::UnsupportedKeyType { .. } | KeyError::UnknownAlgorithm(_) => {
            format!("The key cannot be used: {error}.")
        }
        // Decrypting with a wrong passphrase yields garbage: a padding or a check that fails.
        _ if passphrase.is_some() => "The passphrase does not open this key.".to_owned(),
        other => format!("The key cannot be used: {other}."),
    })
}

#[cfg(test)]
mod tests {
    use russh::keys::ssh_key::{rand_core::OsRng, Algorithm, LineEnding};

    use super::*;

    #[test]
    fn an_openssh_key_loads_with_its_passphrase_only() {
        let key = PrivateKey::random(&mut OsRng, Algorithm::Ed25519).unwrap();
        let locked = key.encrypt(&mut OsRng, "s3cret").unwrap();
        let text = locked.to_openssh(LineEnding::LF).unwrap();

        let opened = load(&text, "s3cret").unwrap();
        let without = load(&text, "").unwrap_err();
        let wrong = load(&text, "nope").unwrap_err();

        assert_eq!(opened.public_key(), key.public_key());
        assert_eq!(without, "The key is encrypted: enter its passphrase.");
        assert_eq!(wrong, "The passphrase does not open this key.");
        assert!(load("hello", "")
            .unwrap_err()
            .starts_with("Not a private key"));
    }
}
