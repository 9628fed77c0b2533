//! Settings › Acquirers › fees (CONTRACT 13): each commerce's fee rule per payment method, for
//! admins. The ledger charges an approval at its rule when the acquirer reported no fee
//! (Transbank and Fintoc never do); a method without a rule of its own uses the simulated
//! acquirer's rates.

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use mandato_core::domain::fees::{FeeRule, FeeRuleInput};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::Error;
use mandato_engine::operations::fees::FeeRuleView;
use mandato_engine::records::Role;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeeRuleDto {
    /// 3, 4, 5, 6, 11 or 14.
    pub method_id: i64,
    pub method_name: String,
    /// Percent of the amount, as a decimal string ("2.95" is 2.95 %).
    pub commission_percent: String,
    /// Whole pesos per approved charge, as a decimal string.
    pub fixed: String,
    /// Whether IVA (19 %) is added on the commission and the fixed amount.
    pub iva: bool,
    /// False: the commerce set no rule for the method, and the default applies.
    pub own: bool,
    pub updated_at: Option<String>,
}

impl From<FeeRuleView> for FeeRuleDto {
    fn from(v: FeeRuleView) -> Self {
        FeeRuleDto {
            method_id: v.method.id(),
            method_name: v.method.name().to_string(),
            commission_percent: v.rule.commission_percent().to_string(),
            fixed: v.rule.fixed().to_string(),
            iva: v.rule.iva(),
            own: v.own,
            updated_at: v.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeeRulesDto {
    pub commerce: String,
    pub rules: Vec<FeeRuleDto>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeeRuleRequest {
    /// Percent from 0 to 20, at most 4 decimals (a number or a decimal string).
    #[schema(value_type = String, example = "2.95")]
    pub commission_percent: Option<Value>,
    /// Whole pesos from 0 to 100000 (a number or a decimal string); absent: 0.
    #[schema(value_type = String, example = "0")]
    pub fixed: Option<Value>,
    /// Whether IVA is added; absent: true.
    pub iva: Option<bool>,
}

/// A number or a decimal string as the text the core checks; anything else is left for it to
/// refuse by name.
fn decimal_text(value: Option<Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn method_of(text: &str) -> Result<PaymentMethod, Error> {
    text.parse()
        .ok()
        .and_then(PaymentMethod::from_id)
        .ok_or_else(|| Error::validation("methodId", "INVALID_VALUE", "3, 4, 5, 6, 11 or 14"))
}

fn answer(code: &'static str, commerce: &str, views: Vec<FeeRuleView>) -> Envelope<FeeRulesDto> {
    Envelope::ok(
        code,
        "fee rules",
        FeeRulesDto {
            commerce: commerce.to_string(),
            rules: views.into_iter().map(FeeRuleDto::from).collect(),
        },
    )
}

/// A commerce's fee rule for every payment method (admin).
#[utoipa::path(get, path = "/commerces/{code}/fees", tag = "staff",
    params(("code" = String, Path)),
    responses(
        (status = 200, description = "FEES_OK", body = Envelope<FeeRulesDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
) -> ApiResult<Envelope<FeeRulesDto>> {
    staff.require(Role::Admin)?;
    let views = state.fee_rules(&code)?;
    Ok(answer("FEES_OK", &code, views))
}

/// Sets a commerce's fee rule for a payment method (admin).
#[utoipa::path(put, path = "/commerces/{code}/fees/{methodId}", tag = "staff",
    params(("code" = String, Path), ("methodId" = i64, Path, description = "3, 4, 5, 6, 11 or 14")),
    request_body = FeeRuleRequest,
    responses(
        (status = 200, description = "FEE_SET_OK", body = Envelope<FeeRulesDto>),
        (status = 400, description = "Every bad field named", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn set(
    State(state): State<AppState>,
    staff: Staff,
    Path((code, method)): Path<(String, String)>,
    Body(body): Body<FeeRuleRequest>,
) -> ApiResult<Envelope<FeeRulesDto>> {
    staff.require(Role::Admin)?;
    let method = method_of(&method)?;
    let rule = FeeRule::parse(&FeeRuleInput {
        commission_percent: decimal_text(body.commission_percent),
        fixed: decimal_text(body.fixed),
        iva: body.iva,
    })?;
    let views = state.set_fee_rule(staff.email(), &code, method, rule)?;
    Ok(answer("FEE_SET_OK", &code, views))
}

/// Puts a commerce's fee rule for a payment method back to the default (admin).
#[utoipa::path(delete, path = "/commerces/{code}/fees/{methodId}", tag = "staff",
    params(("code" = String, Path), ("methodId" = i64, Path, description = "3, 4, 5, 6, 11 or 14")),
    responses(
        (status = 200, description = "FEE_RESET_OK", body = Envelope<FeeRulesDto>),
        (status = 400, description = "methodId is not a payment method", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND or FEE_RULE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn reset(
    State(state): State<AppState>,
    staff: Staff,
    Path((code, method)): Path<(String, String)>,
) -> ApiResult<Envelope<FeeRulesDto>> {
    staff.require(Role::Admin)?;
    let method = method_of(&method)?;
    let views = state.reset_fee_rule(staff.email(), &code, method)?;
    Ok(answer("FEE_RESET_OK", &code, views))
}
