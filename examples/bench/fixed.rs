//! The bench's own providers, which run nothing and answer one fixed success: `noop` answers at
//! once (the gateway's own cost), `held` holds each run for [`HELD_FOR`] in one of
//! [`HELD_SLOTS`] slots per console (a console's run capacity, as local's run slots or a docker
//! pool are; a run waits for a slot, at most [`SLOT_WAIT`]).

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use sandbox_console::{
    model::{
        execution::{ExecRequest, ExecStatus, ExecutionResult, Language, ReturnValue},
        provider::{HealthReport, ProviderInfo},
        schema::ConfigSchema,
    },
    sandbox::{registry::ProviderKind, Error, Instance, SandboxProvider},
};
use serde_json::{json, Map};

/// Runs one console holds at once with `held`.
pub const HELD_SLOTS: usize = 4;
/// How long `held` holds each run.
pub const HELD_FOR: Duration = Duration::from_millis(20);
/// A run waits this long at most for a slot.
const SLOT_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Fixed {
    info: ProviderInfo,
    /// Runs at once, when limited.
    slots: Option<tokio::sync::Semaphore>,
    hold: Duration,
}

fn noop_info() -> ProviderInfo {
    ProviderInfo {
        kind: "noop".into(),
        name: "No-op".into(),
        description: "Answers at once without running anything.".into(),
        tags: vec![],
    }
}

fn held_info() -> ProviderInfo {
    ProviderInfo {
        kind: "held".into(),
        name: "Held".into(),
        description: "Holds each run for a fixed time in one of a fixed number of slots.".into(),
        tags: vec![],
    }
}

/// The `noop` provider kind.
pub fn noop_kind() -> ProviderKind {
    ProviderKind {
        info: noop_info,
        schema: ConfigSchema::default,
        build: |_, _| {
            Ok(Arc::new(Fixed {
                info: noop_info(),
                slots: None,
                hold: Duration::ZERO,
            }))
        },
    }
}

/// The `held` provider kind.
pub fn held_kind() -> ProviderKind {
    ProviderKind {
        info: held_info,
        schema: ConfigSchema::default,
        build: |_, _| {
            Ok(Arc::new(Fixed {
                info: held_info(),
                slots: Some(tokio::sync::Semaphore::new(HELD_SLOTS)),
                hold: HELD_FOR,
            }))
        },
    }
}

#[async_trait]
impl SandboxProvider for Fixed {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }
    fn languages(&self) -> &[Language] {
        &Language::ALL
    }
    async fn health(&self) -> HealthReport {
        HealthReport {
            healthy: true,
            message: String::new(),
            details: Map::new(),
        }
    }
    async fn create_instance(&self, language: Language) -> Result<Instance, Error> {
        Ok(Instance {
            id: self.info.kind.clone(),
            language,
            metadata: Map::new(),
        })
    }
    async fn execute(&self, _: &Instance, _: &ExecRequest) -> Result<ExecutionResult, Error> {
        let _slot = match &self.slots {
            Some(slots) => Some(
                tokio::time::timeout(SLOT_WAIT, slots.acquire())
                    .await
                    .map_err(|_| Error::PoolBusy {
                        retry_after: Duration::from_secs(1),
                        detail: None,
                    })?
                    .map_err(|_| Error::Backend("the slots were closed".into()))?,
            ),
            None => None,
        };
        if !self.hold.is_zero() {
            tokio::time::sleep(self.hold).await;
        }
        Ok(ExecutionResult {
            status: ExecStatus::Success,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(0),
            wall_time_ms: self.hold.as_millis() as u64,
            result: ReturnValue::of(json!(1)),
            artifacts: vec![],
            queue_wait_ms: None,
            metadata: Map::new(),
            egress: None,
        })
    }
    async fn destroy_instance(&self, _: Instance) -> Result<(), Error> {
        Ok(())
    }
}
