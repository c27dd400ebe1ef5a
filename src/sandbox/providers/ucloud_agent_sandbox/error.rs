//! The `ucloud_agent_sandbox` provider's own failures (its control plane's are E2B's: see
//! `e2b::control`), converted into `sandbox::Error` with their cause kept.

use super::KIND;
use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub(super) enum UcloudError {
    #[error("the UCloud sandbox answered {what} with HTTP {status}: {excerpt}")]
    Envd {
        what: String,
        status: u16,
        excerpt: String,
    },
    #[error("the UCloud sandbox's process stream is not Connect JSON: {excerpt}")]
    Stream { excerpt: String },
    #[error("no UCloud sandbox {id} is open")]
    NotOpen { id: String },
}

impl From<UcloudError> for Error {
    fn from(error: UcloudError) -> Self {
        Error::provider(KIND, error)
    }
}
