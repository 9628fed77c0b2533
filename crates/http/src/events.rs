//! The merchant's Events API (CONTRACT 12): the commerce's own events, newest first, with every
//! delivery attempt, and redelivery on request. Both environments; the sandbox's
//! `/sandbox/notifications/...` operations stay as aliases.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::sandbox::mask_file;
use mandato_core::domain::event_kind::kind_named;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::operations::events as operation;
use mandato_engine::records::{AttemptRow, CommerceEvent, CommerceEventFilter};

/// Items per page unless `limit` says otherwise.
pub const DEFAULT_LIMIT: i64 = 20;
/// The most items one page holds.
pub const MAX_LIMIT: i64 = 100;

/// What an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    Activation,
    Payment,
    Signature,
}

impl EventType {
    const ALL: [EventType; 3] = [
        EventType::Activation,
        EventType::Payment,
        EventType::Signature,
    ];

    fn as_str(self) -> &'static str {
        match self {
            EventType::Activation => "activation",
            EventType::Payment => "payment",
            EventType::Signature => "signature",
        }
    }

    fn parse(text: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// Where the event's own delivery stands. `NO_URL`: the merchant gave no webhook URL, so the
/// event is kept as history (and still reaches `mandato listen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventStatus {
    Pending,
    Delivered,
    Failed,
    NoUrl,
}

impl EventStatus {
    const ALL: [EventStatus; 4] = [
        EventStatus::Pending,
        EventStatus::Delivered,
        EventStatus::Failed,
        EventStatus::NoUrl,
    ];

    fn as_str(self) -> &'static str {
        match self {
            EventStatus::Pending => "PENDING",
            EventStatus::Delivered => "DELIVERED",
            EventStatus::Failed => "FAILED",
            EventStatus::NoUrl => "NO_URL",
        }
    }

    fn parse(text: &str) -> Option<EventStatus> {
        EventStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// Why an attempt was made: the first send, an automatic retry, a redelivery asked for, or a
/// copy to a `mandato listen` receiver (which leaves the event's own delivery alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventAttemptKind {
    Initial,
    Retry,
    Manual,
    Listen,
}

impl EventAttemptKind {
    /// From the stored kind. A sandbox-injected duplicate is an automatic resend: a retry.
    fn from_stored(kind: &str) -> EventAttemptKind {
        match kind {
            "FIRST" => EventAttemptKind::Initial,
            "MANUAL" => EventAttemptKind::Manual,
            "LISTEN" => EventAttemptKind::Listen,
            _ => EventAttemptKind::Retry,
        }
    }
}

/// What the attempt decided for the event: delivered, another attempt scheduled, or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventAttemptOutcome {
    Delivered,
    Retry,
    Failed,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct EventsQuery {
    /// Only events of this kind. A signature body's `event` (`SIGNATURE_COMPLETED`,
    /// `SIGNATORY_SIGNED`...) and a `mandato trigger` scenario (`payment.paid`) are accepted as
    /// aliases of their kind.
    r#type: Option<EventType>,
    /// Only the events of this mandate (`man_...`) of the commerce.
    #[param(max_length = 64, min_length = 1)]
    mandateInternalId: Option<String>,
    /// Only events whose own delivery stands here.
    status: Option<EventStatus>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page, unchanged.
    #[param(pattern = "^[1-9][0-9]{0,17}$")]
    cursor: Option<String>,
}

/// An event of the commerce.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventItem {
    /// `evt_...`, also the `webhook-id` header of every send.
    pub event_id: String,
    pub r#type: EventType,
    /// Increases by one with each event of the same mandate or signature process.
    #[schema(minimum = 1)]
    pub sequence: i64,
    /// The mandate the event is about (activation and payment events).
    pub mandate_internal_id: Option<String>,
    /// The signature process the event is about (signature events).
    pub signature_internal_id: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub status: EventStatus,
    /// Every attempt logged, copies to listeners included: the length of `attemptLog`.
    #[schema(minimum = 0)]
    pub attempts: i64,
    /// When the next automatic attempt is due (PENDING events only).
    #[schema(format = DateTime)]
    pub next_attempt_at: Option<String>,
    /// The webhook URL (null for NO_URL events).
    pub url: Option<String>,
    /// The exact signed body, with `fileBase64` masked as `"***"`.
    #[schema(value_type = Object)]
    pub body: Value,
}

