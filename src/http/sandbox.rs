//! Sandbox operations (CONTRACT 9), with the merchant API's headers and JWT. Production
//! answers 404 on every one of them.

use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::json::Body;
use crate::error::Error;
use crate::notify::delivery::Faults;
use crate::store::deliveries::{self, AttemptRow, EventSummary};

fn sandbox_only(state: &AppState) -> Result<(), Error> {
    if state.config.environment.is_sandbox() {
        Ok(())
    } else {
        Err(Error::not_found("operation"))
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedeliverPayload {
    pub event_id: String,
    pub scheduled: bool,
}

/// Send an event again now (same body and `webhook-id`, fresh timestamp and signature),
/// whatever its delivery state.
#[utoipa::path(post, path = "/sandbox/notifications/{eventId}/redeliver", tag = "sandbox",
    params(super::common::CommonHeaders, ("eventId" = String, Path, description = "evt_...")),
    responses(
        (status = 200, description = "SANDBOX_REDELIVER_OK", body = Envelope<RedeliverPayload>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such event with a webhook URL in this commerce, or production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn redeliver(
    State(state): State<AppState>,
    authed: Authed,
    Path(event_id): Path<String>,
) -> ApiResult<Envelope<RedeliverPayload>> {
    sandbox_only(&state)?;
    let id = event_id.clone();
    let scheduled = state
        .write(authed.commerce, move |tx, ctx| {
            Ok(deliveries::request_redelivery(
                tx,
                Some(ctx.commerce.id),
                &id,
                &ctx.timestamp(),
            )?)
        })
        .await?;
    if !scheduled {
        return Err(Error::not_found("event").into());
    }
    Ok(Envelope::ok(
        "SANDBOX_REDELIVER_OK",
        "the event will be sent again now",
        RedeliverPayload {
            event_id,
            scheduled,
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationPayload {
    pub event: EventDto,
    /// The body as sent, with `fileBase64` masked.
    #[schema(value_type = Object)]
    pub body: Value,
    pub attempts: Vec<AttemptDto>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventDto {
    pub event_id: String,
    /// `activation`, `payment` or `signature`.
    pub kind: String,
    pub sequence: i64,
    pub url: Option<String>,
    /// PENDING, DELIVERED, FAILED, or NO_URL (kept as history; nothing to send).
    pub delivery_state: String,
    /// Automatic attempts so far.
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub delivered_at: Option<String>,
}

impl From<EventSummary> for EventDto {
    fn from(e: EventSummary) -> Self {
        EventDto {
            event_id: e.event_id,
            kind: e.kind,
            sequence: e.sequence,
            url: e.url,
            delivery_state: e.delivery_state,
            attempts: e.attempts,
            next_attempt_at: e.next_attempt_at,
            created_at: e.created_at,
            delivered_at: e.delivered_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptDto {
    /// FIRST, RETRY, MANUAL, or INJECTED (a sandbox duplicate).
    pub kind: String,
    pub started_at: String,
    pub duration_ms: i64,
    pub status_code: Option<i64>,
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
    /// DELIVERED, RETRY (another attempt is scheduled) or FAILED.
    pub outcome: String,
}

impl From<AttemptRow> for AttemptDto {
    fn from(a: AttemptRow) -> Self {
        AttemptDto {
            kind: a.kind,
            started_at: a.started_at,
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            response_excerpt: a.response_excerpt,
            error: a.error,
            outcome: a.outcome,
        }
    }
}

/// An event of this commerce, its body and every delivery attempt.
#[utoipa::path(get, path = "/sandbox/notifications/{eventId}", tag = "sandbox",
    params(super::common::CommonHeaders, ("eventId" = String, Path, description = "evt_...")),
    responses(
        (status = 200, description = "SANDBOX_NOTIFICATION_OK", body = Envelope<NotificationPayload>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such event in this commerce, or production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn notification(
    State(state): State<AppState>,
    authed: Authed,
    Path(event_id): Path<String>,
) -> ApiResult<Envelope<NotificationPayload>> {
    sandbox_only(&state)?;
    let payload = state.read(&authed.commerce, |conn, ctx| {
        let Some((seq, commerce_id, event, body)) = deliveries::event_with_body(conn, &event_id)?
        else {
            return Err(Error::not_found("event"));
        };
        if commerce_id != ctx.commerce.id {
            return Err(Error::not_found("event"));
        }
        Ok(NotificationPayload {
            event: event.into(),
            body: mask_file(serde_json::from_str(&body)?),
            attempts: deliveries::attempts_of(conn, seq)?
                .into_iter()
                .map(AttemptDto::from)
                .collect(),
        })
    })?;
    Ok(Envelope::ok(
        "SANDBOX_NOTIFICATION_OK",
        "event found",
        payload,
    ))
}

/// `fileBase64` is sensitive (an EPAC mandate document): listings show only that it is there.
pub fn mask_file(mut body: Value) -> Value {
    if let Some(file) = body.get_mut("fileBase64")
        && file.is_string()
    {
        *file = Value::String("***".into());
    }
    body
}

/// The sandbox's webhook fault injection for this commerce.
#[utoipa::path(get, path = "/sandbox/notifications/faults", tag = "sandbox",
    params(super::common::CommonHeaders),
    responses(
        (status = 200, description = "SANDBOX_FAULTS_OK", body = Envelope<Faults>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn get_faults(
    State(state): State<AppState>,
    authed: Authed,
) -> ApiResult<Envelope<Faults>> {
    sandbox_only(&state)?;
    let faults = state.read(&authed.commerce, |conn, ctx| {
        let stored = deliveries::faults(conn, ctx.commerce.id)?;
        Ok(stored
            .and_then(|f| serde_json::from_str(&f).ok())
            .unwrap_or_default())
    })?;
    Ok(Envelope::ok(
        "SANDBOX_FAULTS_OK",
        "webhook fault injection",
        faults,
    ))
}

/// Make the worker deliver some of this commerce's events twice (`duplicateEvery`), newest
/// first (`reorder`), or late (`delaySeconds`), to prove a receiver idempotent and ordering
/// by `sequence`/`dateTime`. Send zeros and false to turn it off.
#[utoipa::path(put, path = "/sandbox/notifications/faults", tag = "sandbox",
    params(super::common::CommonHeaders),
    request_body = Faults,
    responses(
        (status = 200, description = "SANDBOX_FAULTS_OK", body = Envelope<Faults>),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn put_faults(
    State(state): State<AppState>,
    authed: Authed,
    Body(faults): Body<Faults>,
) -> ApiResult<Envelope<Faults>> {
    sandbox_only(&state)?;
    if faults.delay_seconds > 86_400 {
        return Err(Error::validation("delaySeconds", "OUT_OF_RANGE", "at most 86400").into());
    }
    let off = faults.duplicate_every == 0 && !faults.reorder && faults.delay_seconds == 0;
    let stored = (!off)
        .then(|| serde_json::to_string(&faults))
        .transpose()
        .map_err(Error::from)?;
    state
        .write(authed.commerce, move |tx, ctx| {
            Ok(deliveries::set_faults(
                tx,
                ctx.commerce.id,
                stored.as_deref(),
            )?)
        })
        .await?;
    Ok(Envelope::ok(
        "SANDBOX_FAULTS_OK",
        "webhook fault injection set",
        faults,
    ))
}
