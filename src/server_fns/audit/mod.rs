//! Server functions of the settings-audit page.

mod list;

pub use list::*;
