use leptos::prelude::*;

use crate::server_fns::error::AppError;

/// Changes the signed-in admin's own password: `current` must be right, `new` typed twice
/// (`confirm`). Every other session of the account is signed out; this one stays signed in.
#[server(prefix = "/rpc", endpoint = "change_password")]
pub async fn change_password(
    #[server(default)] current: String,
    #[server(default)] new: String,
    #[server(default)] confirm: String,
) -> Result<(), AppError> {
    use crate::server::auth::{
        account::{self, ChangeError},
        rate_limit::Refusal,
        session,
    };
    use crate::server_fns::guard::internal;

    let admin = crate::server_fns::require_admin().await?;
    let state = expect_context::<crate::server::state::AppState>();
    let refused = |field: &'static str, message: String| async move {
        Err::<(), _>(super::refuse(super::PAGE, field, "", AppError::BadRequest(message)).await)
    };
    if new != confirm {
        return refused(
            "confirm",
            crate::i18n::td_string!(crate::server_fns::guard::locale(), account.password_differs)
                .to_string(),
        )
        .await;
    }
    let parts = use_context::<axum::http::request::Parts>();
    let peer = parts
        .as_ref()
        .and_then(|p| {
            p.extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        })
        .map(|c| c.0.ip());
    let address = peer.map(|ip| ip.to_string());
    // A wrong current password is a wrong password: counted by the sign-in limits, under
    // the account's own name, so a stolen session cannot guess its way to the password.
    let attempt = match state
        .login_limiter
        .begin(
            &admin.username,
            peer.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0])),
        )
        .await
    {
        Ok(attempt) => attempt,
        Err(Refusal::Unavailable) => return Err(internal("the sign-in counts cannot be read")),
        Err(Refusal::Wait(wait)) => {
            let message = format!(
                "Too many wrong passwords: try again in {} minute(s). Nothing was changed.",
                wait.as_secs().div_ceil(60).max(1)
            );
            return Err(
                super::refuse(super::PAGE, "current", "", AppError::TooMany(message)).await,
            );
        }
    };
    let user = match account::change_password(&state.pool, admin.id, current, new).await {
        Ok(user) => {
            attempt.succeeded().await;
            user
        }
        Err(e @ ChangeError::WrongCurrent) => {
            // The attempt stays counted as a failure.
            drop(attempt);
            return refused("current", format!("{e} Nothing was changed.")).await;
        }
        Err(ChangeError::Password(e @ crate::server::auth::password::PasswordError::TooShort)) => {
            attempt.succeeded().await;
            return refused("new", format!("Nothing was changed: {e}.")).await;
        }
        Err(e @ ChangeError::Same) => {
            attempt.succeeded().await;
            return refused("new", format!("{e} Nothing was changed.")).await;
        }
        Err(other) => {
            attempt.withdrawn().await;
            return Err(internal(other));
        }
    };
    // The new epoch signed every session out, this one too: sign it in again.
    let web = leptos_axum::extract::<tower_sessions::Session>()
        .await
        .map_err(internal)?;
    let user_agent = parts.as_ref().and_then(|p| {
        p.headers
            .get(axum::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    if let Some(old) = session::session_id(&web).await.map_err(internal)? {
        let _ = crate::server::db::admin_session::delete(&state.pool, &old).await;
    }
    crate::server::db::admin_session::delete_others(&state.pool, admin.id, None)
        .await
        .map_err(internal)?;
    session::sign_in(
        &web,
        &state.pool,
        &user,
        session::Client {
            address: address.as_deref(),
            user_agent: user_agent.as_deref(),
        },
    )
    .await
    .map_err(internal)?;
    super::audit(&admin.username, "password_change", &[]).await;
    super::flash_notice(
        super::PAGE,
        "success",
        crate::i18n::td_string!(crate::server_fns::guard::locale(), account.password_changed)
            .to_string(),
    )
    .await?;
    Ok(())
}
