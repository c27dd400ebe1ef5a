//! The signed-in administrator, as the UI and the request guards see it.

use serde::{Deserialize, Serialize};

/// An authenticated administrator. The auth gate puts one into each request's extensions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminInfo {
    pub id: i64,
    pub username: String,
}
