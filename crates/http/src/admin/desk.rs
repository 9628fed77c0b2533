//! Mandato Desk's sign-in. The desktop shell runs the engine in its own process and asks it,
//! through `sign_in_path` (a function call, never HTTP), for a single-use link; its window opens
//! that link and is signed in as the installation's owner with the ordinary staff session
//! (cookie, CSRF token, role). No password travels in a URL or sits in the shell.
//!
//! A link's token is 256 random bits, kept only as its SHA-256 and only in this process's
//! memory, for a minute; the first request that presents it consumes it, whatever the outcome.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use utoipa::IntoParams;

use super::session::{self, SessionInfo};
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use mandato_core::domain::contact::Email;
use mandato_core::error::Error;
use mandato_core::secret::Secret;
use mandato_engine::auth::api_key::hash_key;
use mandato_engine::auth::password;

/// How long a sign-in link stays usable: the shell opens it at once.
const LIFETIME_SECS: i64 = 60;

/// Where the window goes once signed in.
const PATH: &str = "/admin/api/desk/sign-in";

/// The sign-in tokens issued and not yet used, by their SHA-256, with their expiry.
#[derive(Default)]
pub struct DeskTokens {
    pending: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl DeskTokens {
    fn issue(&self, now: DateTime<Utc>) -> Secret<String> {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let mut pending = self.pending.lock().expect("desk tokens lock");
        pending.retain(|_, expires| *expires > now);
        pending.insert(hash_key(&token), now + Duration::seconds(LIFETIME_SECS));
        Secret::new(token)
    }

    /// True once per issued token, within its lifetime.
    fn redeem(&self, token: &str, now: DateTime<Utc>) -> bool {
        let mut pending = self.pending.lock().expect("desk tokens lock");
        pending
            .remove(&hash_key(token))
            .is_some_and(|expires| expires > now)
    }
}

/// A single-use sign-in link for the desktop window: the path and query to open on this
/// engine's listener. On a first start (no staff account yet) it creates the owner (admin)
/// account for the machine's user, `{local_user}@mandato.localhost`, with a random password
/// nobody knows: whoever runs the desktop app on this machine already holds its data.
pub async fn sign_in_path(state: &AppState, local_user: &str) -> Result<Secret<String>, Error> {
    let needs_owner = state.has_no_staff()?;
    if needs_owner {
        let email = owner_email(local_user);
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let password = Secret::new(hex::encode(bytes));
        let hash = password::hash(password).await.map_err(Error::Internal)?;
        // A browser's first-start setup may have won the race; then that account is the owner.
        let created = state.create_owner(email.as_str(), &hash, Some("desktop"))?;
        if created {
            tracing::info!(
                email = email.as_str(),
                "created the owner account for the desktop"
            );
        }
    }
    let token = state.desk_tokens.issue(state.clock.now());
    Ok(Secret::new(format!("{PATH}?token={}", token.expose())))
}

/// `{user}@mandato.localhost` (a reserved name that is never a real mailbox), or
/// `owner@mandato.localhost` when the user name does not make a valid address.
fn owner_email(local_user: &str) -> Email {
    let user: String = local_user
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    Email::parse(&format!("{user}@mandato.localhost"))
        .or_else(|_| Email::parse("owner@mandato.localhost"))
        .expect("a valid fallback address")
}

#[derive(serde::Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SignInQuery {
    /// The single-use token of the link the desktop app opened.
    token: Option<String>,
}

/// The desktop app's sign-in link: signs the window in as the owner (the first enabled admin)
/// with the usual session cookie and CSRF token, then sends it to `/`. The link comes from the
/// app itself (a function of the engine, not an HTTP operation) and works once, within a
/// minute. On a first start the app creates the owner account for the machine's user
/// (`USER@mandato.localhost`, a random password nobody knows): whoever runs the app already
/// holds the database, so a password would protect nothing there.
#[utoipa::path(get, path = "/desk/sign-in", tag = "staff", params(SignInQuery),
    responses(
        (status = 303, description = "DESK_SIGN_IN_OK: signed in as the owner; `Location: /`", body = Envelope<SessionInfo>),
        (status = 403, description = "DESK_LINK_INVALID: unknown, already used or expired; OWNER_MISSING", body = ErrorBody),
    ))]
pub async fn sign_in(
    State(state): State<AppState>,
    Query(query): Query<SignInQuery>,
) -> ApiResult<Response> {
    let now = state.clock.now();
    let valid = query
        .token
        .as_deref()
        .is_some_and(|token| state.desk_tokens.redeem(token, now));
    if !valid {
        return Err(Error::forbidden(
            "DESK_LINK_INVALID",
            "this sign-in link is unknown, already used or expired; open Mandato Desk again",
        )
        .into());
    }
    let owner = state.owner()?.ok_or_else(|| {
        Error::forbidden(
            "OWNER_MISSING",
            "no enabled admin account to sign in as; sign in with a password",
        )
    })?;
    let mut response = session::start_session(&state, owner, "DESK_SIGN_IN_OK", 200)?;
    *response.status_mut() = StatusCode::SEE_OTHER;
    response
        .headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_works_once_and_only_within_its_minute() {
        let tokens = DeskTokens::default();
        let now = Utc::now();
        let once = tokens.issue(now);
        assert!(tokens.redeem(once.expose(), now));
        assert!(!tokens.redeem(once.expose(), now));
        let late = tokens.issue(now);
        assert!(!tokens.redeem(late.expose(), now + Duration::seconds(LIFETIME_SECS)));
        assert!(!tokens.redeem("never-issued", now));
    }

    #[test]
    fn the_owner_address_comes_from_the_user_name() {
        for (user, email) in [
            ("ana", "ana@mandato.localhost"),
            ("Ana María", "ana-mar-a@mandato.localhost"),
            ("", "owner@mandato.localhost"),
        ] {
            assert_eq!(owner_email(user).as_str(), email, "{user:?}");
        }
    }
}
