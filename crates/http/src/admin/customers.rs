//! Customers for staff: search across commerces by name, RUT or userId, and one customer with
//! their mandates.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::mandates::MandateLineDto;
use super::paging::{Params, stored_amount};
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::wire::CustomerDto;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::records::{CustomerColumn, CustomerFilter, Keyset};
use mandato_engine::staff::past_due::{PaymentLine, PaymentSource};

/// The orders of the customers list, as the `sort` parameter writes them.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub enum CustomerSort {
    #[serde(rename = "createdAt.desc")]
    CreatedAtDesc,
    #[serde(rename = "createdAt.asc")]
    CreatedAtAsc,
    #[serde(rename = "name.asc")]
    NameAsc,
    #[serde(rename = "name.desc")]
    NameDesc,
}

/// The orders of the customers list: wire name, store column.
pub const CUSTOMER_SORTS: &[(&str, CustomerColumn)] = &[
    ("createdAt", CustomerColumn::CreatedAt),
    ("name", CustomerColumn::LastName),
];

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct CustomersQuery {
    /// Words of a name (any part, any order; accents and case are ignored), a RUT or part of
    /// one (with or without dots and dash), a userId or part of one, an internalUserId
    /// (usr_...) or an e-mail. A text of fewer than three characters matches the start of a
    /// userId or RUT, or any part of a name.
    q: Option<String>,
    /// The order (default `createdAt.desc`; `name` is the last name, case ignored); a cursor
    /// continues the order it was given in.
    #[param(inline)]
    sort: Option<CustomerSort>,
    /// Only this commerce (its code).
    commerce: Option<String>,
    /// 1 to 200, default 50.
    #[param(minimum = 1, maximum = 200, default = 50)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerLineDto {
    pub customer: CustomerDto,
    pub commerce: String,
    /// How many mandates the customer has.
    pub mandates: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomersPage {
    pub items: Vec<CustomerLineDto>,
    /// How many customers the filters select, every page together.
    pub total: i64,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

/// Customers of every commerce, newest first or in the order asked, and how many there are.
#[utoipa::path(get, path = "/customers", tag = "staff", params(CustomersQuery),
    responses(
        (status = 200, description = "CUSTOMERS_OK", body = Envelope<CustomersPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<CustomersPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 200, &mut errors);
    let sort = params.sort(CUSTOMER_SORTS, &mut errors);
    let filter = CustomerFilter {
        text: params.get("q"),
        commerce_id: params.commerce_id(&state, &mut errors),
        sort,
        after: params.sorted_keyset(&sort, CustomerColumn::CreatedAt, &mut errors),
        limit: limit + 1,
    };
    errors.into_result()?;
    let (mut rows, total) = state.customers_page(filter)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| {
            Keyset {
                key: sort.column.key_of(&r.customer),
                seq: r.customer.seq,
            }
            .encode()
        })
    } else {
        None
    };
    let items = rows
        .iter()
        .map(|r| CustomerLineDto {
            customer: CustomerDto::from(&r.customer),
            commerce: r.commerce_code.clone(),
            mandates: r.mandates,
        })
        .collect();
    Ok(Envelope::ok(
        "CUSTOMERS_OK",
        "customers",
        CustomersPage {
            items,
            total,
            next_cursor,
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerDetail {
    pub customer: CustomerDto,
    pub commerce: String,
    /// Newest first.
    pub mandates: Vec<MandateLineDto>,
}

/// One customer and every mandate of theirs.
#[utoipa::path(get, path = "/customers/{internalUserId}", tag = "staff",
    params(("internalUserId" = String, Path, description = "usr_...")),
    responses(
        (status = 200, description = "CUSTOMER_OK", body = Envelope<CustomerDetail>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "CUSTOMER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn detail(
    State(state): State<AppState>,
    _staff: Staff,
    Path(id): Path<String>,
) -> ApiResult<Envelope<CustomerDetail>> {
    let (customer, commerce, mandates) = state
        .customer_detail(&id)?
        .ok_or(Error::not_found("customer"))?;
    let detail = CustomerDetail {
        customer: CustomerDto::from(&customer),
        commerce,
        mandates: mandates.iter().map(MandateLineDto::from).collect(),
    };
    Ok(Envelope::ok("CUSTOMER_OK", "customer", detail))
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PaymentsQuery {
    /// 1 to 200, default 50.
    #[param(minimum = 1, maximum = 200, default = 50)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

/// One charge or payment of an installment of the customer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLineDto {
    /// When it was recorded.
    pub at: String,
    /// The business date of a charge attempt or ledger entry, `YYYY-MM-DD`.
    pub business_date: Option<String>,
    /// CHARGE (the charging engine's attempt), PORTAL (paid by the customer on Webpay),
    /// MANUAL (a payment the merchant or staff recorded) or REFUND.
    pub kind: String,
    /// pay_... of a charge, led_... of a recorded payment or refund, the buy order of a
    /// portal payment.
    pub reference: String,
    /// PAID, REJECTED, IN_PROCESS, IN_VALIDATION, ABANDONED (a portal payment left
    /// unfinished) or REFUNDED.
    pub outcome: String,
    pub rejection_code: Option<String>,
    pub authorization_code: Option<String>,
    /// What was charged or paid (pesos for a UF installment charged; negative for a refund).
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
    /// The installment's own amount (UF for a UF installment).
    #[schema(value_type = f64)]
    pub installment_amount: serde_json::Number,
    pub installment_currency_id: String,
    /// The UF value of the business date, for a UF installment.
    #[schema(value_type = Option<f64>)]
    pub uf_value: Option<serde_json::Number>,
    /// CREDIT_CARD ... DIRECT_EPAC, WEBPAY (the portal) or MANUAL; null when unknown.
    pub method: Option<String>,
    pub installment_internal_id: String,
    pub installment_id: String,
    pub mandate_internal_id: String,
    pub mandate_id: String,
    pub mandate_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentsPage {
    /// Newest first.
    pub items: Vec<PaymentLineDto>,
    /// How many lines the history has, every page together.
    pub total: i64,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

impl From<&PaymentLine> for PaymentLineDto {
    fn from(p: &PaymentLine) -> Self {
        let (kind, outcome) = match p.source {
            PaymentSource::Attempt => ("CHARGE", p.outcome.as_str()),
            PaymentSource::Portal => (
                "PORTAL",
                match p.outcome.as_str() {
                    // A refunded portal payment was paid; its refund is a line of its own.
                    "APPROVED" | "REFUNDED" => "PAID",
                    "REFUSED" => "REJECTED",
                    "STARTED" => "IN_PROCESS",
                    other => other,
                },
            ),
            PaymentSource::Ledger if p.outcome == "REVERSAL" => ("REFUND", "REFUNDED"),
            PaymentSource::Ledger => ("MANUAL", "PAID"),
        };
        let method = match p.source {
            PaymentSource::Attempt => p
                .method_id
                .and_then(PaymentMethod::from_id)
                .map(|m| m.name().to_string()),
            _ => p.method.clone(),
        };
        PaymentLineDto {
            at: p.at.clone(),
            business_date: p.business_date.clone(),
            kind: kind.to_string(),
            reference: p.reference.clone(),
            outcome: outcome.to_string(),
            rejection_code: p.rejection_code.clone(),
            authorization_code: p.authorization_code.clone(),
            amount: stored_amount(&p.amount),
            currency_id: p.currency.clone(),
            installment_amount: stored_amount(&p.installment_amount),
            installment_currency_id: p.installment_currency.clone(),
            uf_value: p.uf_value.as_deref().map(stored_amount),
            method,
            installment_internal_id: p.installment_id.clone(),
            installment_id: p.installment_external_id.clone(),
            mandate_internal_id: p.mandate_id.clone(),
            mandate_id: p.mandate_external_id.clone(),
            mandate_name: p.mandate_name.clone(),
        }
    }
}

/// Every charge and payment of the customer's installments, across their mandates, newest
/// first: the charging engine's attempts (paid, rejected, in process), portal payments,
/// payments recorded by hand and refunds.
#[utoipa::path(get, path = "/customers/{internalUserId}/payments", tag = "staff",
    params(("internalUserId" = String, Path, description = "usr_..."), PaymentsQuery),
    responses(
        (status = 200, description = "CUSTOMER_PAYMENTS_OK", body = Envelope<PaymentsPage>),
        (status = 400, description = "Invalid limit or cursor", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "CUSTOMER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn payments(
    State(state): State<AppState>,
    _staff: Staff,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<PaymentsPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 200, &mut errors);
    // The cursor is `<seq>.<at>|<source>` of the last line shown.
    let after = params.keyset(&mut errors).and_then(|k| {
        let parsed = k.key.rsplit_once('|').and_then(|(at, letter)| {
            chrono::DateTime::parse_from_rfc3339(at).ok()?;
            Some((at.to_string(), PaymentSource::from_letter(letter)?, k.seq))
        });
        if parsed.is_none() {
            errors.push(
                "query.cursor",
                "INVALID_CURSOR",
                "pass nextCursor unchanged",
            );
        }
        parsed
    });
    errors.into_result()?;
    let mut history = state
        .customer_payments(
            &id,
            after
                .as_ref()
                .map(|(at, src, seq)| (at.as_str(), *src, *seq)),
            limit + 1,
        )?
        .ok_or(Error::not_found("customer"))?;
    let next_cursor = if history.lines.len() as i64 > limit {
        history.lines.truncate(limit as usize);
        history.lines.last().map(|p| {
            Keyset {
                key: format!("{}|{}", p.at, p.source.letter()),
                seq: p.seq,
            }
            .encode()
        })
    } else {
        None
    };
    Ok(Envelope::ok(
        "CUSTOMER_PAYMENTS_OK",
        "customer payments",
        PaymentsPage {
            items: history.lines.iter().map(PaymentLineDto::from).collect(),
            total: history.total,
            next_cursor,
        },
    ))
}
