//! Server functions of the Environments pages: list, one environment with its build log,
//! save (which starts a build), build, test, make default, delete.

mod actions;
mod list;
mod save;

pub use actions::*;
pub use list::*;
pub use save::*;

/// Where the Environments list lives.
pub const PAGE: &str = "/admin/environments";

/// An environment's own page (the list, for a name that is not a valid one).
pub fn page_of(name: &str) -> String {
    match crate::model::environment::check_name(name) {
        Ok(name) => format!("{PAGE}/{name}"),
        Err(_) => PAGE.to_owned(),
    }
}
