//! The sign-in rate limits (the console's command-line settings; the rule is in
//! `auth::rate_limit`).

use std::time::Duration;

use clap::Args;

use crate::server::auth::rate_limit::LoginLimiter;

/// How many failed sign-ins are allowed, from where, and for how long they count.
#[derive(Args, Clone, Debug)]
pub struct LoginLimits {
    /// Failed sign-ins allowed per account from one client address within the window; past
    /// it that address is locked out of that account (other addresses are not).
    #[arg(
        long = "login-max-failures",
        env = "SANDBOX_CONSOLE_LOGIN_MAX_FAILURES",
        default_value_t = 5,
        global = true
    )]
    pub max_failures: u32,
    /// Failed sign-ins allowed per account from all addresses within the window; past it,
    /// addresses the account never signed in from wait between attempts, twice as long after
    /// each further failure (up to the window).
    #[arg(
        long = "login-max-failures-per-account",
        env = "SANDBOX_CONSOLE_LOGIN_MAX_FAILURES_PER_ACCOUNT",
        default_value_t = 100,
        global = true
    )]
    pub max_failures_per_account: u32,
    /// Seconds an address waits after the first failure past the per-account ceiling; the
    /// wait doubles after each further failure, up to the window.
    #[arg(
        long = "login-account-backoff-secs",
        env = "SANDBOX_CONSOLE_LOGIN_ACCOUNT_BACKOFF_SECS",
        default_value_t = 1,
        value_parser = clap::value_parser!(u64).range(1..=3600),
        global = true
    )]
    pub account_backoff_secs: u64,
    /// Failed sign-ins allowed per client address within the window.
    #[arg(
        long = "login-max-failures-per-address",
        env = "SANDBOX_CONSOLE_LOGIN_MAX_FAILURES_PER_ADDRESS",
        default_value_t = 20,
        global = true
    )]
    pub max_failures_per_address: u32,
    /// Length of the sign-in rate-limit window, in seconds.
    #[arg(
        long = "login-window-secs",
        env = "SANDBOX_CONSOLE_LOGIN_WINDOW_SECS",
        default_value_t = 900,
        global = true
    )]
    pub window_secs: u64,
}

impl LoginLimits {
    /// The limiter these settings describe.
    pub fn limiter(&self) -> LoginLimiter {
        LoginLimiter::new(
            self.max_failures,
            self.max_failures_per_address,
            self.max_failures_per_account,
            Duration::from_secs(self.window_secs),
        )
        .with_backoff(Duration::from_secs(self.account_backoff_secs))
    }
}
