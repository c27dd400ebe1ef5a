//! Server functions about the installation itself: the dashboard and the overview.

mod dashboard;
mod overview;

pub use dashboard::*;
pub use overview::*;
