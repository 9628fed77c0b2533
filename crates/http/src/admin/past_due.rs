//! Past due for staff: the mandates with rejected installments, whether declined for good or
//! still being retried, each with its latest rejection, its next retry, what it owes and its
//! customer.

use std::collections::HashMap;

use axum::extract::{Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::paging::{MoneyDto, Params, stored_amount};
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::wire::StateDto;
use mandato_core::domain::state::MandateState;
use mandato_core::error::FieldErrors;
use mandato_engine::records::Keyset;
use mandato_engine::staff::past_due::{PastDueFilter, PastDueLine};

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PastDueQuery {
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
pub struct PastDueCustomerDto {
    pub internal_user_id: String,
    pub name: String,
    /// Without dots, with its dash (`12345678-5`).
    pub rut: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RejectedInstallmentDto {
    pub internal_id: String,
    pub id: String,
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
    pub due_date: String,
    /// When it was last rejected.
    pub rejected_at: String,
    pub attempts: i64,
    /// The rejection code (`INSUFFICIENT_FUNDS`, `EXPIRED_CARD`, ...).
    pub rejection_code: Option<String>,
    pub rejection_message: Option<String>,
    /// The business date of its next attempt, `YYYY-MM-DD`, as the mandate's page has it;
    /// null when no retry remains (its final decline, or a hard decline).
    pub next_retry_date: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PastDueLineDto {
    /// The mandate: our id (man_...), the merchant's id, its name and state.
    pub internal_id: String,
    pub id: String,
    pub name: String,
    pub state: StateDto,
    pub commerce: String,
    pub customer: PastDueCustomerDto,
    /// How many of its installments are REJECTED.
    pub rejected: i64,
    /// When the latest of them was rejected (the list's order, newest first).
    pub last_rejected_at: String,
    /// The latest rejection's code and message.
    pub last_rejection_code: Option<String>,
    pub last_rejection_message: Option<String>,
    /// The earliest retry any of them waits for, `YYYY-MM-DD`; null when every one was
    /// declined for good.
    pub next_retry_date: Option<String>,
    /// Whether no retry remains for any of them: staff must act (a new payment method, a
    /// payment recorded, an annulment).
    pub final_decline: bool,
    /// The rejected amounts added up, one per currency (the installments' own: UF for UF
    /// installments).
    pub amount_due: Vec<MoneyDto>,
    /// Its REJECTED installments, by due date.
    pub installments: Vec<RejectedInstallmentDto>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PastDuePage {
    pub items: Vec<PastDueLineDto>,
    /// How many mandates are past due, every page together.
    pub total: i64,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

impl From<&PastDueLine> for PastDueLineDto {
    fn from(line: &PastDueLine) -> Self {
        let m = &line.mandate;
        let latest = line.latest();
        let next_retry_date = line.next_retry_date().map(str::to_string);
        PastDueLineDto {
            internal_id: m.id.clone(),
            id: m.external_id.clone(),
            name: m.name.clone(),
            state: StateDto {
                id: m.state,
                name: MandateState::from_id(m.state).map_or("UNKNOWN", MandateState::name),
            },
            commerce: m.commerce_code.clone(),
            customer: PastDueCustomerDto {
                internal_user_id: m.customer_id.clone(),
                name: m.customer_name.clone(),
                rut: m.customer_rut.clone(),
            },
            rejected: m.rejected,
            last_rejected_at: m.last_rejected_at.clone(),
            last_rejection_code: latest.and_then(|i| i.rejection_code.clone()),
            last_rejection_message: latest.and_then(|i| i.rejection_message.clone()),
            final_decline: next_retry_date.is_none(),
            next_retry_date,
            amount_due: line
                .amounts_due()
                .into_iter()
                .map(|(amount, currency)| MoneyDto::new(amount, &currency))
                .collect(),
            installments: line
                .installments
                .iter()
                .map(|i| RejectedInstallmentDto {
                    internal_id: i.id.clone(),
                    id: i.external_id.clone(),
                    amount: stored_amount(&i.amount),
                    currency_id: i.currency.clone(),
                    due_date: i.due_date.clone(),
                    rejected_at: i.rejected_at.clone(),
                    attempts: i.attempts,
                    rejection_code: i.rejection_code.clone(),
                    rejection_message: i.rejection_message.clone(),
                    next_retry_date: i.next_retry_date.clone().filter(|_| i.retry_scheduled),
                })
                .collect(),
        }
    }
}

/// Mandates with rejected installments, the latest rejection first, and how many there are.
#[utoipa::path(get, path = "/past-due", tag = "staff", params(PastDueQuery),
    responses(
        (status = 200, description = "PAST_DUE_OK", body = Envelope<PastDuePage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<PastDuePage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 200, &mut errors);
    let after = params.keyset(&mut errors);
    if after
        .as_ref()
        .is_some_and(|k| chrono::DateTime::parse_from_rfc3339(&k.key).is_err())
    {
        errors.push(
            "query.cursor",
            "INVALID_CURSOR",
            "pass nextCursor unchanged",
        );
    }
    let filter = PastDueFilter {
        commerce_id: params.commerce_id(&state, &mut errors),
        after,
        limit: limit + 1,
    };
    errors.into_result()?;
    let (mut lines, total) = state.past_due_page(&filter)?;
    let next_cursor = if lines.len() as i64 > limit {
        lines.truncate(limit as usize);
        lines.last().map(|l| {
            Keyset {
                key: l.mandate.last_rejected_at.clone(),
                seq: l.mandate.seq,
            }
            .encode()
        })
    } else {
        None
    };
    Ok(Envelope::ok(
        "PAST_DUE_OK",
        "past-due mandates",
        PastDuePage {
            items: lines.iter().map(PastDueLineDto::from).collect(),
            total,
            next_cursor,
        },
    ))
}
