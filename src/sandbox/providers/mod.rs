//! The provider kinds, one folder each, and the registry of those that really work.

pub mod aliyun_codeinterpreter;
mod config_check;
pub mod docker;
pub mod e2b;
mod fields;
mod http;
pub mod local;
pub mod self_managed;

use crate::sandbox::registry::Registry;

/// Every provider kind this build can run, in the order the settings page shows them.
pub fn registry() -> Registry {
    Registry::new()
        .register(local::kind())
        .register(docker::kind())
        .register(self_managed::kind())
        .register(aliyun_codeinterpreter::kind())
        .register(e2b::kind())
}
