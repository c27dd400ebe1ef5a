//! The one error type of the provider layer. A program that fails is not an error: it is an
//! `ExecutionResult` with a status. These are failures of the provider or of its setup.

use std::time::Duration;

use crate::model::{
    execution::{Language, RequestProblem},
    schema::FieldErrors,
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown provider kind {kind:?}; available: {}", available.join(", "))]
    UnknownKind {
        kind: String,
        available: Vec<String>,
    },
    #[error("the provider configuration is invalid ({} field(s))", errors.len())]
    ConfigInvalid { errors: FieldErrors },
    #[error("the provider cannot be reached: {0}")]
    Unreachable(String),
    #[error("the provider refused the credentials: {0}")]
    Unauthenticated(String),
    #[error("the provider did not answer within {0:?}")]
    Timeout(Duration),
    #[error("every sandbox is busy; retry in {retry_after:?}{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    PoolBusy {
        retry_after: Duration,
        /// What the provider knows of its pool (a warm pool's ready sandboxes), for the message.
        detail: Option<String>,
    },
    #[error("this provider does not run {0}")]
    Unsupported(Language),
    #[error("the provider failed: {0}")]
    Backend(String),
    /// A provider's own failure, with its cause kept (each provider has a private error
    /// enum, one variant per remote operation, converted into this).
    #[error("the provider failed: {source}")]
    Provider {
        kind: &'static str,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The request is outside the limits every run meets; nothing was run.
    #[error("the request was refused: {0}")]
    Request(#[from] RequestProblem),
    #[error("no sandbox provider is active: save valid settings for one in the sandbox settings")]
    NoActiveProvider,
    /// The provider was replaced (its settings were saved) while the run waited for a
    /// sandbox: nothing ran, and the run may go to the provider that replaced it.
    #[error("the provider was replaced while the run waited for a sandbox")]
    Retired,
    /// The console is stopping: the run was refused, or cancelled after the shutdown grace.
    #[error("the console is shutting down")]
    ShuttingDown,
    /// The provider runs each program in a fresh sandbox and cannot hold one for a session.
    #[error("the {0} provider runs stateless only: it cannot keep a session")]
    Stateless(String),
}

impl Error {
    /// A provider's own failure, its cause kept for the log.
    pub fn provider(
        kind: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Provider {
            kind,
            source: Box::new(source),
        }
    }

    /// A config error on one field, for provider rules beyond the schema's type checks.
    pub fn field(key: &str, message: impl Into<String>) -> Self {
        Error::ConfigInvalid {
            errors: FieldErrors::from([(key.to_owned(), message.into())]),
        }
    }
}
