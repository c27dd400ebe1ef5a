//! Administrator authentication: password hashing, sessions, sign-in rate limits, the gate
//! in front of every route (with its Origin policy), and the sign-in/sign-out form endpoints.

pub mod account;
pub mod gate;
pub mod origin;
pub mod password;
pub mod rate_limit;
pub mod routes;
pub mod session;
