//! One file per page.

pub mod account;
pub mod administrators;
pub mod api_keys;
pub mod environments;
pub mod history;
pub mod login;
pub mod not_found;
pub mod overview;
pub mod sandbox_settings;
pub mod sessions;
pub mod settings_audit;
