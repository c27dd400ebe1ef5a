//! Wasm-safe types shared by the UI, server functions and the server: serde only, no I/O.

pub mod admin;
pub mod api_key;
pub mod audit;
pub mod dashboard;
pub mod execution;
pub mod history;
pub mod overview;
pub mod provider;
pub mod schema;
pub mod settings;
pub mod url;
