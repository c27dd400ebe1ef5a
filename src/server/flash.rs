//! One-time messages across a redirect: a plain form post stores its outcome in the session,
//! and the page it redirects to takes it (and so removes it). Each page's outcome type names
//! its own session key, so a page can only take what its own forms put.

use serde::{de::DeserializeOwned, Serialize};
use tower_sessions::Session;

use crate::model::{
    admin::AccountFlash, api_key::ApiKeyFlash, environment::EnvironmentFlash,
    history::HistoryFlash, settings::SandboxFlash,
};

/// A page's one-time outcome.
pub trait Flash: Serialize + DeserializeOwned {
    /// The session key it travels under.
    const KEY: &'static str;
}

impl Flash for SandboxFlash {
    const KEY: &'static str = "sandbox_flash";
}

impl Flash for HistoryFlash {
    const KEY: &'static str = "history_flash";
}

impl Flash for ApiKeyFlash {
    const KEY: &'static str = "api_key_flash";
}

impl Flash for AccountFlash {
    const KEY: &'static str = "account_flash";
}

impl Flash for EnvironmentFlash {
    const KEY: &'static str = "environment_flash";
}

pub async fn put<T: Flash>(
    session: &Session,
    value: &T,
) -> Result<(), tower_sessions::session::Error> {
    session.insert(T::KEY, value).await
}

pub async fn take<T: Flash>(
    session: &Session,
) -> Result<Option<T>, tower_sessions::session::Error> {
    session.remove(T::KEY).await
}
