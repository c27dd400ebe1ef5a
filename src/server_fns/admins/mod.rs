//! Server functions of the Administrators page: list, add (a generated password, shown
//! once), disable or enable, and give a new generated password. Generated passwords must be
//! changed at the next sign-in.

mod add;
mod list;
mod reset_password;
mod set_disabled;

pub use add::*;
pub use list::*;
pub use reset_password::*;
pub use set_disabled::*;

/// Where the Administrators page lives.
pub const PAGE: &str = "/admin/administrators";

/// For a plain form post: shows a generated password once on the next view of the page.
#[cfg(feature = "ssr")]
async fn flash_password(
    username: &str,
    password: &str,
) -> Result<(), crate::server_fns::error::AppError> {
    use crate::server_fns::guard::{flash_to, plain_form};
    if plain_form() {
        // The password waits in the session row sealed with the console's secret key.
        let state = leptos::prelude::expect_context::<crate::server::state::AppState>();
        flash_to(
            &crate::model::admin::AccountFlash::OneTimePassword {
                username: username.to_owned(),
                password: state.secrets.seal(password),
            },
            PAGE,
        )
        .await?;
    }
    Ok(())
}
