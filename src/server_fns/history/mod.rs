//! Server functions of the execution-history pages: the filtered list, one run, the settings.

mod detail;
mod list;
mod save_settings;
mod take_flash;

pub use detail::*;
pub use list::*;
pub use save_settings::*;
pub use take_flash::*;

/// Where the history page lives.
pub const PAGE: &str = "/admin/history";
