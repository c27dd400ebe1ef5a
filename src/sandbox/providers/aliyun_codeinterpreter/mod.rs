//! The `aliyun_codeinterpreter` provider: Alibaba Cloud AgentRun's code interpreter, called as
//! its official SDK calls it. A sandbox per run from a template (the console's default
//! template is created on first use), `POST /sandboxes/{id}/contexts/execute` with the wrapped
//! code, `DELETE /sandboxes/{id}` with the configured credentials; every data-plane request is
//! signed with AGENTRUN4-HMAC-SHA256, template calls with ACS3-HMAC-SHA256. See README.md.

mod client;
mod config;
mod error;
mod provider;
pub mod signature;
mod template;

use std::{
    collections::HashSet,
    sync::Mutex,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use reqwest::{header, Method, StatusCode};
use serde_json::{json, Map, Value};
use url::Url;

pub use config::{build, build_provider, schema, AliyunConfig, REGIONS};

use crate::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
    },
    sandbox::{
        self,
        providers::http::{self, Body},
        registry::ProviderKind,
        runner::{
            remote::{self, SnippetOutput},
            ArtifactLimits,
        },
        Error, Instance, SandboxProvider,
    },
};
use error::AgentRunError;
use signature::Signed;

pub const KIND: &str = "aliyun_codeinterpreter";
/// The template the console creates and uses when none is configured.
pub const DEFAULT_TEMPLATE: &str = "sandbox-console-code-interpreter";
const API_VERSION: &str = "2025-09-10";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much longer than the run's own time-out an execute call may take to answer.
const EXECUTE_GRACE: Duration = Duration::from_secs(10);
/// A sandbox outlives a run's 30 s cap; each run deletes its own.
const SANDBOX_IDLE_SECS: u32 = 60;
const TEMPLATE_POLL: Duration = Duration::from_secs(2);
const TEMPLATE_WAIT: Duration = Duration::from_secs(300);
const MIB: u64 = 1024 * 1024;

pub fn info() -> ProviderInfo {
    ProviderInfo {
        kind: KIND.into(),
        name: "Aliyun Code Interpreter (AgentRun)".into(),
        description: "Runs each program in a fresh Alibaba Cloud AgentRun code-interpreter \
                      sandbox; requests are signed with your AccessKey. Runs are capped at 30 s \
                      by the service."
            .into(),
        tags: vec![
            "saas".into(),
            "aliyun".into(),
            "python".into(),
            "javascript".into(),
        ],
    }
}

pub fn kind() -> ProviderKind {
    ProviderKind {
        info,
        schema,
        build: |raw, _| build(raw),
    }
}

#[derive(Debug)]
pub struct AliyunProvider {
    config: AliyunConfig,
    data: Url,
    control: Url,
    client: reqwest::Client,
    template_ready: tokio::sync::Mutex<bool>,
    open: Mutex<HashSet<String>>,
    info: ProviderInfo,
}

impl AliyunProvider {
    pub fn new(config: AliyunConfig) -> Result<Self, Error> {
        let region = config.region.trim();
        let data = match config.endpoint.trim() {
            "" => format!(
                "https://{}-ram.agentrun-data.{region}.aliyuncs.com",
                config.account_id.trim()
            ),
            url => url.to_owned(),
        };
        let control = match config.control_endpoint.trim() {
            "" => format!("https://agentrun.{region}.aliyuncs.com"),
            url => url.to_owned(),
        };
        let example = "https://agentrun.cn-hangzhou.aliyuncs.com";
        Ok(AliyunProvider {
            data: http::endpoint(&data, example).map_err(|m| Error::field("endpoint", m))?,
            control: http::endpoint(&control, example)
                .map_err(|m| Error::field("control_endpoint", m))?,
            client: http::client(KIND, REQUEST_TIMEOUT)?,
            template_ready: tokio::sync::Mutex::new(false),
            open: Mutex::new(HashSet::new()),
            config,
            info: info(),
        })
    }
}
