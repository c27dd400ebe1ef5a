//! The ssr-only host. Doors (HTTP handlers and middleware) are in [`routes`]; everything else
//! here is a service that takes plain values (a pool, headers, a request model) and never
//! sees `AppState` or a router: [`sandbox`] (the sandbox service), [`auth`], [`db`]
//! (repositories), [`history`], [`metrics`], [`secrets`]. [`startup`] builds the
//! application, [`state`] holds what the doors share, [`serve`] is the accept loop.

pub mod artifacts;
pub mod auth;
pub mod cli;
mod client_address;
pub mod clock;
pub mod config;
pub mod db;
pub mod descriptors;
pub mod environments;
pub mod flash;
pub mod history;
pub mod history_spool;
pub mod history_writer;
pub mod login_limits;
pub mod metrics;
mod per_address;
pub mod routes;
pub mod sandbox;
pub mod secrets;
pub mod serve;
pub mod session_limits;
pub mod sessions;
pub mod startup;
pub mod state;
pub mod telemetry;
