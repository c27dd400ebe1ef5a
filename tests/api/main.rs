//! Integration tests: each one starts the real application on port 0 with its own SQLite file.

mod admin_cli;
mod assets;
mod auth;
mod database;
mod health;
mod helpers;
mod pages;
mod sandbox_settings;
mod system_setting;
