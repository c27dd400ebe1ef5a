//! Server functions about the installation itself.

mod overview;
pub use overview::*;
