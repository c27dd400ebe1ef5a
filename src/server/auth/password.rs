//! argon2id password hashes, computed on the blocking pool so sign-ins never stall the runtime,
//! and at most a few at a time: each takes about 19 MiB and a core's worth of work, so
//! hundreds of concurrent sign-ins must queue (briefly) instead of exhausting memory.

use std::{sync::OnceLock, time::Duration};

use tokio::sync::Semaphore;

use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};
use rand::{distributions::Alphanumeric, Rng};

/// Shortest password accepted for an account.
pub const MIN_LENGTH: usize = 8;

/// Hashes computed at once (two per core of a small machine).
const SLOTS: usize = 4;
/// How long a sign-in waits for a slot before it is answered "unavailable".
const SLOT_WAIT: Duration = Duration::from_secs(10);

static HASHING: Semaphore = Semaphore::const_new(SLOTS);

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("the password must be at least {MIN_LENGTH} characters long")]
    TooShort,
    #[error("could not hash the password: {0}")]
    Hash(String),
    #[error("too many passwords are being checked at once; try again")]
    Busy,
}

/// Runs `work` on the blocking pool once a hashing slot is free (waiting at most `wait`).
async fn in_slot<T: Send + 'static>(
    wait: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, PasswordError> {
    let _slot = tokio::time::timeout(wait, HASHING.acquire())
        .await
        .map_err(|_| PasswordError::Busy)?
        .map_err(|_| PasswordError::Busy)?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Hashes a password with argon2id (the crate's default parameters, as OWASP recommends).
pub async fn hash(password: String) -> Result<String, PasswordError> {
    if password.chars().count() < MIN_LENGTH {
        return Err(PasswordError::TooShort);
    }
    in_slot(SLOT_WAIT, move || hash_blocking(&password)).await?
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
/// `Err(Busy)` when no hashing slot came free in time.
pub async fn verify(stored_hash: Option<String>, password: String) -> Result<bool, PasswordError> {
    verify_within(SLOT_WAIT, stored_hash, password).await
}

async fn verify_within(
    wait: Duration,
    stored_hash: Option<String>,
    password: String,
) -> Result<bool, PasswordError> {
    let known = stored_hash.is_some();
    let hash = stored_hash.unwrap_or_else(|| dummy_hash().to_owned());
    let matches = in_slot(wait, move || {
        PasswordHash::new(&hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await?;
    Ok(known && matches)
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
        assert!(verify(Some(stored.clone()), "correct horse".into())
            .await
            .unwrap());
        assert!(!verify(Some(stored), "correct horsE".into()).await.unwrap());
    }

    #[tokio::test]
    async fn unknown_user_never_verifies_even_with_the_dummy_password_shape() {
        assert!(!verify(None, generate()).await.unwrap());
    }

    #[tokio::test]
    async fn with_every_slot_taken_a_check_gives_up_as_busy_instead_of_piling_up() {
        let held = HASHING.acquire_many(SLOTS as u32).await.unwrap();
        let outcome = verify_within(Duration::from_millis(50), None, "whatever".into()).await;
        drop(held);
        assert!(matches!(outcome, Err(PasswordError::Busy)), "{outcome:?}");
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
