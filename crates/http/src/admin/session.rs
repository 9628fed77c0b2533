//! Staff sign-in: first-start setup of the owner account, sessions, and the `Staff` extractor
//! every other staff operation starts with.

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use axum::Extension;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AppState;
use crate::envelope::{Empty, Envelope};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::json::Body;
use crate::login::{LoginError, attempt_succeeded, begin_attempt};
use mandato_core::clock::timestamp;
use mandato_core::domain::contact::Email;
use mandato_core::error::{Error, FieldErrors};
use mandato_core::secret::Secret;
use mandato_engine::auth::api_key::hash_key;
use mandato_engine::auth::password;
use mandato_engine::auth::throttle::ThrottleKey;
use mandato_engine::records::{Role, Session, StaffMember};
use mandato_engine::staff::sessions::SessionStart;

pub const COOKIE: &str = "mandato_session";
/// A session ends this long after sign-in, whatever happens.
const ABSOLUTE_LIFETIME_HOURS: i64 = 12;
/// And this long after its last use.
const IDLE_MINUTES: i64 = 60;

/// Passwords staff choose (the owner's at setup, a new one, a changed one): at least this many
/// characters.
pub const MIN_PASSWORD_CHARS: usize = 10;

/// A signed-in staff member allowed to work. Changes (any method but GET) also need the
/// session's CSRF token in `x-csrf-token`, which a page of another origin cannot read. A member
/// signed in with a temporary password is refused (`PASSWORD_CHANGE_REQUIRED`) until they
/// choose their own: only [`SignedIn`] operations (changing it, signing out) accept them.
pub struct Staff {
    pub member: StaffMember,
}

/// Any signed-in member, also one who still has to replace a temporary password, with the
/// SHA-256 of their session's token.
pub struct SignedIn {
    pub member: StaffMember,
    pub token_hash: String,
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

    /// The member's e-mail, which the staff audit log names.
    pub fn email(&self) -> &str {
        &self.member.email
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

/// The session the request's cookie names, if it is still alive (neither past its absolute
/// end nor idle too long), with the SHA-256 of its token.
fn live_session(state: &AppState, headers: &HeaderMap) -> Result<(String, Session), Error> {
    let unauthenticated = || Error::Unauthenticated {
        message: "sign in first".into(),
    };
    let token = session_cookie(headers).ok_or_else(unauthenticated)?;
    let token_hash = hash_key(&token);
    let session = state.session(&token_hash)?.ok_or_else(unauthenticated)?;
    let now = state.clock.now();
    if expired(&session.expires_at, Duration::zero(), now)
        || expired(&session.last_seen_at, Duration::minutes(IDLE_MINUTES), now)
    {
        return Err(Error::Unauthenticated {
            message: "the session expired; sign in again".into(),
        });
    }
    Ok((token_hash, session))
}

/// Whether `at + plus` has passed. A stored time that does not parse counts as passed: a
/// session whose end cannot be read must not live for ever.
fn expired(at: &str, plus: Duration, now: DateTime<Utc>) -> bool {
    DateTime::parse_from_rfc3339(at)
        .ok()
        .is_none_or(|t| t.with_timezone(&Utc) + plus <= now)
}

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let (token_hash, session) = live_session(state, &parts.headers)?;
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
        let now = state.clock.now();
        if expired(&session.last_seen_at, Duration::minutes(1), now) {
            state.touch_session(&token_hash)?;
        }
        Ok(SignedIn {
            member: session.staff,
            token_hash,
        })
    }
}

impl FromRequestParts<AppState> for Staff {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let signed_in = SignedIn::from_request_parts(parts, state).await?;
        if signed_in.member.password_change_required {
            return Err(Error::forbidden(
                "PASSWORD_CHANGE_REQUIRED",
                "your password is a temporary one: choose your own first",
            )
            .into());
        }
        Ok(Staff {
            member: signed_in.member,
        })
    }
}

/// The one-time code that lets another machine do the first-visit setup. `serve` makes one
/// when it listens beyond loopback with no staff account yet, and prints it to its log: only
/// whoever reads that log (the person who started the server) can make the owner account from
/// elsewhere. Kept as its SHA-256, in memory only; it works once.
#[derive(Default)]
pub struct SetupCode {
    hash: Mutex<Option<String>>,
}

/// Letters and digits that cannot be mistaken for one another when typed from a log.
const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

