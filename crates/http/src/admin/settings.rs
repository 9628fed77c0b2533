//! Settings for staff: commerces (list, register, retry policy), API keys (create, shown once;
//! list; revoke), the environment and its JWE public key, trusted roots for webhook delivery,
//! and staff accounts. Reading is open to every role (staff accounts to admins); every change
//! is the admin's, and is recorded in the staff audit log in its own transaction.

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::session::{MIN_PASSWORD_CHARS, Staff};
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use crate::wire::ActivationModeDto;
use mandato_core::clock::timestamp;
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::commerce::CommerceCode;
use mandato_core::domain::contact::Email;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, FieldErrors};
use mandato_core::secret::Secret;
use mandato_engine::auth::{api_key, password};
use mandato_engine::records::{Role, StaffLine};
use mandato_engine::staff::settings::{NewCommerce, StaffChange};

/// The retry days when a commerce has no policy of its own (CONTRACT 6).
const DEFAULT_RETRY_DAYS: [i64; 3] = [1, 3, 7];

// Commerces.

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicyDto {
    /// Days after the first rejection on which a soft decline is retried.
    pub after_days: Vec<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommerceDto {
    pub code: String,
    pub name: String,
    /// Allowed `channel` header values; null: any.
    pub channels: Option<Vec<String>>,
    pub payment_methods: Vec<i64>,
    pub authorization_required: bool,
    /// The commerce's policy, or the default.
    pub retry_policy: RetryPolicyDto,
    /// False when the commerce uses the default policy.
    pub custom_retry_policy: bool,
    /// During a secret rotation: until when the previous secret also signs.
    pub previous_secret_valid_until: Option<String>,
    pub created_at: String,
    /// How its mandates are activated when `POST /mandate` does not say.
    pub activation_mode: ActivationModeDto,
    /// Where charges due on a weekend or holiday go: `NEXT` or `PREVIOUS` business day.
    pub charging_rule: &'static str,
    /// The commerce's own receiver (`https://`), where the developer commands (`mandato
    /// trigger`) send the events of what they make; null: none set.
    pub webhook_url: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CommercesPayload {
    pub items: Vec<CommerceDto>,
}

fn retry_days(stored: Option<&str>) -> Option<Vec<i64>> {
    let value: serde_json::Value = serde_json::from_str(stored?).ok()?;
    serde_json::from_value(value["afterDays"].clone()).ok()
}

/// Every commerce of the installation.
#[utoipa::path(get, path = "/commerces", tag = "staff",
    responses(
        (status = 200, description = "COMMERCES_OK", body = Envelope<CommercesPayload>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list_commerces(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<CommercesPayload>> {
    let (rows, rules) = state.commerces()?;
    let now = timestamp(state.clock.now());
    let items = rows
        .into_iter()
        .map(|r| {
            let custom = retry_days(r.retry_policy.as_deref());
            let rule = rules.get(&r.code).copied().unwrap_or_default();
            CommerceDto {
                charging_rule: rule.as_str(),
                code: r.code,
                name: r.name,
                channels: r.channels.and_then(|c| serde_json::from_str(&c).ok()),
                payment_methods: serde_json::from_str(&r.payment_methods).unwrap_or_default(),
                authorization_required: r.authorization_required,
                custom_retry_policy: custom.is_some(),
                retry_policy: RetryPolicyDto {
                    after_days: custom.unwrap_or_else(|| DEFAULT_RETRY_DAYS.to_vec()),
                },
                previous_secret_valid_until: r.previous_secret_expires_at.filter(|at| *at > now),
                created_at: r.created_at,
                activation_mode: ActivationMode::from_name(&r.activation_mode)
                    .unwrap_or_default()
                    .into(),
                webhook_url: r.webhook_url,
            }
        })
        .collect();
    Ok(Envelope::ok(
        "COMMERCES_OK",
        "commerces",
        CommercesPayload { items },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCommerceRequest {
    /// A RUT (`76.123.456-0`, kept as `76123456-0`; a code written as a RUT must have the
    /// right check digit: `INVALID_RUT`) or an issued code (1 to 64 letters, digits, `-`, `_`,
    /// `.`).
    pub code: Option<String>,
    /// 1 to 200 characters.
    pub name: Option<String>,
    /// The login password, at least 8 characters; generated (and shown once) when absent.
    pub password: Option<String>,
    /// Allowed `channel` header values (each 1 to 64 characters); absent or empty: any.
    pub channels: Option<Vec<String>>,
    /// Enabled payment methods (3, 4, 11, 5, 6, 14); absent: all.
    pub payment_methods: Option<Vec<i64>>,
    /// Manual payments must carry an authorization code.
    pub authorization_required: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCommerceResult {
    pub code: String,
    /// Shown once: the key of the webhook signatures.
    pub webhook_secret: String,
    /// Shown once, when it was generated.
    pub password: Option<String>,
}

/// A commerce code as staff type it (`CommerceCode`: a RUT normalized, or an issued code).
fn commerce_code(text: &str, errors: &mut FieldErrors) -> Option<String> {
    match CommerceCode::parse(text) {
        Ok(code) => Some(code.into_string()),
        Err(e) => {
            errors.push("code", e.name(), e.to_string());
            None
        }
    }
}

/// Registers a commerce (admin); its webhook secret (and generated password) are shown once.
#[utoipa::path(post, path = "/commerces", tag = "staff",
    request_body = NewCommerceRequest,
    responses(
        (status = 201, description = "COMMERCE_CREATED", body = Envelope<NewCommerceResult>),
        (status = 400, description = "Invalid field, COMMERCE_EXISTS", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn create_commerce(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<NewCommerceRequest>,
) -> ApiResult<Envelope<NewCommerceResult>> {
    staff.require(Role::Admin)?;
    let mut errors = FieldErrors::new();
    let code = match body.code.as_deref().map(str::trim) {
        None | Some("") => {
            errors.missing("code");
            None
        }
        Some(text) => commerce_code(text, &mut errors),
    };
    let name = crate::users::required_text(
        body.name.as_ref(),
        "name",
        mandato_core::domain::commerce::MAX_NAME_CHARS,
        &mut errors,
    );
    let password = match body.password.as_deref() {
        None | Some("") => None,
        Some(p) if p.chars().count() < 8 => {
            errors.push("password", "TOO_SHORT", "at least 8 characters");
            None
        }
        Some(p) => Some(Secret::new(p.to_string())),
    };
    let mut channels = Vec::new();
    for (i, channel) in body.channels.iter().flatten().enumerate() {
        let channel = channel.trim();
        if channel.is_empty() || channel.chars().count() > 64 {
            errors.push(
                format!("channels[{i}]"),
                "INVALID_CHANNEL",
                "1 to 64 characters",
            );
        } else {
            channels.push(channel.to_string());
        }
    }
    let methods: Vec<PaymentMethod> = match &body.payment_methods {
        None => PaymentMethod::ALL.to_vec(),
        Some(ids) if ids.is_empty() => {
            errors.push(
                "paymentMethods",
                "EMPTY",
                "enable at least one payment method",
            );
            Vec::new()
        }
        Some(ids) => ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let method = PaymentMethod::from_id(*id);
                if method.is_none() {
                    errors.push(
                        format!("paymentMethods[{i}]"),
                        "INVALID_PAYMENT_METHOD",
                        "one of 3, 4, 11, 5, 6, 14",
                    );
                }
                method
            })
            .collect(),
    };
    errors.into_result()?;
    let (code, name) = (code.expect("validated"), name.expect("validated"));
    let generated = password.is_none();
    let password = password.unwrap_or_else(password::generate_commerce_password);
    let shown = generated.then(|| password.expose().clone());
    let hash = tokio::task::spawn_blocking(move || password::hash_password(&password))
        .await
        .map_err(|e| Error::Internal(e.into()))?;
    let secret = api_key::generate_webhook_secret();
    state.create_commerce(
        staff.email(),
        &NewCommerce {
            code: &code,
            name: &name,
            password_hash: &hash,
            channels: &channels,
            payment_methods: &methods,
            webhook_secret: &secret,
            authorization_required: body.authorization_required.unwrap_or(false),
        },
    )?;
    Ok(Envelope::created(
        "COMMERCE_CREATED",
        "commerce registered; its secret is shown once",
        NewCommerceResult {
            code,
            webhook_secret: secret.into_inner(),
            password: shown,
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicyRequest {
    /// 1 to 10 increasing days (1 to 90) after the first rejection; null or absent: back to
    /// the default (1, 3, 7).
    pub after_days: Option<Vec<i64>>,
}

/// Sets a commerce's retry policy for soft declines (admin).
#[utoipa::path(put, path = "/commerces/{code}/retry-policy", tag = "staff",
    params(("code" = String, Path)),
    request_body = RetryPolicyRequest,
    responses(
        (status = 200, description = "RETRY_POLICY_OK", body = Envelope<RetryPolicyDto>),
        (status = 400, description = "Invalid days", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn set_retry_policy(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
    Body(body): Body<RetryPolicyRequest>,
) -> ApiResult<Envelope<RetryPolicyDto>> {
    staff.require(Role::Admin)?;
    if let Some(days) = &body.after_days {
        let increasing = days.windows(2).all(|w| w[0] < w[1]);
        if days.is_empty()
            || days.len() > 10
            || !increasing
            || days.iter().any(|d| !(1..=90).contains(d))
        {
            return Err(Error::validation(
                "afterDays",
                "INVALID_POLICY",
                "1 to 10 increasing days, each from 1 to 90",
            )
            .into());
        }
    }
    let policy = body
        .after_days
        .as_ref()
        .map(|days| serde_json::json!({"afterDays": days}).to_string());
    state.set_retry_policy(staff.email(), &code, policy.as_deref())?;
    Ok(Envelope::ok(
        "RETRY_POLICY_OK",
        "retry policy saved",
        RetryPolicyDto {
            after_days: body
                .after_days
                .unwrap_or_else(|| DEFAULT_RETRY_DAYS.to_vec()),
        },
    ))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivationModeRequest {
    /// `DIRECT`: enrolling the instrument activates the mandate; `SIGNATURE`: the customer
    /// then signs the mandate document, and its completion activates the mandate.
    pub mode: ActivationModeDto,
}

/// Sets how a commerce's mandates are activated when the creating request does not say
/// (admin). Mandates already created keep their mode.
#[utoipa::path(put, path = "/commerces/{code}/activation-mode", tag = "staff",
    params(("code" = String, Path)),
    request_body = ActivationModeRequest,
    responses(
        (status = 200, description = "ACTIVATION_MODE_OK", body = Envelope<ActivationModeRequest>),
        (status = 400, description = "Invalid mode", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn set_activation_mode(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
    Body(body): Body<ActivationModeRequest>,
) -> ApiResult<Envelope<ActivationModeRequest>> {
    staff.require(Role::Admin)?;
    let mode = ActivationMode::from(body.mode);
    state.set_activation_mode(staff.email(), &code, mode)?;
    Ok(Envelope::ok(
        "ACTIVATION_MODE_OK",
        "activation mode saved",
        ActivationModeRequest { mode: mode.into() },
    ))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookUrlRequest {
    /// An `https://` URL with a host, at most 2048 characters, pointing where the
    /// installation delivers; null or empty clears it.
    pub webhook_url: Option<String>,
}

/// Sets or clears a commerce's webhook URL (admin), checked as a mandate's webhook URLs are;
/// the change goes to the staff audit.
#[utoipa::path(put, path = "/commerces/{code}/webhook-url", tag = "staff",
    params(("code" = String, Path)),
    request_body = WebhookUrlRequest,
    responses(
        (status = 200, description = "WEBHOOK_URL_OK", body = Envelope<WebhookUrlRequest>),
        (status = 400, description = "INVALID_URL or WEBHOOK_URL_NOT_ALLOWED at webhookUrl", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn set_webhook_url(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
    Body(body): Body<WebhookUrlRequest>,
) -> ApiResult<Envelope<WebhookUrlRequest>> {
    staff.require(Role::Admin)?;
    let text = body.webhook_url.filter(|u| !u.trim().is_empty());
    let mut errors = FieldErrors::new();
    let url = crate::fields::https_url(text.as_ref(), "webhookUrl", &mut errors);
    errors.into_result()?;
    crate::fields::webhook_destinations(
        mandato_engine::notify::destination::Destinations::of(&state.config),
        [("webhookUrl", url.as_deref())],
    )?;
    state.set_commerce_webhook_url(staff.email(), &code, url.as_deref())?;
    Ok(Envelope::ok(
        "WEBHOOK_URL_OK",
        "webhook URL saved",
        WebhookUrlRequest { webhook_url: url },
    ))
}

// API keys.

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyDto {
    /// The key's first 8 characters, to tell keys apart.
    pub prefix: String,
    /// What the key is for, as staff named it (null for keys made without a name).
    pub name: Option<String>,
    /// The latest request accepted with the key, to the minute (null: never used).
    pub last_used_at: Option<String>,
    /// Valid for every commerce (else only for `commerces`).
    pub all_commerces: bool,
    pub commerces: Vec<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeysPayload {
    pub items: Vec<ApiKeyDto>,
}

/// Every API key, newest first (never the key itself).
#[utoipa::path(get, path = "/api-keys", tag = "staff",
    responses(
        (status = 200, description = "API_KEYS_OK", body = Envelope<ApiKeysPayload>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list_api_keys(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<ApiKeysPayload>> {
    let rows = state.api_keys()?;
    Ok(Envelope::ok(
        "API_KEYS_OK",
        "API keys",
        ApiKeysPayload {
            items: rows
                .into_iter()
                .map(|k| ApiKeyDto {
                    prefix: k.prefix,
                    name: k.name,
                    last_used_at: k.last_used_at,
                    all_commerces: k.all_commerces,
                    commerces: k.commerces,
                    created_at: k.created_at,
                    revoked_at: k.revoked_at,
                })
                .collect(),
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewApiKeyRequest {
    /// Codes of the commerces the key may act for; absent or empty: every commerce.
    pub commerces: Option<Vec<String>>,
    /// What the key is for (`Checkout web`), 1 to 100 characters; shown in the list.
    pub name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewApiKeyResult {
    /// Shown once; only its hash is kept.
    pub api_key: String,
    pub prefix: String,
    pub commerces: Vec<String>,
    pub name: Option<String>,
}

/// Creates an API key (admin); the key is in this answer only.
#[utoipa::path(post, path = "/api-keys", tag = "staff",
    request_body = NewApiKeyRequest,
    responses(
        (status = 201, description = "API_KEY_CREATED", body = Envelope<NewApiKeyResult>),
        (status = 400, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn create_api_key(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<NewApiKeyRequest>,
) -> ApiResult<Envelope<NewApiKeyResult>> {
    staff.require(Role::Admin)?;
    let mut errors = FieldErrors::new();
    let name = crate::users::optional_text(body.name.as_ref(), "name", 100, &mut errors);
    errors.into_result()?;
    let codes = body.commerces.unwrap_or_default();
    let key = api_key::generate();
    state.create_api_key(staff.email(), &key, &codes, name.as_deref())?;
    Ok(Envelope::created(
        "API_KEY_CREATED",
        "API key created; it is shown once",
        NewApiKeyResult {
            api_key: key.key.expose().clone(),
            prefix: key.prefix,
            commerces: codes,
            name,
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RevokedApiKey {
    pub prefix: String,
}

/// Revokes the active API key with this prefix (admin): requests with it are refused at once.
#[utoipa::path(delete, path = "/api-keys/{prefix}", tag = "staff",
    params(("prefix" = String, Path, description = "The key's first 8 characters")),
    responses(
        (status = 200, description = "API_KEY_REVOKED", body = Envelope<RevokedApiKey>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "API_KEY_NOT_FOUND (or already revoked)", body = ErrorBody),
    ))]
pub async fn revoke_api_key(
    State(state): State<AppState>,
    staff: Staff,
    Path(prefix): Path<String>,
) -> ApiResult<Envelope<RevokedApiKey>> {
    staff.require(Role::Admin)?;
    state.revoke_api_key(staff.email(), &prefix)?;
    Ok(Envelope::ok(
        "API_KEY_REVOKED",
        "API key revoked",
        RevokedApiKey { prefix },
    ))
}

// The environment.

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JwePublicKeyDto {
    /// PEM (SPKI): merchants encrypt their login password with it.
    pub public_key: String,
    pub kid: String,
    pub alg: &'static str,
    pub enc: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentDto {
    /// `sandbox` or `production`.
    pub environment: &'static str,
    /// Where merchants and customers reach this installation.
    pub public_base_url: String,
    pub time_zone: String,
    /// The business date (the sandbox clock may be ahead of the calendar).
    pub today: String,
    pub jwe_public_key: JwePublicKeyDto,
    pub version: &'static str,
}

/// The environment: its name, time zone, business date and the JWE public key to copy.
#[utoipa::path(get, path = "/environment", tag = "staff",
    responses(
        (status = 200, description = "ENVIRONMENT_OK", body = Envelope<EnvironmentDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn environment(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<EnvironmentDto>> {
    Ok(Envelope::ok(
        "ENVIRONMENT_OK",
        "environment",
        EnvironmentDto {
            environment: state.config.environment.as_str(),
            public_base_url: state.public_base_url.to_string(),
            time_zone: state.calendar.time_zone().name().to_string(),
            today: state.today().to_string(),
            jwe_public_key: JwePublicKeyDto {
                public_key: state.keys.jwe.public_pem().to_string(),
                kid: state.keys.jwe.kid().to_string(),
                alg: "RSA-OAEP-256",
                enc: "A256GCM",
            },
            version: env!("CARGO_PKG_VERSION"),
        },
    ))
}

// Trusted roots.

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustedRootDto {
    /// Hex SHA-256 of the certificate (DER).
    pub fingerprint: String,
    pub subject: String,
    pub added_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TrustedRootsPayload {
    /// Beside the system's roots and the installation's own development CA.
    pub items: Vec<TrustedRootDto>,
}

/// The extra root certificates webhook delivery trusts.
#[utoipa::path(get, path = "/trusted-roots", tag = "staff",
    responses(
        (status = 200, description = "TRUSTED_ROOTS_OK", body = Envelope<TrustedRootsPayload>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list_trusted_roots(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<TrustedRootsPayload>> {
    let rows = state.trusted_roots()?;
    Ok(Envelope::ok(
        "TRUSTED_ROOTS_OK",
        "trusted roots",
        TrustedRootsPayload {
            items: rows
                .into_iter()
                .map(|r| TrustedRootDto {
                    fingerprint: r.fingerprint,
                    subject: r.subject,
                    added_at: r.added_at,
                })
                .collect(),
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct TrustedRootRequest {
    /// One or more CA certificates, PEM.
    pub pem: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TrustedRootsAdded {
    /// Subjects of the certificates newly trusted (already trusted ones are skipped).
    pub added: Vec<String>,
    pub certificates: usize,
}

/// Trusts CA certificates for webhook delivery (admin).
#[utoipa::path(post, path = "/trusted-roots", tag = "staff",
    request_body = TrustedRootRequest,
    responses(
        (status = 200, description = "TRUSTED_ROOTS_ADDED", body = Envelope<TrustedRootsAdded>),
        (status = 400, description = "Not a PEM of CA certificates", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn add_trusted_root(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<TrustedRootRequest>,
) -> ApiResult<Envelope<TrustedRootsAdded>> {
    staff.require(Role::Admin)?;
    let pem = body
        .pem
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| Error::validation("pem", "REQUIRED", "is required"))?;
    let roots = mandato_engine::notify::tls::parse_roots(&pem)
        .map_err(|e| Error::validation("pem", "INVALID_CERTIFICATE", e.to_string()))?;
    if roots.is_empty() {
        return Err(Error::validation("pem", "INVALID_CERTIFICATE", "no certificate in it").into());
    }
    let added = state.add_trusted_roots(staff.email(), &roots)?;
    Ok(Envelope::ok(
        "TRUSTED_ROOTS_ADDED",
        "roots trusted",
        TrustedRootsAdded {
            added,
            certificates: roots.len(),
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RemovedRoot {
    pub fingerprint: String,
}

/// Stops trusting a root (admin).
#[utoipa::path(delete, path = "/trusted-roots/{fingerprint}", tag = "staff",
    params(("fingerprint" = String, Path)),
    responses(
        (status = 200, description = "TRUSTED_ROOT_REMOVED", body = Envelope<RemovedRoot>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "TRUSTED_ROOT_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn remove_trusted_root(
    State(state): State<AppState>,
    staff: Staff,
    Path(fingerprint): Path<String>,
) -> ApiResult<Envelope<RemovedRoot>> {
    staff.require(Role::Admin)?;
    state.remove_trusted_root(staff.email(), &fingerprint)?;
    Ok(Envelope::ok(
        "TRUSTED_ROOT_REMOVED",
        "root no longer trusted",
        RemovedRoot { fingerprint },
    ))
}

// Staff accounts.

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffDto {
    pub email: String,
    /// `admin`, `operator` or `viewer`.
    pub role: String,
    pub created_at: String,
    /// Disabled accounts cannot sign in.
    pub disabled_at: Option<String>,
    /// The password is a temporary one an admin set; the member chooses their own at the
    /// next sign-in.
    pub password_change_required: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffPayload {
    pub items: Vec<StaffDto>,
}

fn staff_dto(s: StaffLine) -> StaffDto {
    StaffDto {
        email: s.email,
        role: s.role,
        created_at: s.created_at,
        disabled_at: s.disabled_at,
        password_change_required: s.password_change_required,
    }
}

/// Every staff account (admin).
#[utoipa::path(get, path = "/staff", tag = "staff",
    responses(
        (status = 200, description = "STAFF_OK", body = Envelope<StaffPayload>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
    ))]
pub async fn list_staff(
    State(state): State<AppState>,
    staff: Staff,
) -> ApiResult<Envelope<StaffPayload>> {
    staff.require(Role::Admin)?;
    let rows = state.staff_members()?;
    Ok(Envelope::ok(
        "STAFF_OK",
        "staff accounts",
        StaffPayload {
            items: rows.into_iter().map(staff_dto).collect(),
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewStaffRequest {
    pub email: Option<String>,
    /// At least 10 characters.
    pub password: Option<String>,
    /// `admin`, `operator` or `viewer`.
    pub role: Option<String>,
}

fn parse_role(value: Option<&str>, errors: &mut FieldErrors) -> Option<Role> {
    match value {
        None => {
            errors.missing("role");
            None
        }
        Some(text) => {
            let role = Role::parse(text);
            if role.is_none() {
                errors.push("role", "INVALID_ROLE", "admin, operator or viewer");
            }
            role
        }
    }
}

/// Creates a staff account (admin).
#[utoipa::path(post, path = "/staff", tag = "staff",
    request_body = NewStaffRequest,
    responses(
        (status = 201, description = "STAFF_CREATED", body = Envelope<StaffDto>),
        (status = 400, description = "Invalid field, STAFF_EXISTS", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn create_staff(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<NewStaffRequest>,
) -> ApiResult<Envelope<StaffDto>> {
    staff.require(Role::Admin)?;
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
    match body.password.as_ref().map(|p| p.chars().count()) {
        None => errors.missing("password"),
        Some(n) if n < MIN_PASSWORD_CHARS => errors.push(
            "password",
            "TOO_SHORT",
            format!("at least {MIN_PASSWORD_CHARS} characters"),
        ),
        Some(_) => {}
    }
    let role = parse_role(body.role.as_deref(), &mut errors);
    errors.into_result()?;
    let (email, role) = (
        email.expect("validated").as_str().to_string(),
        role.expect("validated"),
    );
    let password = Secret::new(body.password.expect("validated"));
    let hash = tokio::task::spawn_blocking(move || password::hash_password(&password))
        .await
        .map_err(|e| Error::Internal(e.into()))?;
    let created = state.create_staff(staff.email(), &email, &hash, role)?;
    Ok(Envelope::created(
        "STAFF_CREATED",
        "staff account created",
        staff_dto(created),
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct StaffUpdateRequest {
    /// A new role: `admin`, `operator` or `viewer`.
    pub role: Option<String>,
    /// True disables the account (its sessions end); false enables it again.
    pub disabled: Option<bool>,
}

/// Changes a staff account's role, or disables or enables it (admin). Nobody changes their own
/// account here, and the last active admin stays.
#[utoipa::path(put, path = "/staff/{email}", tag = "staff",
    params(("email" = String, Path)),
    request_body = StaffUpdateRequest,
    responses(
        (status = 200, description = "STAFF_UPDATED", body = Envelope<StaffDto>),
        (status = 400, description = "Invalid role, OWN_ACCOUNT, LAST_ADMIN", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "STAFF_MEMBER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn update_staff(
    State(state): State<AppState>,
    staff: Staff,
    Path(email): Path<String>,
    Body(body): Body<StaffUpdateRequest>,
) -> ApiResult<Envelope<StaffDto>> {
    staff.require(Role::Admin)?;
    let mut errors = FieldErrors::new();
    let role = body
        .role
        .as_deref()
        .and_then(|r| parse_role(Some(r), &mut errors));
    errors.into_result()?;
    let change = StaffChange {
        role,
        disabled: body.disabled,
    };
    let updated = state.update_staff(staff.email(), &email, &change)?;
    Ok(Envelope::ok(
        "STAFF_UPDATED",
        "staff account updated",
        staff_dto(updated),
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordResetResult {
    pub email: String,
    /// Shown once: the member signs in with it and must then choose their own password.
    pub temporary_password: String,
}

/// Letters and digits that cannot be mistaken for one another when read out or copied by hand.
#[utoipa::path(post, path = "/staff/{email}/password-reset", tag = "staff",
    params(("email" = String, Path)),
    responses(
        (status = 200, description = "STAFF_PASSWORD_RESET", body = Envelope<PasswordResetResult>),
        (status = 400, description = "OWN_ACCOUNT: change your own password at PUT /session/password", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "STAFF_MEMBER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn reset_staff_password(
    State(state): State<AppState>,
    staff: Staff,
    Path(email): Path<String>,
) -> ApiResult<Envelope<PasswordResetResult>> {
    staff.require(Role::Admin)?;
    let (email, temporary) = state.reset_staff_password(staff.email(), &email).await?;
    Ok(Envelope::ok(
        "STAFF_PASSWORD_RESET",
        "temporary password set; it is shown once",
        PasswordResetResult {
            email,
            temporary_password: temporary.expose().clone(),
        },
    ))
}

// The UF table.

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UfValueDto {
    /// The business date the value applies to.
    #[schema(format = Date)]
    pub date: String,
    /// CLP per UF on that date, as imported (exact decimal).
    pub value: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UfValuesPayload {
    /// Newest date first.
    pub items: Vec<UfValueDto>,
    /// Pass as `before` for the next (older) page; null on the last page.
    #[schema(format = Date)]
    pub next_before: Option<String>,
    /// How many values the table holds, and its first and last dates.
    pub total: i64,
    #[schema(format = Date)]
    pub first_date: Option<String>,
    #[schema(format = Date)]
    pub last_date: Option<String>,
}

#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct UfQuery {
    /// Only dates before this one (`YYYY-MM-DD`), to page back.
    #[param(format = Date)]
    before: Option<String>,
    /// 1 to 366, default 60.
    #[param(minimum = 1, maximum = 366)]
    limit: Option<i64>,
}

/// The UF table the charging engine converts UF (CLF) installments with, newest date first.
/// Its values come only from staff imports (`POST /uf`, `mandato uf import`); an installment
/// due on a date without a value waits (`waitingUf` in the charging overview).
#[utoipa::path(get, path = "/uf", tag = "staff",
    params(UfQuery),
    responses(
        (status = 200, description = "UF_VALUES_OK", body = Envelope<UfValuesPayload>),
        (status = 400, description = "Invalid query.before or query.limit", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn uf_values(
    State(state): State<AppState>,
    _staff: Staff,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> ApiResult<Envelope<UfValuesPayload>> {
    let mut errors = FieldErrors::new();
    let before = match query.get("before").map(String::as_str) {
        None => None,
        Some(text) => match mandato_core::domain::date::Date::parse(text) {
            Ok(date) => Some(date.to_string()),
            Err(_) => {
                errors.push("query.before", "INVALID_DATE", "a date, YYYY-MM-DD");
                None
            }
        },
    };
    let limit = match query.get("limit").map(|l| l.parse::<i64>()) {
        None => 60,
        Some(Ok(limit)) if (1..=366).contains(&limit) => limit,
        Some(_) => {
            errors.push(
                "query.limit",
                "OUT_OF_RANGE",
                "a whole number from 1 to 366",
            );
            60
        }
    };
    errors.into_result()?;
    let mandato_engine::staff::settings::UfPage {
        rows,
        total,
        first_date,
        last_date,
    } = state.uf_values(before.as_deref(), limit)?;
    let more = rows.len() as i64 > limit;
    let items: Vec<UfValueDto> = rows
        .into_iter()
        .take(limit as usize)
        .map(|(date, value)| UfValueDto { date, value })
        .collect();
    let next_before = more.then(|| items.last().map(|i| i.date.clone())).flatten();
    Ok(Envelope::ok(
        "UF_VALUES_OK",
        "UF values",
        UfValuesPayload {
            items,
            next_before,
            total,
            first_date,
            last_date,
        },
    ))
}

// How long request logs are kept.

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditRetentionDto {
    /// Days the API request audit and the refusal counts are kept, 1 to 3650 (default 90).
    #[schema(minimum = 1, maximum = 3650)]
    pub days: i64,
}

/// How long the API request audit and the refusal counts are kept.
#[utoipa::path(get, path = "/settings/audit-retention", tag = "staff",
    responses(
        (status = 200, description = "AUDIT_RETENTION_OK", body = Envelope<AuditRetentionDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn audit_retention(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<AuditRetentionDto>> {
    let days = state.audit_retention_days()?;
    Ok(Envelope::ok(
        "AUDIT_RETENTION_OK",
        "audit retention",
        AuditRetentionDto { days },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AuditRetentionRequest {
    /// 1 to 3650.
    pub days: Option<i64>,
}

/// Changes how long the API request audit and the refusal counts are kept (admin); older rows
/// are deleted in the background, a small batch at a time.
#[utoipa::path(put, path = "/settings/audit-retention", tag = "staff",
    request_body = AuditRetentionRequest,
    responses(
        (status = 200, description = "AUDIT_RETENTION_OK", body = Envelope<AuditRetentionDto>),
        (status = 400, description = "Invalid days", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn set_audit_retention(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<AuditRetentionRequest>,
) -> ApiResult<Envelope<AuditRetentionDto>> {
    staff.require(Role::Admin)?;
    let days = body
        .days
        .ok_or_else(|| Error::validation("days", "REQUIRED", "is required"))?;
    state.set_audit_retention_days(staff.email(), days)?;
    Ok(Envelope::ok(
        "AUDIT_RETENTION_OK",
        "audit retention changed",
        AuditRetentionDto { days },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commerce_codes_written_as_ruts_need_their_check_digit() {
        let check = |text: &str| {
            let mut errors = FieldErrors::new();
            let code = commerce_code(text, &mut errors);
            (
                code,
                errors
                    .into_vec()
                    .into_iter()
                    .map(|e| e.code)
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(check("76.123.456-0"), (Some("76123456-0".into()), vec![]));
        assert_eq!(check("76.123.456-1").1, ["INVALID_RUT"]);
        assert_eq!(check("GYM-SUR"), (Some("GYM-SUR".into()), vec![]));
        assert_eq!(check("no spaces allowed").1, ["INVALID_CODE"]);
    }
}
