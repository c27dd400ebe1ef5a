//! Server functions about the signed-in administrator. Sign-in and sign-out themselves are
//! plain form endpoints (`server::routes::auth`) so they work the same with JavaScript off.

mod current_admin;
pub use current_admin::*;
