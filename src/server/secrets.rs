//! Secrets at rest: provider secret fields are sealed with AES-256-GCM before they reach the
//! database. The key comes from `SANDBOX_CONSOLE_SECRET_KEY` (32 bytes, base64), or else from
//! `<data-dir>/secret.key`, generated on first start with mode 0600.

use std::{io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use aes_gcm::{
    aead::{Aead, AeadCore, KeyInit, OsRng},
    Aes256Gcm, Key, Nonce,
};
use anyhow::Context;
use base64::{engine::general_purpose::STANDARD as BASE64, Engine};

/// Prefix of a sealed value, so a stored value says whether it is sealed and how.
const PREFIX: &str = "enc:v1:";
const KEY_FILE: &str = "secret.key";

/// Refuses a key that is no key: every byte the same (all zero, as a placeholder or a
/// `head -c 32 /dev/zero` gives). A random key has that chance 2^-248.
fn usable(key: &[u8; 32], source: &str) -> anyhow::Result<()> {
    if key.iter().all(|b| *b == key[0]) {
        anyhow::bail!(
            "{source} is not a usable key (all its 32 bytes are the same): generate one with \
             `openssl rand -base64 32`"
        );
    }
    Ok(())
}

#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(<key hidden>)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("a stored secret cannot be decrypted: the secret key changed or the value is damaged")]
    Undecryptable,
}

impl SecretBox {
    pub fn from_key(key: &[u8; 32]) -> Self {
        SecretBox {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)),
        }
    }

    /// The key from `env_key` (base64), else from the key file in `data_dir`, created if missing.
    pub fn load(data_dir: &Path, env_key: Option<&str>) -> anyhow::Result<Self> {
        if let Some(text) = env_key {
            let bytes = BASE64
                .decode(text.trim())
                .context("SANDBOX_CONSOLE_SECRET_KEY is not base64")?;
            let key: [u8; 32] = bytes.try_into().map_err(|_| {
                anyhow::anyhow!("SANDBOX_CONSOLE_SECRET_KEY must decode to 32 bytes")
            })?;
            usable(&key, "SANDBOX_CONSOLE_SECRET_KEY")?;
            return Ok(Self::from_key(&key));
        }
        let path = data_dir.join(KEY_FILE);
        if !path.exists() {
            let key = Aes256Gcm::generate_key(OsRng);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            file.write_all(BASE64.encode(key).as_bytes())?;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let bytes = BASE64
            .decode(text.trim())
            .with_context(|| format!("{} is not base64", path.display()))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| anyhow::anyhow!("{} must hold 32 bytes", path.display()))?;
        usable(&key, &path.display().to_string())?;
        Ok(Self::from_key(&key))
    }

    pub fn is_sealed(value: &str) -> bool {
        value.starts_with(PREFIX)
    }

    pub fn seal(&self, plaintext: &str) -> String {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let ciphertext = self
            .cipher
            .encrypt(&nonce, plaintext.as_bytes())
            .expect("AES-GCM encrypts any input");
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ciphertext);
        format!("{PREFIX}{}", BASE64.encode(sealed))
    }

    pub fn open(&self, sealed: &str) -> Result<String, SecretError> {
        let bytes = sealed
            .strip_prefix(PREFIX)
            .and_then(|b| BASE64.decode(b).ok())
            .ok_or(SecretError::Undecryptable)?;
        if bytes.len() < 12 {
            return Err(SecretError::Undecryptable);
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let plaintext = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| SecretError::Undecryptable)?;
        String::from_utf8(plaintext).map_err(|_| SecretError::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn sealed_values_open_with_the_same_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = SecretBox::load(dir.path(), None).unwrap();

        let sealed = secrets.seal("s3cr3t token");

        assert!(SecretBox::is_sealed(&sealed));
        assert!(!sealed.contains("s3cr3t"));
        assert_ne!(
            sealed,
            secrets.seal("s3cr3t token"),
            "a fresh nonce each time"
        );
        assert_eq!(secrets.open(&sealed).unwrap(), "s3cr3t token");
        let other = SecretBox::from_key(&[7; 32]);
        assert!(other.open(&sealed).is_err());
    }

    #[test]
    fn the_generated_key_file_is_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = SecretBox::load(dir.path(), None).unwrap();
        let sealed = first.seal("x");

        let again = SecretBox::load(dir.path(), None).unwrap();

        assert_eq!(again.open(&sealed).unwrap(), "x");
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_key_from_the_environment_must_be_32_bytes_of_base64() {
        let dir = tempfile::tempdir().unwrap();
        assert!(SecretBox::load(dir.path(), Some("not base64!")).is_err());
        assert!(SecretBox::load(dir.path(), Some(&BASE64.encode([1u8; 16]))).is_err());
        let random: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
        assert!(SecretBox::load(dir.path(), Some(&BASE64.encode(random))).is_ok());
        // No key at all: the probe's all-zero key, and any key of one repeated byte.
        for byte in [0u8, 1, 0xff] {
            let refused = SecretBox::load(dir.path(), Some(&BASE64.encode([byte; 32])));
            assert!(refused
                .unwrap_err()
                .to_string()
                .contains("not a usable key"));
        }
        assert!(!dir.path().join(KEY_FILE).exists());
    }
}
