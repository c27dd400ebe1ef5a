//! The settings audit as the console shows it: who changed which keys of which setting, when.
//! Values never appear, only key names, so secrets cannot leak through it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    pub actor: String,
    pub setting: String,
    pub provider: Option<String>,
    /// `save` or `activate`.
    pub action: String,
    pub changed_keys: Vec<String>,
    pub created_at: String,
}

/// One page of the audit, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// 1-based.
    pub page: u32,
    pub pages: u32,
    pub total: i64,
}

/// Entries per page.
pub const PAGE_SIZE: u32 = 25;
