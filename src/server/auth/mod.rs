//! Who may do what: administrator accounts and password hashing, sessions, sign-in rate
//! limits, the Origin policy, and API keys with their scopes and rate limit. The doors that
//! use them (the gate, the sign-in form endpoints) are in `server::routes`.

pub mod account;
pub mod api_key;
pub mod origin;
pub mod password;
pub mod rate_limit;
pub mod session;
