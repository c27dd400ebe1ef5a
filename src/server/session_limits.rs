//! The caps on sandbox sessions (the console's command-line settings).

use clap::Args;

/// How many sandbox sessions may be open, and for how long.
#[derive(Args, Clone, Debug)]
pub struct SessionLimits {
    /// Sandbox sessions open at once on this console, all keys together (past it: 429).
    #[arg(
        long = "sandbox-sessions-max",
        env = "SANDBOX_CONSOLE_SANDBOX_SESSIONS_MAX",
        default_value_t = 16,
        global = true
    )]
    pub max_total: usize,
    /// Sandbox sessions one API key may have open at once (past it: 429).
    #[arg(
        long = "sandbox-sessions-per-key",
        env = "SANDBOX_CONSOLE_SANDBOX_SESSIONS_PER_KEY",
        default_value_t = 4,
        global = true
    )]
    pub max_per_key: usize,
    /// A sandbox session unused for this many seconds is closed.
    #[arg(
        long = "sandbox-session-idle-secs",
        env = "SANDBOX_CONSOLE_SANDBOX_SESSION_IDLE_SECS",
        default_value_t = 600,
        global = true
    )]
    pub idle_secs: u64,
    /// The longest a sandbox session may live (a caller may ask for less, never more).
    #[arg(
        long = "sandbox-session-lifetime-secs",
        env = "SANDBOX_CONSOLE_SANDBOX_SESSION_LIFETIME_SECS",
        default_value_t = 3600,
        global = true
    )]
    pub lifetime_secs: u64,
}
