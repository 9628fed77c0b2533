//! Login (POST and the deprecated GET), the JWE encrypt helper and the public keys.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::common::MerchantRequest;
use super::envelope::Envelope;
use super::error::{ApiError, ApiResult, ErrorBody, current_correlation_id};
use super::json::Body;
use mandato_core::error::{Error, FieldErrors};
use mandato_core::secret::Secret;
use mandato_engine::auth::jwe::{self, JweError};
use mandato_engine::auth::password;
use mandato_engine::auth::throttle::{Decision, ThrottleKey};

/// When `GET /login` was deprecated (RFC 9745 `Deprecation: @<unix time>`): 2025-01-01.
const GET_LOGIN_DEPRECATED_AT: i64 = 1_735_689_600;

#[derive(Deserialize, ToSchema)]
pub struct LoginRequest {
    /// The commerce code; must equal the `commerce` header.
    pub username: Option<String>,
    /// The commerce password as a compact JWE (RSA-OAEP-256 + A256GCM) under the environment's
    /// public key. Plain text is refused.
    pub password: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginPayload {
    /// ES256 JWT, sent afterwards as `Authorization: Bearer <token>`.
    pub token: String,
    pub token_type: &'static str,
    /// Seconds until it expires.
    pub expires_in: i64,
    pub expires_at: String,
}

/// Exchange the JWE-encrypted commerce password for a session token.
#[utoipa::path(post, path = "/login", tag = "authentication",
    params(super::common::CommonHeaders),
    request_body = LoginRequest,
    responses(
        (status = 200, description = "LOGIN_OK", body = Envelope<LoginPayload>),
        (status = 400, description = "Missing field, or a password that is not a compact JWE", body = ErrorBody),
        (status = 403, description = "Wrong credentials, refused JWE algorithm, username not the commerce header", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: 5 failed logins of this commerce within 15 minutes; every attempt is refused until `Retry-After` seconds have passed", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until logins of this commerce are accepted again"))),
    ),
    security(("apiKey" = [])))]
pub async fn login(
    State(state): State<AppState>,
    merchant: MerchantRequest,
    Body(body): Body<LoginRequest>,
) -> Result<Envelope<LoginPayload>, LoginError> {
    authenticate(
        state,
        merchant,
        body.username,
        body.password.map(Secret::new),
    )
    .await
}

/// Deprecated: the same as `POST /login` with the credentials in the query string. Its query
/// is never logged. Use `POST /login`.
#[utoipa::path(get, path = "/login", tag = "authentication",
    params(super::common::CommonHeaders,
        ("username" = String, Query, description = "The commerce code"),
        ("password" = String, Query, description = "The compact JWE password")),
    responses(
        (status = 200, description = "LOGIN_OK (with `Deprecation` and `Link` headers)", body = Envelope<LoginPayload>),
        (status = 400, description = "Missing parameter, or a password that is not a compact JWE", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: 5 failed logins of this commerce within 15 minutes (both login forms count together)", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until logins of this commerce are accepted again"))),
    ),
    security(("apiKey" = [])))]
