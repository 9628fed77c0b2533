//! Staff sign-in: first-start setup of the owner account, sessions, and the `Staff` extractor
//! every other staff operation starts with.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::api_key::hash_key;
use crate::auth::password::{hash_password, verify_password};
use crate::clock::timestamp;
use crate::domain::contact::Email;
use crate::error::{Error, FieldErrors};
use crate::http::AppState;
use crate::http::envelope::{Empty, Envelope};
use crate::http::error::{ApiError, ApiResult, ErrorBody};
use crate::http::json::Body;
use crate::secret::Secret;
use crate::store::staff::{self, NewSession, Role, StaffMember};

pub const COOKIE: &str = "mandato_session";
/// A session ends this long after sign-in, whatever happens.
const ABSOLUTE_LIFETIME_HOURS: i64 = 12;
/// And this long after its last use.
const IDLE_MINUTES: i64 = 60;

/// A signed-in staff member. Changes (any method but GET) also need the session's CSRF token
/// in `x-csrf-token`, which a page of another origin cannot read.
pub struct Staff {
    pub member: StaffMember,
}

impl Staff {
    /// Refuses the operation unless the member's role reaches `role`.
    pub fn require(&self, role: Role) -> Result<(), Error> {
        if self.member.role >= role {
            Ok(())
        } else {
            Err(Error::forbidden(
                "ROLE_NOT_ALLOWED",
                format!(
                    "this needs the {} role; you are {}",
                    role.as_str(),
                    self.member.role.as_str()
                ),
            ))
        }
    }

    /// Writes the action to the staff audit log, in the operation's transaction.
    pub fn record(
        &self,
        conn: &rusqlite::Connection,
        now: DateTime<Utc>,
        action: &str,
        target: Option<&str>,
    ) -> Result<(), Error> {
        Ok(staff::record_action(
            conn,
            &timestamp(now),
            &self.member.email,
            action,
            target,
            None,
        )?)
    }
}

fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
}

impl FromRequestParts<AppState> for Staff {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let unauthenticated = || Error::Unauthenticated {
            message: "sign in first".into(),
        };
        let token = session_cookie(&parts.headers).ok_or_else(unauthenticated)?;
        let token_hash = hash_key(&token);
        let session = state
            .store
            .read(|c| Ok(staff::session(c, &token_hash)?))?
            .ok_or_else(unauthenticated)?;
        let now = state.clock.now();
        let expired = |at: &str, plus: Duration| {
            DateTime::parse_from_rfc3339(at).is_ok_and(|t| t.with_timezone(&Utc) + plus <= now)
        };
        if expired(&session.expires_at, Duration::zero())
            || expired(&session.last_seen_at, Duration::minutes(IDLE_MINUTES))
        {
            return Err(Error::Unauthenticated {
                message: "the session expired; sign in again".into(),
            }
            .into());
        }
        if parts.method != Method::GET {
            let sent = parts
                .headers
                .get("x-csrf-token")
                .and_then(|v| v.to_str().ok());
            if sent != Some(session.csrf_token.as_str()) {
                return Err(Error::forbidden(
                    "CSRF_TOKEN_INVALID",
                    "send the session's csrfToken as x-csrf-token",
                )
                .into());
            }
        }
        // Sliding idle expiry, written at most once a minute.
        if expired(&session.last_seen_at, Duration::minutes(1)) {
            let stamp = timestamp(now);
            state
                .store
                .write(|tx| Ok(staff::touch_session(tx, &token_hash, &stamp)?))?;
        }
        Ok(Staff {
            member: session.staff,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetupStatus {
    /// True until the first staff account exists.
    pub needs_setup: bool,
}

/// Whether the installation still needs its first (owner) account.
#[utoipa::path(get, path = "/setup", tag = "staff",
    responses((status = 200, description = "SETUP_STATUS_OK", body = Envelope<SetupStatus>)))]
pub async fn setup_status(State(state): State<AppState>) -> ApiResult<Envelope<SetupStatus>> {
    let count = state.store.read(|c| Ok(staff::count(c)?))?;
    Ok(Envelope::ok(
        "SETUP_STATUS_OK",
        "setup status",
        SetupStatus {
            needs_setup: count == 0,
        },
    ))
}

#[derive(Deserialize, ToSchema)]
pub struct Credentials {
    pub email: Option<String>,
    /// At least 10 characters for a new account.
    pub password: Option<String>,
}

fn parse_credentials(
    body: Credentials,
    min_password: usize,
) -> Result<(Email, Secret<String>), Error> {
    let mut errors = FieldErrors::new();
    let email = match body.email.as_deref().map(Email::parse) {
        None => {
            errors.missing("email");
            None
        }
        Some(Err(_)) => {
            errors.push("email", "INVALID_EMAIL", "not a valid e-mail address");
            None
        }
        Some(Ok(e)) => Some(e),
    };
    let password = body.password.map(Secret::new);
    match password.as_ref().map(|p| p.expose().chars().count()) {
        None => errors.missing("password"),
        Some(n) if n < min_password => errors.push(
            "password",
            "TOO_SHORT",
            format!("at least {min_password} characters"),
        ),
        Some(_) => {}
    }
    errors.into_result()?;
    Ok((email.expect("validated"), password.expect("validated")))
}

/// First start: create the owner (admin) account. Refused once any account exists.
#[utoipa::path(post, path = "/setup", tag = "staff",
    request_body = Credentials,
    responses(
        (status = 201, description = "SETUP_OK: signed in as the new admin", body = Envelope<SessionInfo>),
        (status = 400, description = "Invalid field, or SETUP_DONE", body = ErrorBody),
    ))]
