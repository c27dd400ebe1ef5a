//! The `e2b` provider's own failures, one variant per operation, converted into
//! `sandbox::Error` with their cause kept.

use super::KIND;
use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub(super) enum E2bError {
    #[error("{service} answered {what} with HTTP {status}: {excerpt}")]
    Api {
        service: &'static str,
        what: String,
        status: u16,
        excerpt: String,
    },
    #[error("{service}'s answer to {what} is not a sandbox: {excerpt}")]
    NotASandbox {
        service: &'static str,
        what: String,
        excerpt: String,
        source: serde_json::Error,
    },
    #[error("no E2B sandbox {id} is open")]
    NotOpen { id: String },
    #[error(
        "the E2B sandbox {id} is gone (HTTP {status}; its timeout may have passed): {excerpt}"
    )]
    Gone {
        id: String,
        status: u16,
        excerpt: String,
    },
    #[error("E2B's code interpreter answered HTTP {status}: {excerpt}")]
    Interpreter { status: u16, excerpt: String },
    #[error("E2B's execution stream has a line that is not JSON: {excerpt}")]
    StreamLine {
        excerpt: String,
        source: serde_json::Error,
    },
}

impl From<E2bError> for Error {
    fn from(error: E2bError) -> Self {
        Error::provider(KIND, error)
    }
}
