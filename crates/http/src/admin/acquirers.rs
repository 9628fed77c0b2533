//! Settings › Acquirers (CONTRACT 13): each commerce's acquirer per rail, for admins. The
//! secret is write-only: it is taken, stored and never answered (`secretSet` says whether one
//! is stored); a change that keeps the rail's kind may leave it out.

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use mandato_core::domain::acquirer::{AcquirerInput, Rail};
use mandato_core::error::Error;
use mandato_core::secret::Secret;
use mandato_engine::operations::acquirers::AcquirerView;
use mandato_engine::records::Role;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcquirerDto {
    /// `cards` (methods 3, 4, 11 and portal payments) or `bank` (methods 5, 6, 14).
    pub rail: String,
    /// `simulated` (sandbox only), `transbank` (cards) or `fintoc` (bank).
    pub kind: String,
    /// Transbank's `mallCode`, `childCode`, `webpayCode` and `responseCodeLevel` (1 or 2), or
    /// Fintoc's `publicKey`.
    #[schema(value_type = Object)]
    pub terms: Value,
    pub base_url: Option<String>,
    /// Whether a secret is stored; the secret itself is never answered.
    pub secret_set: bool,
    /// Fintoc: whether the webhook endpoint's secret is stored (Fintoc's webhooks to
    /// `/acquirers/fintoc/webhook` are then verified and acted on).
    pub webhook_secret_set: bool,
    pub updated_at: String,
}

impl From<AcquirerView> for AcquirerDto {
    fn from(v: AcquirerView) -> Self {
        AcquirerDto {
            rail: v.rail,
            kind: v.kind,
            terms: v.terms,
            base_url: v.base_url,
            secret_set: v.secret_set,
            webhook_secret_set: v.webhook_secret_set,
            updated_at: v.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcquirersDto {
    pub commerce: String,
    pub acquirers: Vec<AcquirerDto>,
}

/// No `Debug`: the body holds a secret, wrapped as soon as it is read.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcquirerRequest {
    /// `simulated`, `transbank` or `fintoc`.
    pub kind: Option<String>,
    /// Transbank: the Oneclick Mall's commerce code (1 to 12 digits).
    pub mall_code: Option<String>,
    /// Transbank: the Oneclick Mall child store's commerce code.
    pub child_code: Option<String>,
    /// Transbank: the Webpay Plus commerce code.
    pub webpay_code: Option<String>,
    /// Transbank: the table of response codes Transbank gives the commerce, 1 (every
    /// commerce's default) or 2 (on request to Transbank). Absent: 1.
    #[schema(minimum = 1, maximum = 2)]
    pub response_code_level: Option<u8>,
    /// Fintoc: the public key (`pk_live_...` or `pk_test_...`).
    pub public_key: Option<String>,
    /// Where the rail's API is; absent: the rail's production environment (its integration
    /// environment in a sandbox). `http://` only in a sandbox.
    pub base_url: Option<String>,
    /// Transbank's `Tbk-Api-Key-Secret` or Fintoc's secret key. Write-only; may be left out
    /// when the rail keeps its kind.
    pub secret: Option<String>,
    /// Fintoc: the secret of the webhook endpoint registered at Fintoc (`whsec_...`).
    /// Write-only; optional; kept when left out and the rail keeps its kind.
    pub webhook_secret: Option<String>,
}

fn rail_of(text: &str) -> Result<Rail, Error> {
    Rail::parse(text).ok_or_else(|| Error::validation("rail", "INVALID_VALUE", "cards or bank"))
}

fn answer(
    code: &'static str,
    message: &'static str,
    commerce: &str,
    views: Vec<AcquirerView>,
) -> Envelope<AcquirersDto> {
    Envelope::ok(
        code,
        message,
        AcquirersDto {
            commerce: commerce.to_string(),
            acquirers: views.into_iter().map(AcquirerDto::from).collect(),
        },
    )
}

/// A commerce's acquirers, cards first (admin).
#[utoipa::path(get, path = "/commerces/{code}/acquirers", tag = "staff",
    params(("code" = String, Path)),
    responses(
        (status = 200, description = "ACQUIRERS_OK", body = Envelope<AcquirersDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
) -> ApiResult<Envelope<AcquirersDto>> {
    staff.require(Role::Admin)?;
    let views = state.acquirers(&code)?;
    Ok(answer("ACQUIRERS_OK", "acquirers", &code, views))
}

/// Sets a commerce's acquirer of a rail (admin). Production refuses `simulated`
/// (`ACQUIRER_NOT_ALLOWED`) and any `http://` base URL.
#[utoipa::path(put, path = "/commerces/{code}/acquirers/{rail}", tag = "staff",
    params(("code" = String, Path), ("rail" = String, Path, description = "cards or bank")),
    request_body = AcquirerRequest,
    responses(
        (status = 200, description = "ACQUIRER_SET_OK", body = Envelope<AcquirersDto>),
        (status = 400, description = "Every bad field named; ACQUIRER_NOT_ALLOWED", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn set(
    State(state): State<AppState>,
    staff: Staff,
    Path((code, rail)): Path<(String, String)>,
    Body(body): Body<AcquirerRequest>,
) -> ApiResult<Envelope<AcquirersDto>> {
    staff.require(Role::Admin)?;
    let rail = rail_of(&rail)?;
    let input = AcquirerInput {
        rail: Some(rail.as_str().to_string()),
        kind: body.kind,
        mall_code: body.mall_code,
        child_code: body.child_code,
        webpay_code: body.webpay_code,
        response_code_level: body.response_code_level.map(|n| n.to_string()),
        public_key: body.public_key,
        base_url: body.base_url,
        secret: body
            .secret
            .filter(|s| !s.trim().is_empty())
            .map(Secret::new),
        webhook_secret: body
            .webhook_secret
            .filter(|s| !s.trim().is_empty())
            .map(Secret::new),
    };
    let views = state.set_acquirer(staff.email(), &code, input)?;
    Ok(answer("ACQUIRER_SET_OK", "acquirer saved", &code, views))
}

/// Removes a commerce's acquirer of a rail (admin): the rail's methods are no longer offered
/// or charged (in a sandbox the simulation serves it again).
#[utoipa::path(delete, path = "/commerces/{code}/acquirers/{rail}", tag = "staff",
    params(("code" = String, Path), ("rail" = String, Path, description = "cards or bank")),
    responses(
        (status = 200, description = "ACQUIRER_REMOVE_OK", body = Envelope<AcquirersDto>),
        (status = 400, description = "rail is not cards or bank", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND or ACQUIRER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    staff: Staff,
    Path((code, rail)): Path<(String, String)>,
) -> ApiResult<Envelope<AcquirersDto>> {
    staff.require(Role::Admin)?;
    let rail = rail_of(&rail)?;
    let views = state.remove_acquirer(staff.email(), &code, rail)?;
    Ok(answer(
        "ACQUIRER_REMOVE_OK",
        "acquirer removed",
        &code,
        views,
    ))
}
