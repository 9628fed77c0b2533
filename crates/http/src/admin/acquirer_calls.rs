//! The log of calls to a commerce's real acquirers (CONTRACT 13), for staff: the operation,
//! the buy order it concerned, the HTTP status, the acquirer's response code and the duration
//! of each call; never a secret, a token or card data.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::paging::Params;
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use mandato_core::error::FieldErrors;
use mandato_engine::staff::acquirer_calls::MAX_CALLS_PAGE;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AcquirerCallsQuery {
    /// Only the calls about this buy order (Oneclick's parent order, Webpay Plus's order).
    reference: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcquirerCallDto {
    /// `oneclick.authorize`, `oneclick.status`, `oneclick.refund`,
    /// `oneclick.inscription.start|finish|delete`, `webpay.create|commit|status|refund`.
    pub operation: String,
    /// The buy order the call concerned, when it names one.
    pub reference: Option<String>,
    /// Absent when no answer arrived (timeout, connection lost).
    pub http_status: Option<i64>,
    /// The acquirer's `response_code`, when the answer carried one.
    pub response_code: Option<i64>,
    pub duration_ms: i64,
    /// Why the call failed.
    pub error: Option<String>,
    pub at: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcquirerCallsPage {
    pub items: Vec<AcquirerCallDto>,
    pub next_cursor: Option<String>,
}

/// A commerce's calls to its acquirers, newest first (any staff role).
#[utoipa::path(get, path = "/commerces/{code}/acquirer-calls", tag = "staff",
    params(("code" = String, Path), AcquirerCallsQuery),
    responses(
        (status = 200, description = "ACQUIRER_CALLS_OK", body = Envelope<AcquirerCallsPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    _staff: Staff,
    Path(code): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<AcquirerCallsPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, MAX_CALLS_PAGE, &mut errors);
    let before = params.seq_cursor(&mut errors);
    errors.into_result()?;
    let reference = params.get("reference");
    let mut rows = state.acquirer_calls(&code, reference.as_deref(), before, limit + 1)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.seq.to_string())
    } else {
        None
    };
    Ok(Envelope::ok(
        "ACQUIRER_CALLS_OK",
        "acquirer calls",
        AcquirerCallsPage {
            items: rows
                .into_iter()
                .map(|r| AcquirerCallDto {
                    operation: r.call.operation,
                    reference: r.call.reference,
                    http_status: r.call.http_status,
                    response_code: r.call.response_code,
                    duration_ms: r.call.duration_ms,
                    error: r.call.error,
                    at: r.call.created_at,
                })
                .collect(),
            next_cursor,
        },
    ))
}
