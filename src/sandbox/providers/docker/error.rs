//! The `docker` provider's own failures, one variant per remote operation, converted into
//! `sandbox::Error` at the trait boundary with their cause kept.

use super::{short, KIND};
use crate::sandbox::Error;

/// The provider's private errors, one per remote operation, turned into [`Error`] at the
/// trait boundary.
#[derive(Debug, thiserror::Error)]
pub(super) enum DockerError {
    #[error("cannot reach dockerd at {host}: {source}")]
    Connect {
        host: String,
        source: bollard::errors::Error,
    },
    #[error(
        "image {image:?} is not on the Docker host: pull it there from your registry, or load one saved elsewhere (docker save, then docker load)"
    )]
    ImageMissing { image: String },
    #[error("creating a container from {image:?}: {source}")]
    CreateContainer {
        image: String,
        source: bollard::errors::Error,
    },
    #[error("starting a container from {image:?} with runtime {runtime:?}: {source}")]
    StartContainer {
        image: String,
        runtime: String,
        source: bollard::errors::Error,
    },
    #[error("running the program in container {}: {source}", short(id))]
    Exec {
        id: String,
        source: bollard::errors::Error,
    },
    #[error("dockerd: {0}")]
    Daemon(bollard::errors::Error),
    #[error("{0}")]
    Protocol(String),
}

impl DockerError {
    /// The container is gone or stopped (killed behind our back, dockerd restarted).
    pub(super) fn container_gone(&self) -> bool {
        matches!(
            self,
            DockerError::Exec {
                source: bollard::errors::Error::DockerResponseServerError {
                    status_code: 404 | 409,
                    ..
                },
                ..
            }
        )
    }

    /// The daemon did not answer at all (not an error answer from it).
    pub(super) fn transport(&self) -> bool {
        let source = match self {
            DockerError::Connect { .. } => return true,
            DockerError::Exec { source, .. }
            | DockerError::Daemon(source)
            | DockerError::CreateContainer { source, .. }
            | DockerError::StartContainer { source, .. } => source,
            _ => return false,
        };
        !matches!(
            source,
            bollard::errors::Error::DockerResponseServerError { .. }
                | bollard::errors::Error::JsonDataError { .. }
                | bollard::errors::Error::JsonSerdeError { .. }
        )
    }
}

impl From<DockerError> for Error {
    fn from(error: DockerError) -> Self {
        if error.transport() {
            Error::Unreachable(error.to_string())
        } else {
            Error::provider(KIND, error)
        }
    }
}
