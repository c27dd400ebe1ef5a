//! One-time messages across a redirect: a plain form post stores its outcome in the session,
//! and the page it redirects to takes it (and so removes it).

use serde::{de::DeserializeOwned, Serialize};
use tower_sessions::Session;

pub async fn put<T: Serialize>(
    session: &Session,
    key: &str,
    value: &T,
) -> Result<(), tower_sessions::session::Error> {
    session.insert(key, value).await
}

pub async fn take<T: DeserializeOwned>(
    session: &Session,
    key: &str,
) -> Result<Option<T>, tower_sessions::session::Error> {
    session.remove(key).await
}
