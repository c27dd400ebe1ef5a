//! The provider kinds, one folder each, and the registry of those that really work.

pub mod docker;
mod fields;
pub mod local;

use crate::sandbox::registry::Registry;

/// Every provider kind this build can run, in the order the settings page shows them.
pub fn registry() -> Registry {
    Registry::new()
        .register(local::kind())
        .register(docker::kind())
}
