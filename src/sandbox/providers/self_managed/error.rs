//! The `self_managed` provider's own failures, converted into `sandbox::Error` with their
//! cause kept.

use super::KIND;
use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub(super) enum ExecutorError {
    #[error("the executor answered HTTP {status}: {excerpt}")]
    Status { status: u16, excerpt: String },
    #[error("the executor's answer is not a run result: {excerpt}")]
    NotARunResult {
        excerpt: String,
        source: serde_json::Error,
    },
    #[error("the executor could not run the code (exit code {code}, {detail}): {excerpt}")]
    CouldNotRun {
        code: i32,
        detail: String,
        excerpt: String,
    },
    #[error("the executor answered an unknown status {0:?}")]
    UnknownStatus(String),
}

impl From<ExecutorError> for Error {
    fn from(error: ExecutorError) -> Self {
        Error::provider(KIND, error)
    }
}
