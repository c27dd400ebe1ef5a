//! What can go wrong with a claim, one variant per step, and what each means to a run.

use std::time::Duration;

use crate::sandbox::{providers::http, Error};

use super::KIND;

#[derive(Debug, thiserror::Error)]
pub enum KubernetesError {
    /// The settings do not give a usable client (file, URL, certificate, no pod).
    #[error("cannot sign in to the Kubernetes API: {0}")]
    Credentials(String),
    /// The API server said no: 401, or 403 with the verb and resource it named.
    #[error("the Kubernetes API refused to {verb} {resource}: {message}")]
    Forbidden {
        verb: &'static str,
        resource: &'static str,
        message: String,
    },
    #[error("the Kubernetes API did not accept the credentials: {0}")]
    Unauthorized(String),
    /// Another answer than the one expected to a call.
    #[error("{call}: the Kubernetes API answered {code}: {message}")]
    Api {
        call: &'static str,
        code: u16,
        message: String,
    },
    /// No answer at all.
    #[error("{call}: the Kubernetes API cannot be reached: {message}")]
    Unreachable { call: &'static str, message: String },
    /// The claim failed for good (its warm pool or template is missing, it expired...).
    #[error("the claim {claim} failed: {reason}: {message}")]
    ClaimFailed {
        claim: String,
        reason: String,
        message: String,
    },
    /// Not Ready in time.
    #[error("the claim was not Ready within {waited:?}; the warm pool {pool}")]
    NotReady { waited: Duration, pool: String },
    /// The pod's runtime failed the run or went away during it.
    #[error("the sandbox pod {sandbox}: {message}")]
    Runtime { sandbox: String, message: String },
}

impl KubernetesError {
    /// A failed API call, by what the server answered.
    pub fn from_api(
        call: &'static str,
        verb: &'static str,
        resource: &'static str,
        error: kube::Error,
    ) -> Self {
        match error {
            kube::Error::Api(status) if status.code == 401 => {
                KubernetesError::Unauthorized(status.message)
            }
            kube::Error::Api(status) if status.code == 403 => KubernetesError::Forbidden {
                verb,
                resource,
                message: status.message,
            },
            kube::Error::Api(status) => KubernetesError::Api {
                call,
                code: status.code,
                message: http::one_line(&status.message),
            },
            other => KubernetesError::Unreachable {
                call,
                message: http::one_line(&other.to_string()),
            },
        }
    }
}

impl From<KubernetesError> for Error {
    fn from(error: KubernetesError) -> Self {
        match error {
            KubernetesError::NotReady { waited, pool } => Error::PoolBusy {
                retry_after: Duration::from_secs(5),
                detail: Some(format!(
                    "no claim was Ready within {} s; the warm pool {pool}",
                    waited.as_secs()
                )),
            },
            KubernetesError::Unauthorized(message) => Error::Unauthenticated(message),
            KubernetesError::Unreachable { .. } => Error::Unreachable(error.to_string()),
            other => Error::provider(KIND, other),
        }
    }
}
