//! Tracing setup: human-readable logs on stderr, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// Logs at info for the server.
pub fn init() {
    init_with("info,sqlx=warn,tower_sessions=warn,libcgroups=error");
}

/// Logs with `default` as the filter unless `RUST_LOG` says otherwise (commands use `warn`:
/// their output is the answer, not a log).
pub fn init_with(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
