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
    use super::*;

    /// `ssh-keygen -t ed25519 -N s3cret`: a throwaway key, for these tests only.
    const LOCKED: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABD3ygokGn
kfd5IuEEizhi0ZAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIF3LM3+1C45I57jf
8pwvQ+lvtk0JwJ4mzm1BVD68XFi2AAAAkLKycJFhcpnZsq26e6zk7Epm7FHIULDONNnbKI
6uXYnGp9JGahiNfyV9EiFT8hUO8FdCi9S86zlgG1G1YjCNMDE6pNJM6hbeVJ5bgJKcY/Tp
gc2m03tYRw05oTX55dpn4BwBG44XrPrRU9y0Ckvl1D9VEXhfTyvjio5OvBrr4q0abawdQr
sNFFtOvJQHjVk92A==
-----END OPENSSH PRIVATE KEY-----
";
    const PUBLIC: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF3LM3+1C45I57jf8pwvQ+lvtk0JwJ4mzm1BVD68XFi2";

    #[test]
    fn an_openssh_key_loads_with_its_passphrase_only() {
        let opened = load(LOCKED, "s3cret").unwrap();
        let without = load(LOCKED, "").unwrap_err();
        let wrong = load(LOCKED, "nope").unwrap_err();

        assert!(opened
            .public_key()
            .to_openssh()
            .unwrap()
            .starts_with(PUBLIC));
        assert_eq!(without, "The key is encrypted: enter its passphrase.");
        assert_eq!(wrong, "The passphrase does not open this key.");
        assert!(load("hello", "")
            .unwrap_err()
            .starts_with("Not a private key"));
    }
}