impl SetupCode {
    /// A fresh code (replacing any earlier one): 15 characters of 32 (75 bits), in groups of
    /// five for reading aloud.
    pub fn issue(&self) -> Secret<String> {
        let mut bytes = [0u8; 15];
        rand::rng().fill_bytes(&mut bytes);
        let chars: Vec<char> = bytes
            .iter()
            .map(|b| char::from(CODE_ALPHABET[usize::from(b % 32)]))
            .collect();
        let code = chars
            .chunks(5)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("-");
        *self.hash.lock().unwrap_or_else(|p| p.into_inner()) = Some(hash_key(&normalize(&code)));
        Secret::new(code)
    }

    fn matches(&self, code: &str) -> bool {
        self.hash
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
            .is_some_and(|h| h == hash_key(&normalize(code)))
    }

    fn consume(&self) {
        *self.hash.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Case and separators do not matter when the code is typed.
fn normalize(code: &str) -> String {
    code.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Who may run the first-visit setup.
#[derive(Debug, PartialEq, Eq)]
enum SetupAccess {
    /// A peer on this machine: whoever runs there already holds the data.
    Local,
    /// Another machine, with a code to check.
    CodeGiven,
    /// Another machine, without a code.
    CodeMissing,
}

/// No connection address (never the case behind our listener) counts as another machine.
fn setup_access(peer: Option<IpAddr>, code: Option<&str>) -> SetupAccess {
    if peer.is_some_and(|ip| ip.to_canonical().is_loopback()) {
        SetupAccess::Local
    } else if code.is_some_and(|c| !c.trim().is_empty()) {
        SetupAccess::CodeGiven
    } else {
        SetupAccess::CodeMissing
    }
}

type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

fn peer_ip(peer: &Peer) -> Option<IpAddr> {
    peer.as_ref().map(|Extension(ConnectInfo(addr))| addr.ip())
}

/// The peer whose address may vouch for the setup. Behind a reverse proxy (`--public-url`)
/// every visitor arrives from the proxy, often on this machine, so no address vouches and the
/// setup code is always needed.
fn setup_peer(state: &AppState, peer: &Peer) -> Option<IpAddr> {
    if state.config.public_url.is_some() {
        None
    } else {
        peer_ip(peer)
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetupStatus {
    /// True until the first staff account exists.
    pub needs_setup: bool,
    /// True when this client is on another machine: the setup then needs the one-time code
    /// that `mandato serve` printed to its log.
    pub setup_code_required: bool,
}

/// Whether the installation still needs its first (owner) account, and whether this client
/// must give the setup code for it.
#[utoipa::path(get, path = "/setup", tag = "staff",
    responses((status = 200, description = "SETUP_STATUS_OK", body = Envelope<SetupStatus>)))]
pub async fn setup_status(
    State(state): State<AppState>,
    peer: Peer,
) -> ApiResult<Envelope<SetupStatus>> {
    let needs_owner = state.has_no_staff()?;
    Ok(Envelope::ok(
        "SETUP_STATUS_OK",
        "setup status",
        SetupStatus {
            needs_setup: needs_owner,
            setup_code_required: needs_owner
                && setup_access(setup_peer(&state, &peer), None) != SetupAccess::Local,
        },
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetupRequest {
    pub email: Option<String>,
    /// At least 10 characters.
    pub password: Option<String>,
    /// The one-time code `mandato serve` printed to its log; needed from another machine only.
    pub setup_code: Option<String>,
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

/// First start: create the owner (admin) account. Refused once any account exists. From this
/// machine it needs nothing more; from another machine it needs the one-time setup code that
/// `mandato serve` printed to its log when it started listening beyond loopback.
#[utoipa::path(post, path = "/setup", tag = "staff",
    request_body = SetupRequest,
    responses(
        (status = 201, description = "SETUP_OK: signed in as the new admin", body = Envelope<SessionInfo>),
        (status = 400, description = "Invalid field, or SETUP_DONE", body = ErrorBody),
        (status = 403, description = "SETUP_CODE_REQUIRED (another machine sent no code) or SETUP_CODE_INVALID", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: 5 wrong setup codes within 15 minutes", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until setup codes are accepted again"))),
    ))]
pub async fn setup(
    State(state): State<AppState>,
    peer: Peer,
    Body(body): Body<SetupRequest>,
) -> Result<Response, LoginError> {
    let access = setup_access(setup_peer(&state, &peer), body.setup_code.as_deref());
    let (email, password) = parse_credentials(
        Credentials {
            email: body.email,
            password: body.password,
        },
        MIN_PASSWORD_CHARS,
    )?;
    let code_key = ThrottleKey::setup_code();
    match access {
        SetupAccess::Local => {}
        SetupAccess::CodeMissing => {
            return Err(Error::forbidden(
                "SETUP_CODE_REQUIRED",
                "from another machine, the first setup needs the setup code that mandato serve printed to its log",
            )
            .into());
        }
        SetupAccess::CodeGiven => {
            begin_attempt(&state, &code_key).await?;
            if !state
                .setup_code
                .matches(body.setup_code.as_deref().unwrap_or_default())
            {
                return Err(Error::forbidden(
                    "SETUP_CODE_INVALID",
                    "this is not the setup code of this server, or it was already used",
                )
                .into());
            }
        }
    }
    let hash = password::hash(password).await.map_err(Error::Internal)?;
    let address = email.as_str().to_string();
    if !state.create_owner(&address, &hash, None)? {
        return Err(Error::refused(
            "SETUP_DONE",
            "the installation already has staff accounts; sign in",
        )
        .into());
    }
    if access == SetupAccess::CodeGiven {
        state.setup_code.consume();
        attempt_succeeded(&state, code_key).await?;
    }
    let member = state
        .staff_by_email(&address)?
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("account vanished")))?;
    Ok(start_session(&state, member, "SETUP_OK", 201)?)
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
    /// Signed in with a temporary password an admin set: every other operation is refused
    /// (`PASSWORD_CHANGE_REQUIRED`) until `PUT /session/password` replaces it.
    pub password_change_required: bool,
}

/// Sign in; the session travels in an HttpOnly, SameSite=Strict cookie.
#[utoipa::path(post, path = "/session", tag = "staff",
    request_body = Credentials,
    responses(
        (status = 200, description = "SESSION_OK", body = Envelope<SessionInfo>),
        (status = 400, description = "Missing field", body = ErrorBody),
        (status = 403, description = "INVALID_CREDENTIALS", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: 5 failed sign-ins for this e-mail within 15 minutes; every attempt is refused until `Retry-After` seconds have passed", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until sign-ins for this e-mail are accepted again"))),
    ))]
