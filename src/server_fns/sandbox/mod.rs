//! Server functions of the sandbox-settings page: read, save, test connection, trial run.

mod get_settings;
mod run_trial;
mod save;
mod take_flash;
mod test_connection;

pub use get_settings::*;
pub use run_trial::*;
pub use save::*;
pub use take_flash::*;
pub use test_connection::*;

#[cfg(feature = "ssr")]
fn form_values(
    values: std::collections::HashMap<String, String>,
) -> serde_json::Map<String, serde_json::Value> {
    values
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect()
}

/// The sandbox-settings page, showing `kind`'s form.
pub fn page_url(kind: &str) -> String {
    if kind.is_empty() {
        PAGE.to_owned()
    } else {
        format!("{PAGE}?provider={kind}")
    }
}

/// Where the sandbox-settings page lives.
pub const PAGE: &str = "/admin/sandbox-settings";