pub async fn setup(
    State(state): State<AppState>,
    Body(body): Body<Credentials>,
) -> ApiResult<Response> {
    let (email, password) = parse_credentials(body, 10)?;
    let hash = tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| Error::Internal(e.into()))?;
    let now = timestamp(state.clock.now());
    let address = email.as_str().to_string();
    state.store.write(|tx| {
        if staff::create_owner(tx, &address, &hash, &now, None)? {
            Ok(())
        } else {
            Err(Error::refused(
                "SETUP_DONE",
                "the installation already has staff accounts; sign in",
            ))
        }
    })?;
    let member = state
        .store
        .read(|c| Ok(staff::by_email(c, &address)?))?
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("account vanished")))?;
    start_session(&state, member, "SETUP_OK", 201)
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub email: String,
    /// `admin`, `operator` or `viewer`.
    pub role: &'static str,
    /// Send as `x-csrf-token` with every change.
    pub csrf_token: String,
    pub expires_at: String,
}

/// Sign in; the session travels in an HttpOnly, SameSite=Strict cookie.
#[utoipa::path(post, path = "/session", tag = "staff",
    request_body = Credentials,
    responses(
        (status = 200, description = "SESSION_OK", body = Envelope<SessionInfo>),
        (status = 400, description = "Missing field", body = ErrorBody),
        (status = 403, description = "INVALID_CREDENTIALS", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    Body(body): Body<Credentials>,
) -> ApiResult<Response> {
    let (email, password) = parse_credentials(body, 1)?;
    let member = state
        .store
        .read(|c| Ok(staff::by_email(c, email.as_str())?))?;
    let refused = || Error::forbidden("INVALID_CREDENTIALS", "wrong e-mail or password");
    let Some(member) = member else {
        return Err(refused().into());
    };
    let hash = member.password_hash.clone();
    let ok = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .map_err(|e| Error::Internal(e.into()))?;
    if !ok {
        return Err(refused().into());
    }
    start_session(&state, member, "SESSION_OK", 200)
}

pub(super) fn start_session(
    state: &AppState,
    member: StaffMember,
    name: &'static str,
    status: u16,
) -> ApiResult<Response> {
    let token = crate::auth::api_key::generate().key.into_inner();
    let csrf = crate::ids::new_token();
    let now = state.clock.now();
    let expires_at = timestamp(now + Duration::hours(ABSOLUTE_LIFETIME_HOURS));
    let token_hash = hash_key(&token);
    state.store.write(|tx| {
        staff::insert_session(
            tx,
            &NewSession {
                token_hash: &token_hash,
                staff_id: member.id,
                csrf_token: &csrf,
                now: &timestamp(now),
                expires_at: &expires_at,
            },
        )?;
        Ok(staff::record_action(
            tx,
            &timestamp(now),
            &member.email,
            "sign-in",
            None,
            None,
        )?)
    })?;
    let info = SessionInfo {
        email: member.email,
        role: member.role.as_str(),
        csrf_token: csrf,
        expires_at,
    };
    let envelope = if status == 201 {
        Envelope::created(name, "signed in", info)
    } else {
        Envelope::ok(name, "signed in", info)
    };
    let mut response = envelope.into_response();
    let cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        ABSOLUTE_LIFETIME_HOURS * 3600
    );
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|e| Error::Internal(e.into()))?,
    );
    Ok(response)
}

/// The signed-in member and the CSRF token (the UI calls this when it loads).
#[utoipa::path(get, path = "/session", tag = "staff",
    responses(
        (status = 200, description = "SESSION_OK", body = Envelope<SessionInfo>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn current(
    State(state): State<AppState>,
    parts: HeaderMap,
) -> ApiResult<Envelope<SessionInfo>> {
    let token = session_cookie(&parts).ok_or(Error::Unauthenticated {
        message: "sign in first".into(),
    })?;
    let session = state
        .store
        .read(|c| Ok(staff::session(c, &hash_key(&token))?))?
        .ok_or(Error::Unauthenticated {
            message: "sign in first".into(),
        })?;
    Ok(Envelope::ok(
        "SESSION_OK",
        "signed in",
        SessionInfo {
            email: session.staff.email,
            role: session.staff.role.as_str(),
            csrf_token: session.csrf_token,
            expires_at: session.expires_at,
        },
    ))
}

/// Sign out: the session ends on the server and the cookie is cleared.
#[utoipa::path(delete, path = "/session", tag = "staff",
    responses(
        (status = 200, description = "SESSION_CLOSED", body = Envelope<Empty>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn logout(
    State(state): State<AppState>,
    staff_member: Staff,
    headers: HeaderMap,
) -> ApiResult<Response> {
    if let Some(token) = session_cookie(&headers) {
        let now = state.clock.now();
        state.store.write(|tx| {
            staff::delete_session(tx, &hash_key(&token))?;
            staff_member.record(tx, now, "sign-out", None)
        })?;
    }
    let mut response = Envelope::ok("SESSION_CLOSED", "signed out", Empty {}).into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("mandato_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    Ok(response)
}
