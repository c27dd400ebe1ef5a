//! The `ssh` provider's own failures, one variant per remote operation, each turned into the
//! console's error with its cause kept.

use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("SSH to {target}: {message}")]
    Session { target: String, message: String },
    #[error("SFTP {what} on {target}: {message}")]
    Sftp {
        target: String,
        what: String,
        message: String,
    },
    #[error("the remote command {what} on {target}: {message}")]
    Command {
        target: String,
        what: String,
        message: String,
    },
}

impl From<SshError> for Error {
    fn from(error: SshError) -> Self {
        Error::provider(super::KIND, error)
    }
}
