//! The signed-in administrator, as the UI and the request guards see it.

use serde::{Deserialize, Serialize};

/// An authenticated administrator. The auth gate puts one into each request's extensions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminInfo {
    pub id: i64,
    pub username: String,
    /// Signed in with a generated password: every page but the Account page waits for a new one.
    #[serde(default)]
    pub must_change_password: bool,
    /// `auto`, `light` or `dark`.
    #[serde(default)]
    pub theme: String,
    /// `auto` (the browser's language), `en` or `zh-CN`.
    #[serde(default)]
    pub locale: String,
}

/// The Account page: the admin, their sessions (this one first marked), and the theme.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub admin: AdminInfo,
    pub sessions: Vec<SessionInfo>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub current: bool,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: String,
    pub last_seen_at: String,
}

/// One administrator on the Administrators page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminSummary {
    pub id: i64,
    pub username: String,
    pub must_change_password: bool,
    pub disabled: bool,
    pub last_login_at: Option<String>,
    pub created_at: String,
}

/// The one-time outcome of a form post on the Account or Administrators page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccountFlash {
    /// `(class, text)` of a notice.
    Notice(String, String),
    /// A password was generated for `username`: shown once, here.
    OneTimePassword { username: String, password: String },
    /// A form was refused: the message goes beside `field` (`current`, `new`, `confirm`,
    /// `username`), and `value` is what was typed there (never a password).
    Refused {
        field: String,
        message: String,
        #[serde(default)]
        value: String,
    },
}

/// The languages an admin may choose (each named in itself).
pub const LANGUAGES: [(&str, &str); 3] = [
    ("auto", "Auto / 自动"),
    ("en", "English"),
    ("zh-CN", "简体中文"),
];

/// The themes an admin may choose.
pub const THEMES: [(&str, &str); 3] = [
    ("auto", "Follow the system"),
    ("light", "Light"),
    ("dark", "Dark"),
];
