//! Server functions of the sandbox-settings page: read, save, test connection, trial run.

mod get_settings;
mod run_trial;
mod save;
mod test_connection;

pub use get_settings::*;
pub use run_trial::*;
pub use save::*;
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
