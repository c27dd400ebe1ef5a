//! The ssr-only host: configuration, startup, state, database, authentication and routes.

pub mod admin_cli;
pub mod admission;
pub mod api;
pub mod artifacts;
pub mod assets;
pub mod auth;
pub mod config;
pub mod db;
pub mod flash;
pub mod gateway_cli;
pub mod headers;
pub mod health;
pub mod history;
pub mod history_writer;
pub mod metrics;
pub mod rpc;
pub mod sandbox;
pub mod secrets;
pub mod serve;
pub mod startup;
pub mod state;
pub mod telemetry;
