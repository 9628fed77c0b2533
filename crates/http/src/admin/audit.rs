//! The audit screens: every staff action, and every API request (headers without secrets,
//! method, path, status, duration), newest first, filterable; requests refused before their
//! API key was accepted, as counts per minute and reason; and the check of the staff audit's
//! hash chain.

use std::collections::HashMap;

use axum::extract::{Query, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::paging::Params;
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::records::{ChainBreak, RequestAuditFilter, StaffAuditFilter};
use mandato_engine::staff::views::Refusals;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct StaffAuditQuery {
    /// The staff member's e-mail.
    email: Option<String>,
    /// An action (`mandate.cancel`) or its family (`mandate.`).
    action: Option<String>,
    /// What it acted on (a mandate's man_..., a commerce code, an event id...).
    target: Option<String>,
    /// At or after: a date (environment time zone) or an RFC 3339 date-time.
    from: Option<String>,
    /// On or before that date (a date-time: before it).
    to: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffActionDto {
    pub at: String,
    pub email: String,
    pub action: String,
    pub target: Option<String>,
    pub detail: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffAuditPage {
    pub items: Vec<StaffActionDto>,
    pub next_cursor: Option<String>,
}

/// Every staff action: sign-ins, changes to mandates and settings, redeliveries...
#[utoipa::path(get, path = "/audit/staff", tag = "staff", params(StaffAuditQuery),
    responses(
        (status = 200, description = "STAFF_AUDIT_OK", body = Envelope<StaffAuditPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn staff_actions(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<StaffAuditPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 500, &mut errors);
    let filter = StaffAuditFilter {
        email: params.get("email"),
        action: params.get("action"),
        target: params.get("target"),
        from: params.instant("from", false, &state, &mut errors),
        to: params.instant("to", true, &state, &mut errors),
        before_seq: params.seq_cursor(&mut errors),
        limit: limit + 1,
    };
    errors.into_result()?;
    let mut rows = state.staff_audit(&filter)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.seq.to_string())
    } else {
        None
    };
    Ok(Envelope::ok(
        "STAFF_AUDIT_OK",
        "staff actions",
        StaffAuditPage {
            items: rows
                .into_iter()
                .map(|r| StaffActionDto {
                    at: r.at,
                    email: r.email,
                    action: r.action,
                    target: r.target,
                    detail: r.detail,
                })
                .collect(),
            next_cursor,
        },
    ))
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, non_snake_case)]
pub struct RequestAuditQuery {
    /// The `commerce` header.
    commerce: Option<String>,
    /// GET, POST, PUT or DELETE.
    method: Option<String>,
    /// A part of the path (`/mandate`).
    path: Option<String>,
    /// An exact status (`404`) or a class (`4xx`).
    status: Option<String>,
    correlationId: Option<String>,
    /// At or after: a date (environment time zone) or an RFC 3339 date-time.
    from: Option<String>,
    /// On or before that date (a date-time: before it).
    to: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestDto {
    pub at: String,
    pub method: String,
    /// Without the query string.
    pub path: String,
    pub status: i64,
    pub duration_ms: f64,
    pub commerce: Option<String>,
    pub correlation_id: Option<String>,
    /// The first 8 characters of the API key used.
    pub api_key_prefix: Option<String>,
    /// The common headers as received, without `x-api-key` and `Authorization`.
    #[schema(value_type = Object)]
    pub headers: Value,
    pub peer: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestAuditPage {
    pub items: Vec<RequestDto>,
    pub next_cursor: Option<String>,
}

fn status_range(text: &str) -> Option<(i64, i64)> {
    let lower = text.to_ascii_lowercase();
    if let Some(class) = lower.strip_suffix("xx") {
        let digit: i64 = class.parse().ok().filter(|d| (1..=5).contains(d))?;
        return Some((digit * 100, digit * 100 + 99));
    }
    let exact: i64 = lower.parse().ok().filter(|s| (100..=599).contains(s))?;
    Some((exact, exact))
}

/// Every merchant API request, as the audit log recorded it.
#[utoipa::path(get, path = "/audit/requests", tag = "staff", params(RequestAuditQuery),
    responses(
        (status = 200, description = "REQUEST_AUDIT_OK", body = Envelope<RequestAuditPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn requests(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<RequestAuditPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 500, &mut errors);
    let status = params.get("status").and_then(|s| {
        let range = status_range(&s);
        if range.is_none() {
            errors.push(
                "query.status",
                "INVALID_VALUE",
                "a status (404) or a class (4xx)",
            );
        }
        range
    });
    let filter = RequestAuditFilter {
        commerce: params.get("commerce"),
        method: params.get("method").map(|m| m.to_ascii_uppercase()),
        path: params.get("path"),
        status,
        correlation_id: params.get("correlationId"),
        from: params.instant("from", false, &state, &mut errors),
        to: params.instant("to", true, &state, &mut errors),
        before_seq: params.seq_cursor(&mut errors),
        limit: limit + 1,
    };
    errors.into_result()?;
    let mut rows = state.request_audit(&filter)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.seq.to_string())
    } else {
        None
    };
    Ok(Envelope::ok(
        "REQUEST_AUDIT_OK",
        "API requests",
        RequestAuditPage {
            items: rows
                .into_iter()
                .map(|r| RequestDto {
                    at: r.at,
                    method: r.method,
                    path: r.path,
                    status: r.status,
                    duration_ms: r.duration_ms,
                    commerce: r.commerce,
                    correlation_id: r.correlation_id,
                    api_key_prefix: r.api_key_prefix,
                    headers: serde_json::from_str(&r.headers).unwrap_or(Value::Null),
                    peer: r.peer,
                })
                .collect(),
            next_cursor,
        },
    ))
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RefusalsQuery {
    /// At or after: a date (environment time zone) or an RFC 3339 date-time.
    from: Option<String>,
    /// On or before that date (a date-time: before it).
    to: Option<String>,
    /// Minutes listed, 1 to 1440, default 60.
    #[param(minimum = 1, maximum = 1440, default = 60)]
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefusalCountDto {
    /// The minute's start, RFC 3339 UTC.
    pub minute: String,
    /// `INVALID_HEADERS`, `INVALID_API_KEY` or `HOST_NOT_ALLOWED`.
    pub reason: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefusalTotalDto {
    pub reason: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefusalsPage {
    /// Counts per minute and reason, newest first.
    pub items: Vec<RefusalCountDto>,
    /// Per reason, over the whole period asked (not only the minutes listed).
    pub totals: Vec<RefusalTotalDto>,
    /// How long the audit log and these counts are kept.
    pub retention_days: i64,
}

/// Requests refused before their API key was accepted (headers missing or malformed, unknown
/// key, foreign `Host`): counted per minute and reason, without a row of their own.
#[utoipa::path(get, path = "/audit/refusals", tag = "staff", params(RefusalsQuery),
    responses(
        (status = 200, description = "REFUSALS_OK", body = Envelope<RefusalsPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn refusals(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<RefusalsPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(60, 1440, &mut errors);
    let from = params.instant("from", false, &state, &mut errors);
    let to = params.instant("to", true, &state, &mut errors);
    errors.into_result()?;
    let Refusals {
        rows,
        totals,
        retention_days: retention,
    } = state.refusals(from.as_deref(), to.as_deref(), limit)?;
    Ok(Envelope::ok(
        "REFUSALS_OK",
        "requests refused before authentication",
        RefusalsPage {
            items: rows
                .into_iter()
                .map(|r| RefusalCountDto {
                    minute: r.minute,
                    reason: r.reason,
                    count: r.count,
                })
                .collect(),
            totals: totals
                .into_iter()
                .map(|(reason, count)| RefusalTotalDto { reason, count })
                .collect(),
            retention_days: retention,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::status_range;

    #[test]
    fn statuses_are_exact_or_a_class() {
        assert_eq!(status_range("404"), Some((404, 404)));
        assert_eq!(status_range("4xx"), Some((400, 499)));
        assert_eq!(status_range("2XX"), Some((200, 299)));
        assert_eq!(status_range("9xx"), None);
        assert_eq!(status_range("abc"), None);
    }
}

/// What is wrong at the first record that breaks the staff audit's chain.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChainProblem {
    /// The record does not follow the one before it (a record was removed, inserted or moved).
    BrokenLink,
    /// The record was changed: its fields do not match its hash.
    HashMismatch,
    /// The last record is not the chain's recorded last one (records added outside the chain).
    HeadMismatch,
    /// Records were removed from the end of the chain, from `seq` on.
    RecordsMissing,
}

impl From<ChainBreak> for ChainProblem {
    fn from(problem: ChainBreak) -> ChainProblem {
        match problem {
            ChainBreak::BrokenLink => ChainProblem::BrokenLink,
            ChainBreak::HashMismatch => ChainProblem::HashMismatch,
            ChainBreak::HeadMismatch => ChainProblem::HeadMismatch,
            ChainBreak::RecordsMissing => ChainProblem::RecordsMissing,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokenRecordDto {
    /// The record's sequence number in the staff audit.
    #[schema(minimum = 1)]
    pub seq: i64,
    /// The record's time; null when the record is missing.
    pub at: Option<String>,
    pub problem: ChainProblem,
    /// The problem in words (English).
    pub message: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditChainDto {
    /// Whether every staff-audit record holds its hash and its link to the one before it.
    pub ok: bool,
    /// The records that hold, from the first: all of them when `ok`.
    #[schema(minimum = 0)]
    pub records: u64,
    /// The first record that does not hold; null when `ok`.
    pub broken: Option<BrokenRecordDto>,
}

/// One verification at a time: it reads the whole staff audit, and repeated clicks or several
/// staff members must not multiply that work.
static VERIFYING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Recomputes the staff audit's hash chain (as `mandato audit verify` does) and names the first
/// record that does not hold. Any staff role.
#[utoipa::path(get, path = "/audit/verify", tag = "staff",
    responses(
        (status = 200, description = "AUDIT_CHAIN_CHECKED", body = Envelope<AuditChainDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn verify_audit_chain(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<AuditChainDto>> {
    let _turn = VERIFYING
        .acquire()
        .await
        .map_err(|e| Error::Internal(e.into()))?;
    let verification = state.verify_staff_audit().await?;
    Ok(Envelope::ok(
        "AUDIT_CHAIN_CHECKED",
        "staff audit chain checked",
        AuditChainDto {
            ok: verification.broken.is_none(),
            records: verification.records,
            broken: verification.broken.map(|b| BrokenRecordDto {
                seq: b.seq,
                at: b.at,
                problem: b.problem.into(),
                message: b.problem.describe().to_string(),
            }),
        },
    ))
}
