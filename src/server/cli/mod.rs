//! The doors from the shell: every command but `serve`. Each takes the server's `--data-dir` /
//! `--database-url` and opens the same database and secret key as the server.

pub mod admin;
pub mod api_key;
pub mod configure;
pub mod env;
pub mod exec;
pub mod probe;
pub(crate) mod shared;

/// Exit codes of the commands (`exec`'s are also listed in `--help` and the README).
pub mod exit {
    pub const OK: i32 = 0;
    pub const PROGRAM_ERROR: i32 = 1;
    pub const BAD_INPUT: i32 = 64;
    pub const PROVIDER_FAILED: i32 = 69;
    pub const POOL_BUSY: i32 = 75;
    pub const TIMEOUT: i32 = 124;
    pub const LIMIT: i32 = 125;
    pub const MEMORY: i32 = 137;
}
