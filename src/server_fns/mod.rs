//! `#[server]` functions: one per file, grouped by area. Each one first checks the admin
//! session (`require_admin()`), then makes one call into the server layer.

pub mod account;
pub mod admins;
pub mod api_keys;
pub mod audit;
pub mod auth;
pub mod environments;
pub mod error;
pub mod history;
pub mod sandbox;
pub mod sessions;
pub mod system;

#[cfg(feature = "ssr")]
mod guard;
#[cfg(feature = "ssr")]
pub use guard::require_admin;

/// Server functions live under their own prefix with stable names (no hash suffix), so
/// the auth gate can answer anonymous callers with 401 and tests can call them by URL.
pub const PREFIX: &str = "/rpc";
