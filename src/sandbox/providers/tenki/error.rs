//! The `tenki` provider's own failures: a gRPC status from one of Tenki's calls, turned into
//! the console's error with its cause kept (a refused key and a busy service have their own).

use std::time::Duration;

use tonic::{Code, Status};

use super::KIND;
use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub(super) enum TenkiError {
    #[error("Tenki answered {what} with {code:?}: {message}")]
    Rpc {
        what: &'static str,
        code: Code,
        message: String,
    },
    #[error("Tenki named no data plane for session {session}")]
    NoDataPlane { session: String },
    #[error("no Tenki session {id} is open")]
    NotOpen { id: String },
    #[error("{0}")]
    Setup(String),
}

impl From<TenkiError> for Error {
    fn from(error: TenkiError) -> Self {
        Error::provider(KIND, error)
    }
}

/// A call's failure as the console reports it.
pub(super) fn failed(what: &'static str, status: Status) -> Error {
    match status.code() {
        Code::Unauthenticated | Code::PermissionDenied => Error::Unauthenticated(format!(
            "Tenki refused the API key ({what}): {}",
            status.message()
        )),
        // Quota and rate limits: the caller may come back later.
        Code::ResourceExhausted => Error::PoolBusy {
            retry_after: Duration::from_secs(5),
            detail: None,
        },
        Code::Unavailable
            if status.message().contains("transport") || status.message().contains("connect") =>
        {
            Error::Unreachable(format!("Tenki ({what}): {}", status.message()))
        }
        code => TenkiError::Rpc {
            what,
            code,
            message: status.message().to_owned(),
        }
        .into(),
    }
}
