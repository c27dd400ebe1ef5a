//! Reusable UI pieces.

pub mod choice_tabs;
pub mod confirm;
pub mod connection_report;
pub mod error_view;
pub mod field_control;
pub mod layout;
pub mod provider_form;
pub mod setting_versions;
pub mod trial_panel;
