//! An open sandbox session as the console's Sessions page shows it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: String,
    /// The API key that holds it.
    pub key_name: String,
    pub provider: String,
    pub language: String,
    pub age_secs: u64,
    pub idle_secs: u64,
    /// Until its lifetime ends.
    pub remaining_secs: u64,
    pub cells: u64,
    pub alive: bool,
}
