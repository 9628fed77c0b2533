//! The Ledger screen: a commerce's entries with filters, its daily settlements, the CSV
//! export, and payout reports imported for reconciliation (kept, so they can be seen again).
//! The wire shapes are the merchant API's (`http::ledger`); the paths differ from its
//! (`/ledger-entries`, ...) because both APIs share one OpenAPI document.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use crate::ledger::{
    LedgerPage, Reconciliation, Settlement, Settlements, all_entries, entries_csv, import_report,
    page, parse_filter, parse_period,
};
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::operations::ledger as operation;
use mandato_engine::records::{Commerce, Role};

/// Reconciliations listed on the screen.
const RECONCILIATIONS_SHOWN: i64 = 20;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct StaffLedgerQuery {
    /// The commerce (its code).
    commerce: String,
    /// First business date, inclusive.
    from: Option<chrono::NaiveDate>,
    /// Last business date, inclusive.
    to: Option<chrono::NaiveDate>,
    /// CHARGE, REVERSAL, MANUAL_PAYMENT or ANNULMENT.
    kind: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
    cursor: Option<String>,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct StaffPeriodQuery {
    /// The commerce (its code).
    commerce: String,
    /// First business date, inclusive.
    from: Option<chrono::NaiveDate>,
    /// Last business date, inclusive.
    to: Option<chrono::NaiveDate>,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct StaffCommerceQuery {
    /// The commerce (its code).
    commerce: String,
}

/// The commerce a request names in `commerce`; missing or unknown is a field error.
fn commerce_of(state: &AppState, query: &HashMap<String, String>) -> Result<Commerce, Error> {
    let Some(code) = query.get("commerce").filter(|c| !c.trim().is_empty()) else {
        return Err(Error::validation(
            "query.commerce",
            "REQUIRED",
            "name the commerce",
        ));
    };
    state.commerce_by_code(code.trim())?.ok_or_else(|| {
        Error::validation(
            "query.commerce",
            "COMMERCE_NOT_FOUND",
            format!("no commerce with code {code}"),
        )
    })
}

/// A commerce's ledger entries, oldest first (viewer).
#[utoipa::path(get, path = "/ledger-entries", tag = "staff", params(StaffLedgerQuery),
    responses(
        (status = 200, description = "STAFF_LEDGER_OK", body = Envelope<LedgerPage>),
        (status = 400, description = "A bad filter, at its query.<name>", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn entries(
    State(state): State<AppState>,
    staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<LedgerPage>> {
    staff.require(Role::Viewer)?;
    let commerce = commerce_of(&state, &query)?;
    let filter = parse_filter(&query)?;
    let found = state.read(&commerce, |c, _| page(c, &filter.for_commerce(commerce.id)))?;
    Ok(Envelope::ok("STAFF_LEDGER_OK", "ledger entries", found))
}

/// A commerce's daily settlements per payment method (viewer).
#[utoipa::path(get, path = "/ledger-settlements", tag = "staff", params(StaffPeriodQuery),
    responses(
        (status = 200, description = "STAFF_LEDGER_SETTLEMENTS_OK", body = Envelope<Settlements>),
        (status = 400, description = "A bad filter, at its query.<name>", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn settlements(
    State(state): State<AppState>,
    staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<Settlements>> {
    staff.require(Role::Viewer)?;
    let commerce = commerce_of(&state, &query)?;
    let mut errors = FieldErrors::new();
    let (from, to) = parse_period(&query, &mut errors);
    errors.into_result()?;
    let items = state.read(&commerce, |c, _| {
        Ok(
            operation::settlements(c, commerce.id, from.as_deref(), to.as_deref())?
                .iter()
                .map(Settlement::from)
                .collect(),
        )
    })?;
    Ok(Envelope::ok(
        "STAFF_LEDGER_SETTLEMENTS_OK",
        "daily settlements",
        Settlements { items },
    ))
}

/// A commerce's entries of a period as CSV, oldest first (viewer); `mandato ledger export`
/// writes the same.
#[utoipa::path(get, path = "/ledger-export", tag = "staff", params(StaffPeriodQuery),
    responses(
        (status = 200, description = "The entries as CSV, with a header row", content_type = "text/csv", body = String),
        (status = 400, description = "A bad filter, at its query.<name>", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn export(
    State(state): State<AppState>,
    staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    staff.require(Role::Viewer)?;
    let commerce = commerce_of(&state, &query)?;
    let mut errors = FieldErrors::new();
    let (from, to) = parse_period(&query, &mut errors);
    errors.into_result()?;
    let entries = state.read(&commerce, |c, _| {
        all_entries(c, commerce.id, from.as_deref(), to.as_deref())
    })?;
    let name = format!("ledger-{}.csv", commerce.code);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        entries_csv(&entries),
    )
        .into_response())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffReconciliationRequest {
    /// The commerce (its code).
    #[schema(min_length = 1, max_length = 64)]
    pub commerce: String,
    /// The acquirer's payout report (`date,reference,amount`).
    #[schema(
        min_length = 1,
        max_length = 160000,
        pattern = r"^[\t\n\r\x20-\x7E\u00A0-\uD7FF\uE000-\uFFFD]*$"
    )]
    pub csv: String,
}

/// Import a payout report of a commerce and match it against its ledger (operator); kept with
/// its result and recorded in the staff audit.
#[utoipa::path(post, path = "/ledger-reconciliations", tag = "staff",
    request_body = StaffReconciliationRequest,
    responses(
        (status = 201, description = "RECONCILIATION_OK", body = Envelope<Reconciliation>),
        (status = 400, description = "Each bad cell at csv.line[N].<column>; an unknown commerce", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn reconcile(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<StaffReconciliationRequest>,
) -> ApiResult<Envelope<Reconciliation>> {
    staff.require(Role::Operator)?;
    let commerce = state
        .commerce_by_code(body.commerce.trim())?
        .ok_or_else(|| {
            Error::validation(
                "commerce",
                "COMMERCE_NOT_FOUND",
                format!("no commerce with code {}", body.commerce),
            )
        })?;
    let email = staff.member.email.clone();
    let result = state
        .write(Arc::new(commerce), move |tx, ctx| {
            let result = import_report(tx, ctx, &body.csv, &email)?;
            mandato_engine::staff::settings::record(
                tx,
                &email,
                ctx.now,
                "ledger.reconcile",
                &ctx.commerce.code,
                Some(&result.reconciliation_id),
            )?;
            Ok(result)
        })
        .await?;
    Ok(Envelope::created(
        "RECONCILIATION_OK",
        "payout report reconciled",
        result,
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reconciliations {
    /// The latest imports, newest first.
    pub items: Vec<Reconciliation>,
}

/// A commerce's latest payout report imports with their results (viewer).
#[utoipa::path(get, path = "/ledger-reconciliations", tag = "staff", params(StaffCommerceQuery),
    responses(
        (status = 200, description = "STAFF_RECONCILIATIONS_OK", body = Envelope<Reconciliations>),
        (status = 400, description = "An unknown commerce", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn reconciliations(
    State(state): State<AppState>,
    staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<Reconciliations>> {
    staff.require(Role::Viewer)?;
    let commerce = commerce_of(&state, &query)?;
    let rows = state.read(&commerce, |c, _| {
        operation::reconciliations(c, commerce.id, RECONCILIATIONS_SHOWN)
    })?;
    let items = rows
        .iter()
        .map(|r| serde_json::from_str(&r.result).map_err(|e| Error::Internal(e.into())))
        .collect::<Result<Vec<Reconciliation>, Error>>()?;
    Ok(Envelope::ok(
        "STAFF_RECONCILIATIONS_OK",
        "payout report imports",
        Reconciliations { items },
    ))
}
