//! `GET /receivables`: installments across the commerce's mandates, filtered, keyset-paged.

use std::collections::HashMap;

use axum::extract::{Query, State};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::fields;
use super::wire::InstallmentDto;
use mandato_core::domain::external_id::ExternalId;
use mandato_core::domain::state::{InstallmentState, MandateType};
use mandato_core::error::FieldErrors;
use mandato_engine::operations::installments;
use mandato_engine::records::ReceivablesFilter;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct ReceivablesQuery {
    /// Installment state ids, comma-separated (`1,-99`).
    state: Option<String>,
    mandateExternalId: Option<String>,
    mandateInternalId: Option<String>,
    userId: Option<String>,
    internalUserId: Option<String>,
    /// Due on or after this date (YYYY-MM-DD).
    dueFrom: Option<String>,
    /// Due on or before this date (YYYY-MM-DD).
    dueTo: Option<String>,
    /// Latest state change at or after this RFC 3339 instant.
    updatedFrom: Option<String>,
    /// Latest state change before this RFC 3339 instant.
    updatedTo: Option<String>,
    /// 1 to 1000, default 100.
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReceivableProduct {
    pub internal_id: String,
    pub id: String,
    #[serde(rename = "type")]
    pub mandate_type: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReceivableCustomer {
    pub internal_user_id: String,
    pub user_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReceivableItem {
    pub installment: InstallmentDto,
    pub product: ReceivableProduct,
    pub customer: ReceivableCustomer,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReceivablesPayload {
    pub items: Vec<ReceivableItem>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Search installments across the commerce's mandates, in a stable order (creation order).
/// Rows added while paging appear on later pages; none is skipped or repeated.
#[utoipa::path(get, path = "/receivables", tag = "installments",
    params(super::common::CommonHeaders, ReceivablesQuery),
    responses(
        (status = 200, description = "RECEIVABLES_OK", body = Envelope<ReceivablesPayload>),
        (status = 400, description = "Invalid filter or cursor", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn receivables(
    State(state): State<AppState>,
    authed: Authed,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<ReceivablesPayload>> {
    let mut filter = parse_filter(&query)?;
    let limit = filter.limit;
    filter.limit += 1;
    let (mut rows, dates) = state.read(&authed.commerce, |conn, ctx| {
        installments::receivables(conn, ctx, &filter)
    })?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| encode_cursor(r.installment.seq))
    } else {
        None
    };
    let items = rows
        .iter()
        .map(|r| ReceivableItem {
            installment: InstallmentDto::new(&r.installment, &dates),
            product: ReceivableProduct {
                internal_id: r.mandate_id.clone(),
                id: r.mandate_external_id.clone(),
                mandate_type: MandateType::from_id(r.mandate_type_id)
                    .map_or("UNKNOWN", MandateType::name),
            },
            customer: ReceivableCustomer {
                internal_user_id: r.customer_id.clone(),
                user_id: r.customer_user_id.clone(),
            },
        })
        .collect();
    Ok(Envelope::ok(
        "RECEIVABLES_OK",
        "receivables found",
        ReceivablesPayload { items, next_cursor },
    ))
}

fn encode_cursor(seq: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("v1:{seq}"))
}

fn decode_cursor(cursor: &str) -> Option<i64> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.strip_prefix("v1:")?
        .parse()
        .ok()
        .filter(|n: &i64| *n >= 0)
}

fn timestamp(value: Option<&String>, field: &str, errors: &mut FieldErrors) -> Option<String> {
    let text = value?;
    match DateTime::parse_from_rfc3339(text) {
        Ok(at) => Some(mandato_core::clock::timestamp(at.with_timezone(&Utc))),
        Err(_) => {
            errors.push(field, "INVALID_FORMAT", "must be an RFC 3339 date-time");
            None
        }
    }
}

/// The query parameters `GET /receivables` reads.
const FILTERS: [&str; 11] = [
    "state",
    "mandateExternalId",
    "mandateInternalId",
    "userId",
    "internalUserId",
    "dueFrom",
    "dueTo",
    "updatedFrom",
    "updatedTo",
    "limit",
    "cursor",
];

fn parse_filter(
    query: &HashMap<String, String>,
) -> Result<ReceivablesFilter, mandato_core::error::Error> {
    let mut errors = FieldErrors::new();
    // A filter sent empty is refused like any other malformed value: `/openapi.json` gives each
    // its form, and the server refuses what the document forbids.
    for (name, value) in query {
        if value.is_empty() && FILTERS.contains(&name.as_str()) {
            errors.push(
                format!("query.{name}"),
                "INVALID_VALUE",
                "must not be empty",
            );
        }
    }
    let get = |name: &str| query.get(name).filter(|v| !v.is_empty());
    // Ids of either kind have the external ids' form; one of another kind (or of another
    // commerce) matches nothing.
    for name in [
        "mandateExternalId",
        "userId",
        "mandateInternalId",
        "internalUserId",
    ] {
        if let Some(value) = get(name)
            && ExternalId::parse(value).is_err()
        {
            errors.push(
                format!("query.{name}"),
                "INVALID_ID",
                "1 to 64 letters, digits, '-', '_' or '.'",
            );
        }
    }
    let mut states = Vec::new();
    if let Some(list) = get("state") {
        for part in list.split(',') {
            match part.parse().ok().and_then(InstallmentState::from_id) {
                Some(s) => states.push(s),
                None => errors.push(
                    "query.state",
                    "INVALID_VALUE",
                    format!("{part} is not an installment state id (1, 9, 6, 2, -99, 4, 5)"),
                ),
            }
        }
    }
    let due_from =
        get("dueFrom").and_then(|_| fields::date(get("dueFrom"), "query.dueFrom", &mut errors));
    let due_to = get("dueTo").and_then(|_| fields::date(get("dueTo"), "query.dueTo", &mut errors));
    let updated_from = timestamp(get("updatedFrom"), "query.updatedFrom", &mut errors);
    let updated_to = timestamp(get("updatedTo"), "query.updatedTo", &mut errors);
    let limit = match get("limit").map(|l| l.parse::<i64>()) {
        None => 100,
        Some(Ok(n)) if (1..=1000).contains(&n) => n,
        Some(_) => {
            errors.push("query.limit", "OUT_OF_RANGE", "an integer from 1 to 1000");
            100
        }
    };
    let after_seq = match get("cursor") {
        None => 0,
        Some(c) => decode_cursor(c).unwrap_or_else(|| {
            errors.push(
                "query.cursor",
                "INVALID_CURSOR",
                "pass the nextCursor of a previous page unchanged",
            );
            0
        }),
    };
    errors.into_result()?;
    Ok(ReceivablesFilter {
        states,
        mandate_external_id: get("mandateExternalId").cloned(),
        mandate_internal_id: get("mandateInternalId").cloned(),
        user_id: get("userId").cloned(),
        internal_user_id: get("internalUserId").cloned(),
        due_from,
        due_to,
        updated_from,
        updated_to,
        after_seq,
        limit,
    })
}