pub async fn login(
    State(state): State<AppState>,
    Body(body): Body<Credentials>,
) -> Result<Response, LoginError> {
    let (email, password) = parse_credentials(body, 1)?;
    // Every address counts, known or not: a lock that only known accounts reach would tell
    // which exist.
    let key = ThrottleKey::staff(email.as_str());
    begin_attempt(&state, &key).await?;
    let member = state.staff_by_email(email.as_str())?;
    // An unknown address is checked against a stand-in hash, so it takes as long as a known one.
    let hash = member.as_ref().map(|m| m.password_hash.clone());
    let ok = password::verify(password, hash)
        .await
        .map_err(Error::Internal)?;
    let Some(member) = member.filter(|_| ok) else {
        return Err(Error::forbidden("INVALID_CREDENTIALS", "wrong e-mail or password").into());
    };
    attempt_succeeded(&state, key).await?;
    Ok(start_session(&state, member, "SESSION_OK", 200)?)
}

pub(super) fn start_session(
    state: &AppState,
    member: StaffMember,
    name: &'static str,
    status: u16,
) -> ApiResult<Response> {
    let token = mandato_engine::auth::api_key::generate().key.into_inner();
    let csrf = mandato_core::ids::new_token();
    let now = state.clock.now();
    let expires_at = timestamp(now + Duration::hours(ABSOLUTE_LIFETIME_HOURS));
    let token_hash = hash_key(&token);
    state.start_session(
        &member,
        &SessionStart {
            token_hash: &token_hash,
            csrf_token: &csrf,
            expires_at: &expires_at,
        },
    )?;
    let info = SessionInfo {
        password_change_required: member.password_change_required,
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
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{}",
        ABSOLUTE_LIFETIME_HOURS * 3600,
        secure_attribute(state)
    );
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|e| Error::Internal(e.into()))?,
    );
    Ok(response)
}

/// `; Secure` when the installation is reached over HTTPS (`--public-url https://...`, TLS
/// ends in front of us): the browser then never sends the session over plain HTTP.
fn secure_attribute(state: &AppState) -> &'static str {
    if state
        .config
        .public_url
        .as_ref()
        .is_some_and(|url| url.scheme() == "https")
    {
        "; Secure"
    } else {
        ""
    }
}

/// The signed-in member and the CSRF token (the UI calls this when it loads).
#[utoipa::path(get, path = "/session", tag = "staff",
    responses(
        (status = 200, description = "SESSION_OK", body = Envelope<SessionInfo>),
        (status = 401, description = "SESSION_REQUIRED: no session, or it ended (12 hours after sign-in, or 60 minutes unused)", body = ErrorBody),
    ))]
