//! The provider layer (server only): how user code is run. Never imports axum or leptos.
//!
//! - [`SandboxProvider`]: the small trait every provider implements.
//! - [`registry::Registry`]: the kinds available, each with its schema and `build()`.
//! - [`runner`]: the main() protocol shared by providers that run code themselves.

pub mod egress;
pub mod environment;
mod error;
mod provider;
pub mod providers;
pub mod registry;
pub mod runner;
pub mod session;
pub mod testkit;
mod waiting;

pub use error::Error;
pub use provider::{run_once, timeout_secs, Instance, SandboxProvider};
pub use waiting::Waiting;
