//! The one error type every server function returns to the UI.

use leptos::server_fn::{
    codec::JsonEncoding,
    error::{FromServerFnError, ServerFnErrorErr},
};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    #[error("you are not signed in")]
    Unauthorized,
    /// The request itself is wrong; the message says how to fix it.
    #[error("{0}")]
    BadRequest(String),
    /// What was asked for does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Too many attempts (wrong passwords): the message says when to try again.
    #[error("{0}")]
    TooMany(String),
    /// The sandbox provider failed (unreachable, misconfigured, ...).
    #[error("{0}")]
    Provider(String),
    /// Details are logged on the server; the browser never sees internals.
    #[error("something went wrong on the server; the server log has the details")]
    Internal,
    #[error("{0}")]
    ServerFn(ServerFnErrorErr),
}

impl AppError {
    /// The HTTP status this error stands for, used by error pages and server-fn responses.
    pub fn status(&self) -> u16 {
        match self {
            AppError::Unauthorized => 401,
            AppError::BadRequest(_) => 400,
            AppError::NotFound(_) => 404,
            AppError::TooMany(_) => 429,
            AppError::Provider(_) => 502,
            AppError::Internal => 500,
            AppError::ServerFn(
                ServerFnErrorErr::Args(_) | ServerFnErrorErr::Deserialization(_),
            ) => 400,
            AppError::ServerFn(_) => 500,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::ServerFn(value)
    }
}
