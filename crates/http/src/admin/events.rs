//! Notifications for staff: every event with its delivery state and attempts, the payload
//! (with `fileBase64` masked), the headers each attempt sent, a check of both signatures
//! against a secret pasted by staff, redelivery of one or many, and webhook secret rotation.
//!
//! They live under `/admin/api/notifications`: the merchant API owns `/events` in the shared
//! OpenAPI `paths` map. The older `/admin/api/events` paths are still served, undocumented.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use crate::sandbox::{AttemptDto, EventDto, mask_file};
use mandato_core::clock::timestamp;
use mandato_core::error::{Error, FieldErrors};
use mandato_core::secret::Secret;
use mandato_engine::auth::api_key::generate_webhook_secret;
use mandato_engine::notify::signing::{
    body_signature, is_well_formed_secret, standard_webhooks_signature,
};
use mandato_engine::records::{AttemptRow, EventFilter, ListedEvent, Role, SentHeaders};
use mandato_engine::staff::events::EventRecord;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct EventsQuery {
    /// man_... of the mandate.
    mandateInternalId: Option<String>,
    /// The mandate by either id: ours (man_...) or the merchant's mandateId (a mandateId used
    /// by several commerces selects each one's).
    mandate: Option<String>,
    /// ins_... of the installment.
    installmentInternalId: Option<String>,
    /// PENDING, DELIVERED, FAILED or NO_URL.
    state: Option<String>,
    /// activation, payment or signature.
    kind: Option<String>,
    /// Created at or after (RFC 3339).
    from: Option<String>,
    /// Created before (RFC 3339).
    to: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedEventDto {
    #[serde(flatten)]
    pub event: EventDto,
    pub commerce: String,
    pub mandate_internal_id: Option<String>,
    /// The merchant's id of the mandate.
    pub mandate_id: Option<String>,
    /// The mandate's customer: first name and last names.
    pub customer_name: Option<String>,
    pub installment_internal_id: Option<String>,
    /// The state the event announces: the installment's (`PAID`, `REJECTED`...) for a payment,
    /// the mandate's (`ACTIVE`, `CANCELLED`) for an activation, the event type
    /// (`SIGNATURE_COMPLETED`...) for a signature process.
    pub announced_state: Option<String>,
    /// The processor's rejection code a REJECTED payment event carries.
    pub rejection_code: Option<String>,
    /// The HTTP status of the latest delivery attempt; null before any, or when no answer came.
    #[schema(minimum = 100, maximum = 599)]
    pub last_status_code: Option<i64>,
    /// Why the latest delivery attempt got no answer (connection, TLS, timeout, refusal).
    pub last_error: Option<String>,
    /// A signature event's process (`sig_...`): the staff UI's process page. Null for others.
    pub signature_process_id: Option<String>,
}

impl From<ListedEvent> for ListedEventDto {
    fn from(r: ListedEvent) -> Self {
        ListedEventDto {
            event: r.summary.into(),
            commerce: r.commerce_code,
            mandate_internal_id: r.mandate_id,
            mandate_id: r.mandate_external_id,
            customer_name: r.customer_name,
            installment_internal_id: r.installment_id,
            announced_state: r.announced_state,
            rejection_code: r.rejection_code,
            last_status_code: r.last_status_code,
            last_error: r.last_error,
            signature_process_id: r.signature_process_id,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage {
    pub items: Vec<ListedEventDto>,
    pub next_cursor: Option<String>,
}

fn instant(value: Option<&String>, field: &str, errors: &mut FieldErrors) -> Option<String> {
    let text = value?;
    match chrono::DateTime::parse_from_rfc3339(text) {
        Ok(at) => Some(timestamp(at.with_timezone(&chrono::Utc))),
        Err(_) => {
            errors.push(field, "INVALID_FORMAT", "must be an RFC 3339 date-time");
            None
        }
    }
}

/// Every event, newest first, with filters.
#[utoipa::path(get, path = "/notifications", tag = "staff", params(EventsQuery),
    responses(
        (status = 200, description = "EVENTS_OK", body = Envelope<EventsPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<EventsPage>> {
    let mut errors = FieldErrors::new();
    let get = |name: &str| query.get(name).filter(|v| !v.is_empty()).cloned();
    let delivery_state = get("state");
    if let Some(s) = &delivery_state
        && !["PENDING", "DELIVERED", "FAILED", "NO_URL"].contains(&s.as_str())
    {
        errors.push(
            "query.state",
            "INVALID_VALUE",
            "PENDING, DELIVERED, FAILED or NO_URL",
        );
    }
    let limit = match get("limit").map(|l| l.parse::<i64>()) {
        None => 50,
        Some(Ok(n)) if (1..=500).contains(&n) => n,
        Some(_) => {
            errors.push("query.limit", "OUT_OF_RANGE", "1 to 500");
            50
        }
    };
    let before_seq = match get("cursor").map(|c| c.parse::<i64>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            errors.push(
                "query.cursor",
                "INVALID_CURSOR",
                "pass nextCursor unchanged",
            );
            None
        }
    };
    let filter = EventFilter {
        mandate_id: get("mandateInternalId"),
        any_mandate_id: get("mandate")
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty()),
        installment_id: get("installmentInternalId"),
        delivery_state,
        kind: get("kind"),
        created_from: instant(query.get("from"), "query.from", &mut errors),
        created_to: instant(query.get("to"), "query.to", &mut errors),
        before_seq,
        limit: limit + 1,
    };
    errors.into_result()?;
    let mut rows = state.events(&filter)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.seq.to_string())
    } else {
        None
    };
    let items = rows.into_iter().map(ListedEventDto::from).collect();
    Ok(Envelope::ok(
        "EVENTS_OK",
        "events",
        EventsPage { items, next_cursor },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventDetail {
    pub event: EventDto,
    /// The body exactly as sent, with `fileBase64` masked.
    #[schema(value_type = Object)]
    pub body: Value,
    pub attempts: Vec<StaffAttemptDto>,
    /// How a receiver checks this event's signatures.
    pub verification: &'static str,
}

/// One header of a webhook request.
#[derive(Debug, Serialize, ToSchema)]
pub struct SentHeaderDto {
    pub name: &'static str,
    pub value: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffAttemptDto {
    #[serde(flatten)]
    pub attempt: AttemptDto,
    /// The request's headers: `content-type`, `webhook-id`, `webhook-timestamp` and
    /// `webhook-signature` (signatures only, never a secret). Empty when no request was made
    /// (refused destination), or for attempts recorded before headers were kept.
    pub headers: Vec<SentHeaderDto>,
}

fn sent_headers(event_id: &str, sent: &SentHeaders) -> Vec<SentHeaderDto> {
    vec![
        SentHeaderDto {
            name: "content-type",
            value: "application/json".into(),
        },
        SentHeaderDto {
            name: "webhook-id",
            value: event_id.to_string(),
        },
        SentHeaderDto {
            name: "webhook-timestamp",
            value: sent.timestamp.to_string(),
        },
        SentHeaderDto {
            name: "webhook-signature",
            value: sent.signature.clone(),
        },
    ]
}

fn staff_attempt(event_id: &str, row: AttemptRow) -> StaffAttemptDto {
    let headers = row
        .sent
        .as_ref()
        .map(|sent| sent_headers(event_id, sent))
        .unwrap_or_default();
    StaffAttemptDto {
        attempt: row.into(),
        headers,
    }
}

const VERIFICATION: &str = "Standard Webhooks: base64 HMAC-SHA256, keyed with the base64-decoded part of the \
    commerce's whsec_ secret, over \"{webhook-id}.{webhook-timestamp}.{raw body}\"; compare with each \
    v1,<signature> of the webhook-signature header. Body field: lowercase hex HMAC-SHA256 with the same key \
    over the RFC 8785 (JCS) canonical JSON of the body without its signature member.";

/// One event: its body, every attempt, and how to verify it.
#[utoipa::path(get, path = "/notifications/{eventId}", tag = "staff",
    params(("eventId" = String, Path)),
    responses(
        (status = 200, description = "EVENT_OK", body = Envelope<EventDetail>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "EVENT_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn detail(
    State(state): State<AppState>,
    _staff: Staff,
    Path(event_id): Path<String>,
) -> ApiResult<Envelope<EventDetail>> {
    let EventRecord {
        summary,
        body,
        attempts,
    } = state.event(&event_id)?;
    let detail = EventDetail {
        event: summary.into(),
        body: mask_file(serde_json::from_str(&body).map_err(|e| Error::Internal(e.into()))?),
        attempts: attempts
            .into_iter()
            .map(|a| staff_attempt(&event_id, a))
            .collect(),
        verification: VERIFICATION,
    };
    Ok(Envelope::ok("EVENT_OK", "event", detail))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyRequest {
    /// The secret to check with: `whsec_` then base64, as the commerce holds it.
    #[schema(max_length = 200, example = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]
    pub secret: Option<String>,
}

/// The body `signature` field against the one the secret makes.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BodySignatureCheck {
    /// The `signature` member of the stored body (null for a body without one).
    pub sent: Option<String>,
    pub valid: bool,
}

/// One attempt's `webhook-signature` header against the one the secret makes for its
/// `webhook-id`, `webhook-timestamp` and the raw body.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderSignatureCheck {
    /// 1 for the first attempt of the event's attempt list.
    #[schema(minimum = 1)]
    pub attempt: usize,
    pub started_at: String,
    pub webhook_timestamp: i64,
    /// Whether one of the header's `v1,` signatures is the secret's.
    pub valid: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureVerification {
    pub body: BodySignatureCheck,
    /// One per attempt that sent a request, oldest first.
    pub headers: Vec<HeaderSignatureCheck>,
}

fn verify_with(
    secret: &Secret<String>,
    event_id: &str,
    raw_body: &str,
    attempts: &[AttemptRow],
) -> Result<SignatureVerification, Error> {
    let body: Value = serde_json::from_str(raw_body)?;
    let sent = body["signature"].as_str().map(str::to_string);
    let valid = sent
        .as_deref()
        .is_some_and(|s| s == body_signature(&body, secret));
    let headers = attempts
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.sent.as_ref().map(|h| (i, a, h)))
        .map(|(i, attempt, sent)| {
            let expected = standard_webhooks_signature(secret, event_id, sent.timestamp, raw_body);
            HeaderSignatureCheck {
                attempt: i + 1,
                started_at: attempt.started_at.clone(),
                webhook_timestamp: sent.timestamp,
                valid: sent.signature.split(' ').any(|s| s == expected),
            }
        })
        .collect();
    Ok(SignatureVerification {
        body: BodySignatureCheck { sent, valid },
        headers,
    })
}

/// Checks an event's signatures with a secret staff paste (a merchant's, to tell whether the
/// secret they verify with is the one that signed): the body `signature` field over the stored
/// body, and each attempt's `webhook-signature` header over its timestamp and the raw body.
/// The secret is used for this answer only: never stored, logged or echoed.
#[utoipa::path(post, path = "/notifications/{eventId}/verify", tag = "staff",
    params(("eventId" = String, Path)),
    request_body = VerifyRequest,
    responses(
        (status = 200, description = "SIGNATURES_CHECKED", body = Envelope<SignatureVerification>),
        (status = 400, description = "Missing or malformed secret", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "EVENT_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn verify(
    State(state): State<AppState>,
    _staff: Staff,
    Path(event_id): Path<String>,
    Body(body): Body<VerifyRequest>,
) -> ApiResult<Envelope<SignatureVerification>> {
    let secret = match body.secret.map(|s| Secret::new(s.trim().to_string())) {
        None => {
            return Err(Error::validation("secret", "REQUIRED", "the secret to check with").into());
        }
        Some(s) if s.expose().len() > 200 || !is_well_formed_secret(s.expose()) => {
            return Err(Error::validation(
                "secret",
                "INVALID_FORMAT",
                "a webhook secret: whsec_ followed by base64",
            )
            .into());
        }
        Some(s) => s,
    };
    let event = state.event(&event_id)?;
    let result = verify_with(&secret, &event_id, &event.body, &event.attempts)?;
    Ok(Envelope::ok(
        "SIGNATURES_CHECKED",
        "signatures checked against the given secret",
        result,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedeliverRequest {
    /// 1 to 1000 event ids.
    pub event_ids: Option<Vec<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedeliverResult {
    pub scheduled: Vec<String>,
    /// Unknown ids, or events without a URL.
    pub not_found: Vec<String>,
}

/// Send events again now, whatever their state (operator or admin).
#[utoipa::path(post, path = "/notifications/redeliver", tag = "staff",
    request_body = RedeliverRequest,
    responses(
        (status = 200, description = "REDELIVER_OK", body = Envelope<RedeliverResult>),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn redeliver(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<RedeliverRequest>,
) -> ApiResult<Envelope<RedeliverResult>> {
    staff.require(Role::Operator)?;
    let ids = body.event_ids.unwrap_or_default();
    if ids.is_empty() || ids.len() > 1000 {
        return Err(Error::validation("eventIds", "INVALID_LENGTH", "1 to 1000 event ids").into());
    }
    let redelivery = state.redeliver(staff.email(), ids)?;
    let result = RedeliverResult {
        scheduled: redelivery.scheduled,
        not_found: redelivery.not_found,
    };
    Ok(Envelope::ok(
        "REDELIVER_OK",
        "scheduled for redelivery",
        result,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotateRequest {
    /// Hours the previous secret keeps signing beside the new one (0 to 720, default 24).
    pub overlap_hours: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotateResult {
    pub code: String,
    /// Shown once.
    pub webhook_secret: String,
    pub previous_valid_until: String,
}

/// Rotate a commerce's webhook secret (admin).
#[utoipa::path(post, path = "/commerces/{code}/rotate-secret", tag = "staff",
    params(("code" = String, Path)),
    request_body = RotateRequest,
    responses(
        (status = 200, description = "SECRET_ROTATED", body = Envelope<RotateResult>),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
    Body(body): Body<RotateRequest>,
) -> ApiResult<Envelope<RotateResult>> {
    staff.require(Role::Admin)?;
    let hours = body.overlap_hours.unwrap_or(24);
    if !(0..=720).contains(&hours) {
        return Err(Error::validation("overlapHours", "OUT_OF_RANGE", "0 to 720").into());
    }
    let now = state.clock.now();
    let until = timestamp(now + chrono::Duration::hours(hours));
    let secret = generate_webhook_secret();
    state.rotate_webhook_secret(staff.email(), &code, &secret, &until)?;
    Ok(Envelope::ok(
        "SECRET_ROTATED",
        "new webhook secret; the previous one signs too until previousValidUntil",
        RotateResult {
            code,
            webhook_secret: secret.into_inner(),
            previous_valid_until: until,
        },
    ))
}

/// A commerce's current webhook secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevealedSecret {
    pub code: String,
    pub webhook_secret: String,
}

/// Show a commerce's current webhook secret again (admin; the act is recorded in the staff
/// audit). A POST, so that it needs the CSRF token and no link or prefetch can trigger it.
#[utoipa::path(post, path = "/commerces/{code}/reveal-secret", tag = "staff",
    params(("code" = String, Path)),
    responses(
        (status = 200, description = "SECRET_REVEALED", body = Envelope<RevealedSecret>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn reveal_secret(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
) -> ApiResult<Envelope<RevealedSecret>> {
    staff.require(Role::Admin)?;
    let secret = state.reveal_webhook_secret(staff.email(), &code)?;
    Ok(Envelope::ok(
        "SECRET_REVEALED",
        "the commerce's current webhook secret",
        RevealedSecret {
            code,
            webhook_secret: secret.expose().to_string(),
        },
    ))
}
