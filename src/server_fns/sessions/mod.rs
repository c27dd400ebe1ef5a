//! Server functions of the Sessions page: the open sandbox sessions, and closing one.

mod close;
mod list;

pub use close::*;
pub use list::*;

/// Where the Sessions page lives.
pub const PAGE: &str = "/admin/sessions";
