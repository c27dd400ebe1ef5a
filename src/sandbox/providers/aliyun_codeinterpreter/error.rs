//! The `aliyun_codeinterpreter` provider's own failures, one variant per operation,
//! converted into `sandbox::Error` with their cause kept.

use super::KIND;
use crate::sandbox::Error;

#[derive(Debug, thiserror::Error)]
pub(super) enum AgentRunError {
    #[error("AgentRun answered {what} with HTTP {status}: {detail}")]
    Api {
        what: String,
        status: u16,
        detail: String,
    },
    #[error("the AgentRun template {name:?} does not exist in {region}")]
    NoTemplate { name: String, region: String },
    #[error("the AgentRun template {name:?} is {status}")]
    TemplateFailed { name: String, status: String },
    #[error(
        "the AgentRun template {name:?} was not ready after {waited_secs} s (status {status:?})"
    )]
    TemplateNotReady {
        name: String,
        waited_secs: u64,
        status: String,
    },
    #[error("AgentRun did not create a sandbox: {excerpt}")]
    NoSandbox { excerpt: String },
    #[error("AgentRun's answer to {what} has no results: {excerpt}")]
    NoResults { what: String, excerpt: String },
}

impl From<AgentRunError> for Error {
    fn from(error: AgentRunError) -> Self {
        Error::provider(KIND, error)
    }
}
