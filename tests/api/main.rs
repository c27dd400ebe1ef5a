//! Integration tests: each one starts the real application on port 0 with its own SQLite file
//! (or, on the PostgreSQL pass, its own schema: see `helpers::POSTGRES_ENV`).

mod accounts;
mod admin_cli;
mod aliyun_provider;
mod api_keys;
mod assets;
mod auth;
mod dashboard;
mod database;
mod docker_provider;
mod e2b_provider;
mod egress;
mod egress_claims;
mod environment_builds;
mod environment_faults;
mod environments;
mod fair_limits;
#[path = "../fakes/mod.rs"]
mod fakes;
mod faults;
mod gateway;
mod gateway_cli;
mod guessing;
mod hardening;
mod health;
mod helpers;
mod history;
mod history_outage;
mod hostile_text;
mod layout;
mod metrics;
mod output_sizes;
mod package_index;
mod pages;
mod ragflow_admin;
mod ragflow_run;
mod remote_gateway;
mod remote_wrappers;
mod replicas;
mod sandbox_settings;
mod save_reaches_runs;
mod scripted;
mod self_managed_provider;
mod setting_versions;
mod settings_audit;
mod system_setting;
