//! Installments: add to DYNAMIC mandates; mark paid or annulled.

use std::sync::Arc;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::fields;
use super::json::{Body, HashedBody};
use super::mandates::{CustomerRefIn, InstallmentIn, UrlsIn};
use super::replay::{self, Created};
use super::users::optional_text;
use super::wire::{InstallmentDto, MandateDto, StateDto};
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::operations::MandateRef;
use mandato_engine::operations::installments::{
    self as ops, Action, AddInstallments, ChangeStatus, OwnedRefs, PaymentEvidence,
};
use mandato_engine::records::Creation;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddInstallmentsRequest {
    /// Exactly one of `userId` and `internalUserId`: the mandate's customer.
    pub customer: Option<CustomerRefIn>,
    /// Exactly one of `id` and `internalId`: the DYNAMIC mandate.
    pub product: Option<ProductRefIn>,
    /// Must equal the number of `installments`.
    #[serde(default, deserialize_with = "fields::json_integer")]
    pub installments_number: Option<i64>,
    pub installments: Option<Vec<InstallmentIn>>,
    /// Accepted for compatibility; the mandate's URLs are used.
    pub urls: Option<UrlsIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductRefIn {
    pub id: Option<String>,
    pub internal_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductSummary {
    pub internal_id: String,
    pub id: String,
    pub state: StateDto,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InstallmentsPayload {
    pub product: ProductSummary,
    pub installments: Vec<InstallmentDto>,
}

fn product_summary(m: &mandato_engine::records::MandateRow, base: &str) -> ProductSummary {
    let dto = MandateDto::new(m, base);
    ProductSummary {
        internal_id: dto.internal_id,
        id: dto.id,
        state: dto.state,
    }
}

fn product_ref(product: Option<&ProductRefIn>, errors: &mut FieldErrors) -> Option<MandateRef> {
    let Some(p) = product else {
        errors.missing("product");
        return None;
    };
    let (external, id) = fields::one_of(
        (p.id.as_ref(), "id"),
        (p.internal_id.as_ref(), "internalId"),
        "product",
        errors,
    )?;
    Some(if external {
        MandateRef::External(id.clone())
    } else {
        MandateRef::Internal(id.clone())
    })
}

/// Add installments to a DYNAMIC mandate: all of them, or none.
///
/// The same request again (same mandate reference and installment ids, JSON compared
/// canonically) is answered exactly as the first was, with `Mandato-Replayed: true`, and adds
/// nothing; another request with an id already used is `DUPLICATED_INSTALLMENT_ID`.
#[utoipa::path(post, path = "/installments", tag = "installments",
    params(super::common::CommonHeaders),
    request_body = AddInstallmentsRequest,
    responses(
        (status = 201, description = "INSTALLMENTS_CREATE_OK", body = Envelope<InstallmentsPayload>,
            headers(("Mandato-Replayed" = String, description = "`true` when this answer repeats the one given to an earlier equal request for the same merchant id; absent otherwise"))),
        (status = 400, description = "Invalid field, duplicated id, not DYNAMIC, MANDATE_STATE_CONFLICT, DATE_OUT_OF_RANGE", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such mandate of this customer in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn add_installments(
    State(state): State<AppState>,
    authed: Authed,
    HashedBody(body, sha256): HashedBody<AddInstallmentsRequest>,
) -> ApiResult<Created> {
    let request = replay::request(Creation::Installments, replay_key(&body), sha256);
    let command = match parse_add(body, state.today()) {
        Ok(command) => command,
        Err(refused) => {
            return replay::earlier_or(&state, &authed.commerce, request.as_ref(), refused);
        }
    };
    let (field, id) = command.product.field("product");
    let id = id.to_string();
    let dates = charge_dates(&state, &authed)?;
    let base = Arc::clone(&state.public_base_url);
    replay::create(&state, authed.commerce, request, move |tx, ctx| {
        let added = ops::add(tx, ctx, &command)?;
        Ok(Envelope::created(
            "INSTALLMENTS_CREATE_OK",
            "installments added",
            InstallmentsPayload {
                product: product_summary(&added.mandate, &base),
                installments: added
                    .installments
                    .iter()
                    .map(|i| InstallmentDto::new(i, &dates))
                    .collect(),
            },
        ))
    })
    .await
    .map_err(|e| e.located(&field, &id))
}

/// The merchant ids of an installments request: the mandate as the request names it
/// (`id:GYM-1` or `internalId:man_...`) and the SHA-256 of its installment ids, sorted and
/// joined by commas (a key of bounded length, whatever the number of installments). The
/// installments are created all or none, so the ids of one earlier equal request are exactly
/// this key. `None` when the request names no single mandate or some installment has no id.
fn replay_key(body: &AddInstallmentsRequest) -> Option<String> {
    let mandate = match body.product.as_ref()? {
        ProductRefIn {
            id: Some(id),
            internal_id: None,
        } => format!("id:{id}"),
        ProductRefIn {
            id: None,
            internal_id: Some(id),
        } => format!("internalId:{id}"),
        _ => return None,
    };
    let mut ids = body
        .installments
        .as_ref()?
        .iter()
        .map(|i| i.id.as_deref())
        .collect::<Option<Vec<&str>>>()?;
    ids.sort_unstable();
    let digest = Sha256::digest(ids.join(",").as_bytes());
    Some(format!("{mandate}/{}", hex::encode(digest)))
}

/// The calendar and the commerce's rule, for the installments' `chargeDate`.
fn charge_dates(
    state: &AppState,
    authed: &Authed,
) -> Result<std::sync::Arc<mandato_core::domain::holidays::ChargeDates>, super::error::ApiError> {
    state.read(&authed.commerce, |conn, ctx| Ok(ctx.charge_dates(conn)?))
}

fn parse_add(
    body: AddInstallmentsRequest,
    today: chrono::NaiveDate,
) -> Result<AddInstallments, Error> {
    let mut errors = FieldErrors::new();
    let customer = match &body.customer {
        None => {
            errors.missing("customer");
            None
        }
        Some(c) => fields::customer_ref(
            c.user_id.as_ref(),
            c.internal_user_id.as_ref(),
            "customer",
            &mut errors,
        ),
    };
    let product = product_ref(body.product.as_ref(), &mut errors);
    let items = body.installments.as_deref().unwrap_or_default();
    match &body.installments {
        None => errors.missing("installments"),
        Some(list) if list.is_empty() => {
            errors.push("installments", "EMPTY", "send at least one installment")
        }
        Some(list) if list.len() > 1000 => {
            errors.push("installments", "TOO_MANY", "at most 1000 per request")
        }
        Some(_) => {}
    }
    match body.installments_number {
        None => errors.missing("installmentsNumber"),
        Some(n) if n != items.len() as i64 => errors.push(
            "installmentsNumber",
            "COUNT_MISMATCH",
            format!("the request carries {} installments", items.len()),
        ),
        Some(_) => {}
    }
    let installments = super::mandates::parse_installment_list(items, today, &mut errors);
    errors.into_result()?;
    Ok(AddInstallments {
        customer: customer.expect("validated"),
        product: product.expect("validated"),
        installments,
    })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusChangeRequest {
    /// Exactly one of `id` and `internalId`: the mandate.
    pub product: Option<ProductRefIn>,
    /// Exactly one of `ids` and `internalIds`.
    pub installments: Option<InstallmentIdsIn>,
    /// `PAYMENT` or `ANNULMENT`.
    pub action: Option<String>,
    /// Required with PAYMENT: the evidence of the payment.
    pub payment: Option<PaymentIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallmentIdsIn {
    pub ids: Option<Vec<String>>,
    pub internal_ids: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentIn {
    /// The date the payment was made, not after today.
    pub date: Option<String>,
    /// The sum of the listed installments.
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub amount: Option<serde_json::Number>,
    pub currency_id: Option<String>,
    /// Required when the commerce's contract says so.
    pub authorization_code: Option<String>,
    /// How it was paid (`TRANSFER`, `CASH`, ...); free text.
    pub method: Option<String>,
}

/// Mark installments PAID (with evidence) or ANNULLED; each change notifies the payment webhook.
#[utoipa::path(method(put, post), path = "/installments/status/change", tag = "installments",
    params(super::common::CommonHeaders),
    request_body = StatusChangeRequest,
    responses(
        (status = 200, description = "INSTALLMENTS_STATUS_CHANGE_OK", body = Envelope<InstallmentsPayload>),
        (status = 400, description = "Invalid field, evidence mismatch, INSTALLMENT_STATE_CONFLICT", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such mandate or installment in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn change_status(
    State(state): State<AppState>,
    authed: Authed,
    Body(body): Body<StatusChangeRequest>,
) -> ApiResult<Envelope<InstallmentsPayload>> {
    let command = parse_change(body)?;
    let (field, id) = command.product.field("product");
    let id = id.to_string();
    let dates = charge_dates(&state, &authed)?;
    let changed = state
        .write(authed.commerce, move |tx, ctx| {
            ops::change_status(tx, ctx, &command)
        })
        .await
        .map_err(|e| e.located(&field, &id))?;
    Ok(Envelope::ok(
        "INSTALLMENTS_STATUS_CHANGE_OK",
        "installment states changed",
        InstallmentsPayload {
            product: product_summary(&changed.mandate, &state.public_base_url),
            installments: changed
                .installments
                .iter()
                .map(|i| InstallmentDto::new(i, &dates))
                .collect(),
        },
    ))
}

fn parse_change(body: StatusChangeRequest) -> Result<ChangeStatus, Error> {
    let mut errors = FieldErrors::new();
    let product = product_ref(body.product.as_ref(), &mut errors);
    let refs = match &body.installments {
        None => {
            errors.missing("installments");
            None
        }
        Some(i) => fields::one_of(
            (i.ids.as_ref(), "ids"),
            (i.internal_ids.as_ref(), "internalIds"),
            "installments",
            &mut errors,
        )
        .and_then(|(external, list)| {
            let path = if external {
                "installments.ids"
            } else {
                "installments.internalIds"
            };
            let list = list.clone();
            if list.is_empty() || list.len() > 1000 {
                errors.push(path, "INVALID_LENGTH", "1 to 1000 installment ids");
                return None;
            }
            Some(if external {
                OwnedRefs::External(list)
            } else {
                OwnedRefs::Internal(list)
            })
        }),
    };
    let action = match body.action.as_deref() {
        None => {
            errors.missing("action");
            None
        }
        Some("PAYMENT") => match &body.payment {
            None => {
                errors.missing("payment");
                None
            }
            Some(p) => parse_payment(p, &mut errors).map(Action::Payment),
        },
        Some("ANNULMENT") => Some(Action::Annulment),
        Some(_) => {
            errors.push("action", "INVALID_VALUE", "must be PAYMENT or ANNULMENT");
            None
        }
    };
    errors.into_result()?;
    Ok(ChangeStatus {
        product: product.expect("validated"),
        installments: refs.expect("validated"),
        action: action.expect("validated"),
    })
}

fn parse_payment(p: &PaymentIn, errors: &mut FieldErrors) -> Option<PaymentEvidence> {
    let date = fields::date(p.date.as_ref(), "payment.date", errors);
    let currency = fields::currency(p.currency_id.as_ref(), "payment.currencyId", errors);
    let amount = fields::money(p.amount.as_ref(), currency, "payment.amount", errors);
    let authorization_code = optional_text(
        p.authorization_code.as_ref(),
        "payment.authorizationCode",
        64,
        errors,
    );
    let method = optional_text(p.method.as_ref(), "payment.method", 32, errors);
    Some(PaymentEvidence {
        date: date?,
        amount: amount?,
        authorization_code,
        method,
    })
}
