//! Server functions of the API-keys page: list, create (the key shown once), revoke.

mod create;
mod list;
mod revoke;
mod take_flash;

pub use create::*;
pub use list::*;
pub use revoke::*;
pub use take_flash::*;

/// Where the API-keys page lives.
pub const PAGE: &str = "/admin/api-keys";
