//! The `local` provider's own failures, converted into `sandbox::Error` with their cause
//! kept.

use super::KIND;
use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub(super) enum LocalError {
    #[error("the run queue is closed")]
    QueueClosed,
    #[error("the run crashed: {0}")]
    Crashed(#[source] tokio::task::JoinError),
    /// The jail could not be set up or supervised; its own sentence.
    #[error("{0}")]
    Jail(String),
}

impl From<LocalError> for Error {
    fn from(error: LocalError) -> Self {
        Error::provider(KIND, error)
    }
}
