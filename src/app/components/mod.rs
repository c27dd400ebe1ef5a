//! Reusable UI pieces.

pub mod error_view;
pub mod layout;
