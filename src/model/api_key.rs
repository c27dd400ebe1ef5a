//! API keys as the console shows them: never the key itself, except once, right after creation.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// What a key may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Run code: `POST /api/v1/execute`, `POST /run`, `GET /api/v1/providers`.
    Execute,
    /// Read and change sandbox settings: `/api/v1/admin/sandbox/*`.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 2] = [Scope::Execute, Scope::Admin];

    pub fn id(self) -> &'static str {
        match self {
            Scope::Execute => "execute",
            Scope::Admin => "admin",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "execute" => Ok(Scope::Execute),
            "admin" => Ok(Scope::Admin),
            other => Err(format!("unknown scope {other:?}: use execute or admin")),
        }
    }
}

/// One key in the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyInfo {
    pub id: i64,
    pub name: String,
    /// The first characters of the key, enough to recognise it.
    pub prefix: String,
    pub scopes: Vec<Scope>,
    pub created_by: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    /// After this the key is refused; `None`: it never expires.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// The client address the key was last used from.
    #[serde(default)]
    pub last_used_address: Option<String>,
}

/// The longest expiry a key may be given, in days.
pub const MAX_EXPIRY_DAYS: u32 = 3650;

/// The expiry field of the create form: blank is never, else whole days from 1 to
/// [`MAX_EXPIRY_DAYS`].
pub fn check_expiry(text: &str) -> Result<Option<u32>, String> {
    match text.trim() {
        "" => Ok(None),
        text => match text.parse::<u32>() {
            Ok(days) if (1..=MAX_EXPIRY_DAYS).contains(&days) => Ok(Some(days)),
            _ => Err(format!(
                "Enter the days until the key expires, from 1 to {MAX_EXPIRY_DAYS}, or leave it blank for a key that never expires."
            )),
        },
    }
}

/// A key just created: the only time `key` exists outside its owner's hands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreatedKey {
    pub info: ApiKeyInfo,
    pub key: String,
}

/// The outcome of the last plain form post on the API-keys page, shown once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ApiKeyFlash {
    Created(CreatedKey),
    Revoked {
        name: String,
    },
    /// The form was wrong; `name` and `scopes` are what was typed, to fill the form again.
    Invalid {
        message: String,
        name: String,
        scopes: Vec<Scope>,
    },
}

/// Checks a key name: what history and audit will show as the caller.
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("Give the key a name, e.g. ragflow-prod.".into());
    }
    if name.chars().count() > 64 {
        return Err("Use at most 64 characters for the name.".into());
    }
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ' '))
    {
        return Err("Use letters, digits, spaces, '-', '_' and '.' in the name.".into());
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_checked() {
        assert_eq!(check_name("  ragflow prod "), Ok("ragflow prod".into()));
        assert!(check_name(" ").is_err());
        assert!(check_name("a/b").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
    }

    #[test]
    fn scopes_parse_case_insensitively() {
        assert_eq!("Admin".parse::<Scope>(), Ok(Scope::Admin));
        assert!("root".parse::<Scope>().is_err());
    }
}
