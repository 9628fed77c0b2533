//! The staff's global search (`GET /admin/api/search?q=`): the search box of every page's
//! header. One text finds customers (name, RUT with or without dots and dash, userId, usr_
//! id, e-mail), mandates (mandateId, man_ id, name, or their customer's), installments (ins_
//! id or the merchant's id) and events (evt_ id), a few of each kind, each with what its page
//! needs to be linked.

use std::collections::HashMap;

use axum::extract::{Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::customers::CustomerLineDto;
use super::mandates::MandateLineDto;
use super::paging::{Params, stored_amount};
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::wire::{CustomerDto, StateDto};
use mandato_core::domain::state::InstallmentState;
use mandato_core::error::FieldErrors;

/// The longest search text: longer than any id, name or RUT staff would type.
pub const MAX_QUERY_CHARS: usize = 100;
/// Results of each kind: a few by default, a page's worth at most.
const DEFAULT_LIMIT: i64 = 5;
const MAX_LIMIT: i64 = 20;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct SearchQuery {
    /// What to look for, 1 to 100 characters without control characters: words of a
    /// customer's name, a RUT (with or without dots and dash, or part of one), a userId,
    /// mandateId, installment id or our ids (usr_, man_, ins_, evt_). Accents and case are
    /// ignored.
    q: Option<String>,
    /// Results of each kind, 1 to 20, default 5.
    #[param(minimum = 1, maximum = 20, default = 5)]
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallmentHitDto {
    /// ins_...
    pub internal_id: String,
    /// The merchant's id.
    pub id: String,
    pub state: StateDto,
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
    pub due_date: String,
    /// Its mandate: man_... and the merchant's id.
    pub mandate_internal_id: String,
    pub mandate_id: String,
    pub commerce: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventHitDto {
    /// evt_...
    pub event_id: String,
    /// activation, payment or signature.
    pub kind: String,
    /// PENDING, DELIVERED, FAILED or NO_URL.
    pub delivery_state: String,
    pub created_at: String,
    /// Its mandate, when it has one (a signature's event has none).
    pub mandate_internal_id: Option<String>,
    pub mandate_id: Option<String>,
    pub commerce: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobalSearchResult {
    /// The text searched, trimmed.
    pub query: String,
    pub customers: Vec<CustomerLineDto>,
    pub mandates: Vec<MandateLineDto>,
    pub installments: Vec<InstallmentHitDto>,
    pub events: Vec<EventHitDto>,
}

/// The search text: trimmed, 1 to [`MAX_QUERY_CHARS`] characters, no control characters.
fn query_text(params: &Params, errors: &mut FieldErrors) -> Option<String> {
    let Some(raw) = params.0.get("q") else {
        errors.missing("query.q");
        return None;
    };
    let text = raw.trim();
    if text.is_empty() {
        errors.missing("query.q");
        None
    } else if text.chars().count() > MAX_QUERY_CHARS {
        errors.push(
            "query.q",
            "INVALID_LENGTH",
            format!("1 to {MAX_QUERY_CHARS} characters"),
        );
        None
    } else if text.chars().any(char::is_control) {
        errors.push("query.q", "INVALID_FORMAT", "no control characters");
        None
    } else {
        Some(text.to_string())
    }
}

/// Customers, mandates, installments and events a text names, at most `limit` of each kind,
/// newest first (any staff role).
#[utoipa::path(get, path = "/search", tag = "staff", params(SearchQuery),
    responses(
        (status = 200, description = "SEARCH_OK", body = Envelope<GlobalSearchResult>),
        (status = 400, description = "VALIDATION_ERROR at query.q (missing, longer than 100 characters, control characters) or query.limit", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn search(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<GlobalSearchResult>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let text = query_text(&params, &mut errors);
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT, &mut errors);
    errors.into_result()?;
    let text = text.expect("validated");
    let found = state.global_search(&text, limit)?;
    let result = GlobalSearchResult {
        customers: found
            .customers
            .iter()
            .map(|r| CustomerLineDto {
                customer: CustomerDto::from(&r.customer),
                commerce: r.commerce_code.clone(),
                mandates: r.mandates,
            })
            .collect(),
        mandates: found.mandates.iter().map(MandateLineDto::from).collect(),
        installments: found
            .installments
            .into_iter()
            .map(|i| InstallmentHitDto {
                state: StateDto {
                    id: i.state_id,
                    name: InstallmentState::from_id(i.state_id).map_or("UNKNOWN", |s| s.name()),
                },
                amount: stored_amount(&i.amount),
                internal_id: i.id,
                id: i.external_id,
                currency_id: i.currency,
                due_date: i.due_date,
                mandate_internal_id: i.mandate_id,
                mandate_id: i.mandate_external_id,
                commerce: i.commerce_code,
            })
            .collect(),
        events: found
            .events
            .into_iter()
            .map(|e| EventHitDto {
                event_id: e.id,
                kind: e.kind,
                delivery_state: e.delivery_state,
                created_at: e.created_at,
                mandate_internal_id: e.mandate_id,
                mandate_id: e.mandate_external_id,
                commerce: e.commerce_code,
            })
            .collect(),
        query: text,
    };
    Ok(Envelope::ok("SEARCH_OK", "search results", result))
}
