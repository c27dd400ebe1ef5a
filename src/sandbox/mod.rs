//! The provider layer (server only): how user code is run. Never imports axum or leptos.
//!
//! So far: the `runner`, the main() protocol every provider that runs code itself shares.

pub mod runner;