pub async fn current(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> ApiResult<Envelope<SessionInfo>> {
    // An ended session gives no CSRF token: the token is only ever handed to a live session.
    let (_, session) = live_session(&state, &headers)?;
    Ok(Envelope::ok(
        "SESSION_OK",
        "signed in",
        SessionInfo {
            password_change_required: session.staff.password_change_required,
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
pub async fn logout(State(state): State<AppState>, signed_in: SignedIn) -> ApiResult<Response> {
    state.end_session(&signed_in.member, &signed_in.token_hash)?;
    let mut response = Envelope::ok("SESSION_CLOSED", "signed out", Empty {}).into_response();
    let cleared = format!(
        "{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{}",
        secure_attribute(&state)
    );
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cleared).map_err(|e| Error::Internal(e.into()))?,
    );
    Ok(response)
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChangeRequest {
    /// The password the member signed in with (the temporary one, after a reset).
    pub current_password: Option<String>,
    /// At least 10 characters, not the current one.
    pub new_password: Option<String>,
}

/// The new password of a change, checked against the rules of every staff password.
fn new_password(body: &PasswordChangeRequest) -> Result<(Secret<String>, Secret<String>), Error> {
    let mut errors = FieldErrors::new();
    if body.current_password.as_deref().is_none_or(str::is_empty) {
        errors.missing("currentPassword");
    }
    match body.new_password.as_deref().map(|p| p.chars().count()) {
        None | Some(0) => errors.missing("newPassword"),
        Some(n) if n < MIN_PASSWORD_CHARS => errors.push(
            "newPassword",
            "TOO_SHORT",
            format!("at least {MIN_PASSWORD_CHARS} characters"),
        ),
        Some(_) if body.new_password == body.current_password => errors.push(
            "newPassword",
            "SAME_PASSWORD",
            "choose a password other than the current one",
        ),
        Some(_) => {}
    }
    errors.into_result()?;
    Ok((
        Secret::new(body.current_password.clone().unwrap_or_default()),
        Secret::new(body.new_password.clone().unwrap_or_default()),
    ))
}

/// Changes the signed-in member's own password (also the way out of a temporary one). The
/// current password is checked like a sign-in (wrong ones count towards the lockout); the
/// member's other sessions end, this one stays.
#[utoipa::path(put, path = "/session/password", tag = "staff",
    request_body = PasswordChangeRequest,
    responses(
        (status = 200, description = "PASSWORD_CHANGED", body = Envelope<SessionInfo>),
        (status = 400, description = "Missing field, TOO_SHORT, SAME_PASSWORD, or WRONG_PASSWORD at currentPassword", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: 5 failed sign-ins or password checks for this e-mail within 15 minutes", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until the password is checked again"))),
    ))]
pub async fn change_password(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Body(body): Body<PasswordChangeRequest>,
) -> Result<Response, LoginError> {
    let (current, new) = new_password(&body)?;
    let member = signed_in.member;
    let key = ThrottleKey::staff(&member.email);
    begin_attempt(&state, &key).await?;
    let ok = password::verify(current, Some(member.password_hash.clone()))
        .await
        .map_err(Error::Internal)?;
    if !ok {
        return Err(Error::validation(
            "currentPassword",
            "WRONG_PASSWORD",
            "this is not your current password",
        )
        .into());
    }
    attempt_succeeded(&state, key).await?;
    let hash = password::hash(new).await.map_err(Error::Internal)?;
    let session = state.change_own_password(&member, &signed_in.token_hash, &hash)?;
    Ok(Envelope::ok(
        "PASSWORD_CHANGED",
        "password changed; your other sessions ended",
        SessionInfo {
            password_change_required: session.staff.password_change_required,
            email: session.staff.email,
            role: session.staff.role.as_str(),
            csrf_token: session.csrf_token,
            expires_at: session.expires_at,
        },
    )
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_from_another_machine_needs_a_code() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let remote: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(setup_access(Some(local), None), SetupAccess::Local);
        assert_eq!(setup_access(Some(mapped), None), SetupAccess::Local);
        assert_eq!(setup_access(Some(remote), None), SetupAccess::CodeMissing);
        assert_eq!(
            setup_access(Some(remote), Some("  ")),
            SetupAccess::CodeMissing
        );
        assert_eq!(
            setup_access(Some(remote), Some("ABCDE")),
            SetupAccess::CodeGiven
        );
        assert_eq!(setup_access(None, None), SetupAccess::CodeMissing);
    }

    #[test]
    fn a_setup_code_works_as_typed_until_consumed() {
        let codes = SetupCode::default();
        assert!(!codes.matches("anything"));
        let code = codes.issue();
        assert_eq!(code.expose().len(), 17);
        assert!(codes.matches(code.expose()));
        assert!(codes.matches(&code.expose().to_lowercase().replace('-', " ")));
        assert!(!codes.matches("AAAAA-AAAAA-AAAAA"));
        codes.consume();
        assert!(!codes.matches(code.expose()));
    }
}