#[deprecated = "use POST /login"]
pub async fn login_deprecated(
    State(state): State<AppState>,
    merchant: MerchantRequest,
    Query(mut query): Query<HashMap<String, String>>,
) -> Response {
    let username = query.remove("username");
    let password = query.remove("password").map(Secret::new);
    let mut response = match authenticate(state, merchant, username, password).await {
        Ok(envelope) => envelope.into_response(),
        Err(e) => e.into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(
        "Deprecation",
        HeaderValue::from_str(&format!("@{GET_LOGIN_DEPRECATED_AT}")).expect("ASCII"),
    );
    headers.insert(
        "Link",
        HeaderValue::from_static("</api/v1/login>; rel=\"successor-version\""),
    );
    response
}

async fn authenticate(
    state: AppState,
    merchant: MerchantRequest,
    username: Option<String>,
    password: Option<Secret<String>>,
) -> Result<Envelope<LoginPayload>, LoginError> {
    let mut errors = FieldErrors::new();
    if username.as_deref().is_none_or(str::is_empty) {
        errors.missing("username");
    }
    if password.as_ref().is_none_or(|p| p.expose().is_empty()) {
        errors.missing("password");
    }
    errors.into_result()?;
    let (username, password) = (username.expect("validated"), password.expect("validated"));
    if username != merchant.commerce.code {
        return Err(Error::forbidden(
            "USERNAME_MISMATCH",
            "username must be the commerce of the commerce header",
        )
        .into());
    }
    // Counted before any decryption or hashing, so a locked commerce costs us nothing.
    let key = ThrottleKey::commerce(&merchant.commerce.code);
    begin_attempt(&state, &key).await?;
    let plain = match state.keys.jwe.decrypt_password(password.expose()) {
        Ok(plain) => plain,
        Err(JweError::NotCompactJwe) => {
            // A malformed request guesses nothing: it does not count against the commerce.
            state.withdraw_sign_in(key.clone()).await?;
            return Err(Error::validation(
                "password",
                "PASSWORD_NOT_JWE",
                "the password must be a compact JWE encrypted with the environment's public key; plain text is refused",
            )
            .into());
        }
        Err(JweError::AlgorithmRefused { .. }) => {
            return Err(Error::forbidden(
                "JWE_ALGORITHM_REFUSED",
                "use alg RSA-OAEP-256 (or RSA-OAEP) with enc A256GCM, A128GCM, A128CBC-HS256 or A256CBC-HS512",
            )
            .into());
        }
        Err(_) => {
            return Err(
                Error::forbidden("INVALID_CREDENTIALS", "the credentials are not valid").into(),
            );
        }
    };
    let hash = merchant.commerce.password_hash.clone();
    let matches = password::verify(plain, Some(hash))
        .await
        .map_err(Error::Internal)?;
    if !matches {
        return Err(
            Error::forbidden("INVALID_CREDENTIALS", "the credentials are not valid").into(),
        );
    }
    attempt_succeeded(&state, key).await?;
    let issued = state
        .keys
        .jwt
        .issue(
            &merchant.commerce.code,
            state.config.environment.as_str(),
            state.clock.now(),
            state.config.jwt_lifetime_secs,
        )
        .map_err(|e| Error::Internal(anyhow::anyhow!("could not sign the token: {e}")))?;
    Ok(Envelope::ok(
        "LOGIN_OK",
        "logged in",
        LoginPayload {
            token: issued.token.into_inner(),
            token_type: "Bearer",
            expires_in: state.config.jwt_lifetime_secs,
            expires_at: mandato_core::clock::timestamp(issued.expires_at),
        },
    ))
}

/// Why a sign-in (merchant or staff) or a setup-code attempt was refused: an ordinary error,
/// or 429 `TOO_MANY_ATTEMPTS` with `Retry-After` (CONTRACT 12, sign-in throttling).
#[derive(Debug)]
pub enum LoginError {
    Api(ApiError),
    TooManyAttempts {
        retry_after_secs: u64,
    },
    /// A new key refused while the throttle's table is full of open windows (a flood): the same
    /// 429 and name, so that a client waits `Retry-After` as it would for a lock.
    Crowded {
        retry_after_secs: u64,
    },
}

impl From<ApiError> for LoginError {
    fn from(e: ApiError) -> Self {
        LoginError::Api(e)
    }
}

impl From<Error> for LoginError {
    fn from(e: Error) -> Self {
        LoginError::Api(ApiError(e))
    }
}

impl IntoResponse for LoginError {
    fn into_response(self) -> Response {
        match self {
            LoginError::Api(e) => e.into_response(),
            LoginError::TooManyAttempts { retry_after_secs } => too_many(
                retry_after_secs,
                format!("too many failed attempts; try again in {retry_after_secs} seconds"),
            ),
            LoginError::Crowded { retry_after_secs } => too_many(
                retry_after_secs,
                format!("too many sign-ins are under way; try again in {retry_after_secs} seconds"),
            ),
        }
    }
}

/// 429 `TOO_MANY_ATTEMPTS` with `Retry-After`.
fn too_many(retry_after_secs: u64, message: String) -> Response {
    let body = ErrorBody {
        status_code: StatusCode::TOO_MANY_REQUESTS.as_u16(),
        name: "TOO_MANY_ATTEMPTS".into(),
        message,
        correlation_id: current_correlation_id(),
        errors: Vec::new(),
    };
    let mut response = (StatusCode::TOO_MANY_REQUESTS, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

/// Counts an attempt for `key` now, or refuses it while the key is locked.
pub(crate) async fn begin_attempt(state: &AppState, key: &ThrottleKey) -> Result<(), LoginError> {
    let decision = state.begin_sign_in(key).await?;
    match decision {
        Decision::Counted(_) => Ok(()),
        Decision::Locked { retry_after_secs } => {
            tracing::warn!(
                key = key.as_str(),
                retry_after_secs,
                "sign-in attempt refused: too many failures"
            );
            Err(LoginError::TooManyAttempts { retry_after_secs })
        }
        Decision::Crowded { retry_after_secs } => {
            tracing::warn!(
                retry_after_secs,
                "sign-in attempt refused: the throttle is full of open windows (a flood of \
                 invented e-mails?); no lock is dropped to make room"
            );
            Err(LoginError::Crowded { retry_after_secs })
        }
    }
}

/// The attempt succeeded: its key's failures are forgotten.
pub(crate) async fn attempt_succeeded(state: &AppState, key: ThrottleKey) -> Result<(), Error> {
    state.sign_in_succeeded(key).await
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EncryptRequest {
    /// 1 to 200 characters. Never logged.
    pub password: Option<String>,
    /// The environment's public key (PEM), 100 to 10000 characters.
    pub public_key: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EncryptPayload {
    /// Compact JWE (RSA-OAEP-256 / A256GCM) to send as the login password.
    pub token: String,
}

/// Sandbox only: encrypt a password as a JWE for `POST /login`. Production answers 404.
#[utoipa::path(post, path = "/jwe/encrypt", tag = "authentication",
    params(super::common::CommonHeaders),
    request_body = EncryptRequest,
    responses(
        (status = 200, description = "JWE_ENCRYPT_OK", body = Envelope<EncryptPayload>),
        (status = 400, description = "Bad lengths or an unreadable public key", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Not available in production", body = ErrorBody),
    ),
    security(("apiKey" = [])))]
pub async fn encrypt(
    State(state): State<AppState>,
    _merchant: MerchantRequest,
    Body(body): Body<EncryptRequest>,
) -> ApiResult<Envelope<EncryptPayload>> {
    if !state.config.environment.is_sandbox() {
        return Err(Error::not_found("operation").into());
    }
    let password = body.password.map(Secret::new);
    let mut errors = FieldErrors::new();
    match password.as_ref().map(|p| p.expose().chars().count()) {
        None => errors.missing("password"),
        Some(n) if !(1..=200).contains(&n) => {
            errors.push("password", "INVALID_LENGTH", "1 to 200 characters")
        }
        Some(_) => {}
    }
    match body.public_key.as_ref().map(|k| k.chars().count()) {
        None => errors.missing("publicKey"),
        Some(n) if !(100..=10_000).contains(&n) => {
            errors.push("publicKey", "INVALID_LENGTH", "100 to 10000 characters")
        }
        Some(_) => {}
    }
    errors.into_result()?;
    let token = jwe::encrypt_password(
        password.expect("validated").expose(),
        body.public_key.as_deref().expect("validated"),
    )
    .map_err(|_| {
        Error::validation(
            "publicKey",
            "INVALID_PUBLIC_KEY",
            "not an RSA public key in PEM form",
        )
    })?;
    Ok(Envelope::ok(
        "JWE_ENCRYPT_OK",
        "password encrypted",
        EncryptPayload { token },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JwePublicKeyPayload {
    /// SPKI PEM of the environment's RSA-3072 key.
    #[serde(rename = "publicKey")]
    pub public_key: String,
    pub kid: String,
    pub alg: &'static str,
    pub enc: &'static str,
}

/// The public key that login passwords are encrypted with. No headers needed.
#[utoipa::path(get, path = "/.well-known/jwe-public-key", tag = "authentication",
    responses((status = 200, description = "JWE_PUBLIC_KEY_OK", body = Envelope<JwePublicKeyPayload>)))]
pub async fn jwe_public_key(State(state): State<AppState>) -> Envelope<JwePublicKeyPayload> {
    Envelope::ok(
        "JWE_PUBLIC_KEY_OK",
        "the environment's JWE public key",
        JwePublicKeyPayload {
            public_key: state.keys.jwe.public_pem().to_string(),
            kid: state.keys.jwe.kid().to_string(),
            alg: "RSA-OAEP-256",
            enc: "A256GCM",
        },
    )
}

/// The JWK Set of the key that signs session tokens (bare RFC 7517, no envelope).
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "authentication",
    responses((status = 200, description = "RFC 7517 JWK Set", body = Object)))]
pub async fn jwks(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(state.keys.jwt.jwks())
}
