//! argon2id password hashes, computed on the blocking pool so sign-ins never stall the runtime.

use std::sync::OnceLock;

use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};
use rand::{distributions::Alphanumeric, Rng};

/// Shortest password accepted for an account.
pub const MIN_LENGTH: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("the password must be at least {MIN_LENGTH} characters long")]
    TooShort,
    #[error("could not hash the password: {0}")]
    Hash(String),
}

/// Hashes a password with argon2id (the crate's default parameters, as OWASP recommends).
pub async fn hash(password: String) -> Result<String, PasswordError> {
    if password.chars().count() < MIN_LENGTH {
        return Err(PasswordError::TooShort);
    }
    tokio::task::spawn_blocking(move || hash_blocking(&password))
        .await
        .map_err(|e| PasswordError::Hash(e.to_string()))?
}

fn hash_blocking(password: &str) -> Result<String, PasswordError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Checks `password` against a stored hash. With `None` (no such user) it checks against a
/// dummy hash and fails, so an unknown username costs the same time as a wrong password.
pub async fn verify(stored_hash: Option<String>, password: String) -> bool {
    let known = stored_hash.is_some();
    let hash = stored_hash.unwrap_or_else(|| dummy_hash().to_owned());
    let matches = tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false);
    known && matches
}

/// A hash of a random password nobody knows. Computed once; call `warm_up()` at start-up.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_blocking(&generate()).expect("argon2 hashes a fresh random password"))
}

/// Computes the dummy hash off the runtime so the first unknown-user sign-in is not slower.
pub async fn warm_up() {
    let _ = tokio::task::spawn_blocking(dummy_hash).await;
}

/// A random 20-character password for first start and `admin create` without a password.
pub fn generate() -> String {
    rand::rngs::OsRng
        .sample_iter(&Alphanumeric)
        .take(20)
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_then_verify_accepts_only_the_same_password() {
        let stored = hash("correct horse".into()).await.unwrap();
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify(Some(stored.clone()), "correct horse".into()).await);
        assert!(!verify(Some(stored), "correct horsE".into()).await);
    }

    #[tokio::test]
    async fn unknown_user_never_verifies_even_with_the_dummy_password_shape() {
        assert!(!verify(None, generate()).await);
    }

    #[tokio::test]
    async fn short_passwords_are_rejected() {
        assert!(matches!(
            hash("seven77".into()).await,
            Err(PasswordError::TooShort)
        ));
    }

    #[test]
    fn generated_passwords_are_long_and_distinct() {
        let (a, b) = (generate(), generate());
        assert_eq!(a.len(), 20);
        assert_ne!(a, b);
    }
}