impl EventItem {
    pub fn from_row(e: CommerceEvent) -> Result<EventItem, Error> {
        Ok(EventItem {
            event_id: e.event_id,
            r#type: EventType::parse(&e.kind).unwrap_or(EventType::Payment),
            sequence: e.sequence,
            mandate_internal_id: e.mandate_id,
            signature_internal_id: e.signature_id,
            created_at: e.created_at,
            status: EventStatus::parse(&e.delivery_state).unwrap_or(EventStatus::Pending),
            attempts: e.attempts,
            next_attempt_at: e.next_attempt_at,
            url: e.url,
            body: mask_file(serde_json::from_str(&e.body)?),
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsList {
    pub items: Vec<EventItem>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    #[schema(pattern = "^[1-9][0-9]{0,17}$")]
    pub next_cursor: Option<String>,
}

/// One delivery attempt.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventAttempt {
    #[schema(format = DateTime)]
    pub at: String,
    pub kind: EventAttemptKind,
    /// The receiver's status; null when no answer came (see `error`).
    #[schema(minimum = 100, maximum = 599)]
    pub http_status: Option<i64>,
    #[schema(minimum = 0)]
    pub duration_ms: i64,
    /// Why no answer came (connect, TLS, timeout) or why the attempt was refused.
    pub error: Option<String>,
    /// The first 2 KiB of the answer's body, when it had one.
    #[schema(max_length = 2048)]
    pub response_excerpt: Option<String>,
    pub outcome: EventAttemptOutcome,
}

impl From<AttemptRow> for EventAttempt {
    fn from(a: AttemptRow) -> Self {
        EventAttempt {
            at: a.started_at,
            kind: EventAttemptKind::from_stored(&a.kind),
            http_status: a.status_code,
            duration_ms: a.duration_ms,
            error: a.error,
            response_excerpt: a.response_excerpt,
            outcome: match a.outcome.as_str() {
                "DELIVERED" => EventAttemptOutcome::Delivered,
                "RETRY" => EventAttemptOutcome::Retry,
                _ => EventAttemptOutcome::Failed,
            },
        }
    }
}

/// An event with every attempt, oldest first.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventWithAttempts {
    #[serde(flatten)]
    pub event: EventItem,
    pub attempt_log: Vec<EventAttempt>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventRedelivery {
    pub event_id: String,
    /// The event is PENDING again, due now.
    pub status: EventStatus,
}

/// The filters of a listing, validated; every bad one is reported at once.
pub fn parse_filter(
    query: &HashMap<String, String>,
    commerce_id: i64,
) -> Result<(CommerceEventFilter, i64), Error> {
    let mut errors = FieldErrors::new();
    // An empty value (`?type=`) is a value, and not one of the allowed ones: refused at its
    // field like any other, as the document's patterns and enums say.
    let get = |name: &str| query.get(name);
    // The body's `event` names and trigger's scenario names are aliases of their kind.
    let kind = get("type").and_then(|t| match kind_named(t) {
        Some(kind) => Some(kind.to_string()),
        None => {
            errors.push(
                "query.type",
                "INVALID_VALUE",
                "activation, payment or signature (or a body's event, e.g. SIGNATURE_COMPLETED)",
            );
            None
        }
    });
    let status = get("status").and_then(|s| match EventStatus::parse(s) {
        Some(s) => Some(s.as_str().to_string()),
        None => {
            errors.push(
                "query.status",
                "INVALID_VALUE",
                "PENDING, DELIVERED, FAILED or NO_URL",
            );
            None
        }
    });
    let mandate_id = get("mandateInternalId").and_then(|m| {
        if m.is_empty() || m.chars().count() > 64 {
            errors.push(
                "query.mandateInternalId",
                "INVALID_LENGTH",
                "1 to 64 characters",
            );
            None
        } else {
            Some(m.clone())
        }
    });
    let limit = match get("limit").map(|l| l.parse::<i64>()) {
        None => DEFAULT_LIMIT,
        Some(Ok(n)) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            errors.push("query.limit", "OUT_OF_RANGE", "an integer from 1 to 100");
            DEFAULT_LIMIT
        }
    };
    let before_seq = match get("cursor") {
        None => None,
        Some(c) => match c.parse::<i64>() {
            Ok(n) if n > 0 && c.len() <= 18 && !c.starts_with(['+', '0']) => Some(n),
            _ => {
                errors.push(
                    "query.cursor",
                    "INVALID_CURSOR",
                    "pass the nextCursor of the previous page unchanged",
                );
                None
            }
        },
    };
    errors.into_result()?;
    Ok((
        CommerceEventFilter {
            commerce_id,
            kind,
            mandate_id,
            delivery_state: status,
            before_seq,
            after_seq: None,
            // One more than shown tells whether another page follows.
            limit: limit + 1,
        },
        limit,
    ))
}

/// The commerce's events, newest first. The cursor is a keyset: new events arriving between
/// pages never make a page repeat or skip one.
#[utoipa::path(get, path = "/events", tag = "events",
    params(super::common::CommonHeaders, EventsQuery),
    responses(
        (status = 200, description = "EVENTS_OK", body = Envelope<EventsList>),
        (status = 400, description = "Invalid common headers, or VALIDATION_ERROR naming the bad filter (`query.cursor`, `query.limit`, ...)", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn list_events(
    State(state): State<AppState>,
    authed: Authed,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<EventsList>> {
    let (filter, limit) = parse_filter(&query, authed.commerce.id)?;
    let mut rows = state.read(&authed.commerce, |conn, _| operation::list(conn, &filter))?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.seq.to_string())
    } else {
        None
    };
    let items = rows
        .into_iter()
        .map(EventItem::from_row)
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Envelope::ok(
        "EVENTS_OK",
        "events, newest first",
        EventsList { items, next_cursor },
    ))
}

/// One event of the commerce with its `attemptLog`; `attempts` is the log's length.
#[utoipa::path(get, path = "/events/{eventId}", tag = "events",
    params(super::common::CommonHeaders,
        ("eventId" = String, Path, description = "evt_...", max_length = 64)),
    responses(
        (status = 200, description = "EVENT_OK", body = Envelope<EventWithAttempts>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "EVENT_NOT_FOUND: no such event in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn get_event(
    State(state): State<AppState>,
    authed: Authed,
    Path(event_id): Path<String>,
) -> ApiResult<Envelope<EventWithAttempts>> {
    let (event, attempts) = state
        .read(&authed.commerce, |conn, ctx| {
            operation::with_attempts(conn, ctx, &event_id)
        })
        .map_err(|e| e.located("path.eventId", &event_id))?;
    let attempt_log: Vec<EventAttempt> = attempts.into_iter().map(EventAttempt::from).collect();
    let mut event = EventItem::from_row(event)?;
    event.attempts = attempt_log.len() as i64;
    let detail = EventWithAttempts { event, attempt_log };
    Ok(Envelope::ok("EVENT_OK", "event found", detail))
}

/// Send the event again now, whatever its state: same body and `webhook-id`, a fresh
/// timestamp and header signature. The attempt is logged with kind MANUAL.
#[utoipa::path(post, path = "/events/{eventId}/redeliver", tag = "events",
    params(super::common::CommonHeaders,
        ("eventId" = String, Path, description = "evt_...", max_length = 64)),
    responses(
        (status = 202, description = "EVENT_REDELIVERY_SCHEDULED", body = Envelope<EventRedelivery>),
        (status = 400, description = "Invalid common headers, or EVENT_HAS_NO_URL (the event has no webhook URL to send to)", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "EVENT_NOT_FOUND: no such event in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn redeliver_event(
    State(state): State<AppState>,
    authed: Authed,
    Path(event_id): Path<String>,
) -> ApiResult<Envelope<EventRedelivery>> {
    let id = event_id.clone();
    state
        .write(authed.commerce, move |tx, ctx| {
            operation::redeliver(tx, ctx, &id)
        })
        .await
        .map_err(|e| e.located("path.eventId", &event_id))?;
    Ok(Envelope {
        status_code: 202,
        name: "EVENT_REDELIVERY_SCHEDULED",
        message: "the event will be sent again now",
        payload: EventRedelivery {
            event_id,
            status: EventStatus::Pending,
        },
    })
}
