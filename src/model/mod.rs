//! Wasm-safe types shared by the UI, server functions and the server: serde only, no I/O.

pub mod admin;
pub mod api_key;
pub mod audit;
pub mod dashboard;
pub mod egress;
pub mod environment;
pub mod execution;
pub mod explain;
pub mod history;
pub mod messages;
pub mod overview;
pub mod package_spec;
pub mod provider;
pub mod schema;
pub mod schema_i18n;
pub mod session;
pub mod settings;
pub mod url;

/// Pages needed for `total` items, `size` a page; at least one (an empty list is one page).
pub fn page_count(total: i64, size: u32) -> u32 {
    (total.max(1) as u64).div_ceil(u64::from(size.max(1))) as u32
}
