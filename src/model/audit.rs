//! The audit as the console shows it: who changed which keys of which setting, who tested a
//! connection to where, who signed in from where, and when. Setting values never appear, only
//! key names, so secrets cannot leak through it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    pub actor: String,
    pub setting: String,
    pub provider: Option<String>,
    /// `save`, `activate`, `test_connection`, `sign_in` or `sign_in_failed`.
    pub action: String,
    pub changed_keys: Vec<String>,
    /// What else the event records, in order: a test's `destination` and `outcome`, a
    /// sign-in's `address`.
    #[serde(default)]
    pub detail: Vec<(String, String)>,
    pub created_at: String,
}

/// Which events a view of the audit shows: changes to settings (the default), connection
/// tests, or sign-ins. Three streams, so sign-ins never bury who changed what.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditView {
    #[default]
    Changes,
    Tests,
    SignIns,
    /// Administrators, passwords, sessions and API keys.
    Accounts,
    /// Package environments: created, changed, built, made the default, deleted.
    Environments,
}

impl AuditView {
    pub const ALL: [AuditView; 5] = [
        AuditView::Changes,
        AuditView::Environments,
        AuditView::Tests,
        AuditView::SignIns,
        AuditView::Accounts,
    ];

    /// The `actions` an entry of this view has.
    pub fn actions(self) -> &'static [&'static str] {
        match self {
            AuditView::Changes => &["save", "activate", "keep", "restore"],
            AuditView::Tests => &["test_connection"],
            AuditView::SignIns => &["sign_in", "sign_in_failed"],
            AuditView::Accounts => &ACCOUNT_ACTIONS,
            AuditView::Environments => &ENVIRONMENT_ACTIONS,
        }
    }

    /// As in the page's query string (`?view=`).
    pub fn id(self) -> &'static str {
        match self {
            AuditView::Changes => "changes",
            AuditView::Tests => "tests",
            AuditView::SignIns => "sign_ins",
            AuditView::Accounts => "accounts",
            AuditView::Environments => "environments",
        }
    }

    /// The page's link to page `page` of this view (the default view is left out), keeping
    /// the actor filter.
    pub fn href(self, page: u32, actor: &str) -> String {
        let mut href = if self == AuditView::default() {
            format!("?page={page}")
        } else {
            format!("?page={page}&view={}", self.id())
        };
        if !actor.is_empty() {
            href.push_str(&format!(
                "&actor={}",
                crate::model::url::percent_encode(actor)
            ));
        }
        href
    }

    /// The CSV export of this view with the actor filter.
    pub fn export_href(self, actor: &str) -> String {
        let mut href = format!("/admin/audit/export.csv?view={}", self.id());
        if !actor.is_empty() {
            href.push_str(&format!(
                "&actor={}",
                crate::model::url::percent_encode(actor)
            ));
        }
        href
    }

    /// The view a query-string value names; anything else is the default.
    pub fn from_id(id: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|v| v.id() == id)
            .unwrap_or_default()
    }
}

/// What the Accounts view shows: administrators added, disabled, enabled or given a new
/// password; passwords changed; other sessions signed out; API keys created or revoked.
pub const ACCOUNT_ACTIONS: [&str; 8] = [
    "admin_add",
    "admin_disable",
    "admin_enable",
    "admin_password_reset",
    "password_change",
    "sessions_sign_out",
    "key_create",
    "key_revoke",
];

/// What the Environments view shows.
pub const ENVIRONMENT_ACTIONS: [&str; 5] = [
    "environment_create",
    "environment_update",
    "environment_build",
    "environment_default",
    "environment_delete",
];

/// One page of the audit, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditPage {
    #[serde(default)]
    pub view: AuditView,
    /// The actor filter (a part of the name), blank for everyone.
    #[serde(default)]
    pub actor: String,
    pub entries: Vec<AuditEntry>,
    /// 1-based.
    pub page: u32,
    pub pages: u32,
    pub total: i64,
}

/// Entries per page.
pub const PAGE_SIZE: u32 = 25;
