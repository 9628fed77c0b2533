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
use mandato_core::domain::date::{DATE_OUT_OF_RANGE, Date, DateError};
use mandato_core::error::Error;
use mandato_engine::notify::delivery::Faults;
use mandato_engine::operations::sandbox::{self as operation, ForcedOutcome};
use mandato_engine::records::{AttemptRow, EventSummary};

pub fn sandbox_only(state: &AppState) -> Result<(), Error> {
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
            operation::redeliver(tx, ctx, &id)
        })
        .await
        .map_err(|e| e.located("path.eventId", &event_id))?;
    if !scheduled {
        return Err(Error::not_found_at("event", "path.eventId", &event_id).into());
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
    /// FIRST, RETRY, MANUAL, INJECTED (a sandbox duplicate) or LISTEN (a copy sent to `mandato listen`).
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
    let (event, body, attempts) = state
        .read(&authed.commerce, |conn, ctx| {
            operation::notification(conn, ctx, &event_id)
        })
        .map_err(|e| e.located("path.eventId", &event_id))?;
    let payload = NotificationPayload {
        event: event.into(),
        body: mask_file(serde_json::from_str(&body).map_err(Error::from)?),
        attempts: attempts.into_iter().map(AttemptDto::from).collect(),
    };
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

/// The largest `duplicateEvery` of the sandbox's fault injection (every event twice is 1).
pub const MAX_DUPLICATE_EVERY: i64 = 1000;
/// The longest `delaySeconds`: a day.
pub const MAX_DELAY_SECONDS: i64 = 86_400;

/// The fault injection as sent: numbers are read as JSON numbers and bounded here, so that a
/// value `/openapi.json` forbids (a fraction, a negative, past the maximum) is a 400 naming its
/// field and is never stored.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FaultsIn {
    /// Deliver every n-th event twice (0 or absent: never).
    #[schema(value_type = Option<i64>)]
    #[serde(default, deserialize_with = "super::fields::json_number")]
    pub duplicate_every: Option<serde_json::Number>,
    /// Send each batch of due events newest first.
    #[serde(default)]
    pub reorder: Option<bool>,
    /// Hold each event this long after its creation before its first attempt.
    #[schema(value_type = Option<i64>)]
    #[serde(default, deserialize_with = "super::fields::json_number")]
    pub delay_seconds: Option<serde_json::Number>,
}

impl FaultsIn {
    pub fn validate(&self) -> Result<Faults, Error> {
        let mut errors = mandato_core::error::FieldErrors::new();
        let mut bounded = |value: Option<&serde_json::Number>, field: &str, max: i64| {
            let Some(number) = value else { return 0 };
            // A JSON integer may be written with a zero fraction (`5.0`), as JSON Schema says.
            let whole = number.as_i64().or_else(|| {
                number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() <= i64::MAX as f64)
                    .map(|f| f as i64)
            });
            match whole {
                Some(n) if (0..=max).contains(&n) => u32::try_from(n).unwrap_or(0),
                _ => {
                    errors.push(
                        field,
                        "OUT_OF_RANGE",
                        format!("a whole number from 0 to {max}"),
                    );
                    0
                }
            }
        };
        let duplicate_every = bounded(
            self.duplicate_every.as_ref(),
            "duplicateEvery",
            MAX_DUPLICATE_EVERY,
        );
        let delay_seconds = bounded(
            self.delay_seconds.as_ref(),
            "delaySeconds",
            MAX_DELAY_SECONDS,
        );
        errors.into_result()?;
        Ok(Faults {
            duplicate_every,
            reorder: self.reorder.unwrap_or(false),
            delay_seconds,
        })
    }
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
    let stored = state.read(&authed.commerce, operation::faults)?;
    let faults: Faults = stored
        .and_then(|f| serde_json::from_str(&f).ok())
        .unwrap_or_default();
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
    request_body = FaultsIn,
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
    Body(body): Body<FaultsIn>,
) -> ApiResult<Envelope<Faults>> {
    sandbox_only(&state)?;
    let faults = body.validate()?;
    let off = faults.duplicate_every == 0 && !faults.reorder && faults.delay_seconds == 0;
    let stored = (!off)
        .then(|| serde_json::to_string(&faults))
        .transpose()
        .map_err(Error::from)?;
    state
        .write(authed.commerce, move |tx, ctx| {
            operation::set_faults(tx, ctx, stored.as_deref())
        })
        .await?;
    Ok(Envelope::ok(
        "SANDBOX_FAULTS_OK",
        "webhook fault injection set",
        faults,
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummaryDto {
    /// The business date charged.
    pub date: String,
    /// Whether `date` is a business day (`serve --business-days`, holidays): on another day
    /// nothing is charged or settled.
    pub business_day: bool,
    /// When `businessDay` is false: the next business day, when the run charges what is due.
    #[schema(value_type = Option<String>, format = Date)]
    pub next_business_day: Option<String>,
    /// Charge attempts started by the run.
    pub attempted: i64,
    pub paid: i64,
    pub rejected: i64,
    pub in_validation: i64,
    pub in_process: i64,
    /// Earlier IN_VALIDATION installments settled by the run.
    pub settled: i64,
    /// UF installments not charged for want of the day's UF value.
    pub waiting_uf: i64,
    /// Due installments not charged because their commerce has no acquirer for the rail
    /// (`ACQUIRER_NOT_CONFIGURED`, production only).
    pub acquirer_not_configured: i64,
}

impl From<&mandato_engine::charging::run::RunSummary> for RunSummaryDto {
    fn from(s: &mandato_engine::charging::run::RunSummary) -> Self {
        RunSummaryDto {
            date: s.date.to_string(),
            business_day: s.business_day,
            next_business_day: s.next_business_day.map(|d| d.to_string()),
            attempted: s.counts.attempted,
            paid: s.counts.paid,
            rejected: s.counts.rejected,
            in_validation: s.counts.in_validation,
            in_process: s.counts.in_process,
            settled: s.counts.settled,
            waiting_uf: s.counts.waiting_uf,
            acquirer_not_configured: s.counts.acquirer_not_configured,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockPayload {
    /// The business date.
    pub today: String,
    /// Business time (the wall clock moved by the offset).
    pub now: String,
    pub offset_days: i64,
    /// One summary per date crossed by an advance, in order; null when the clock was only read.
    pub runs: Option<Vec<RunSummaryDto>>,
}

pub fn clock_payload(state: &AppState, runs: Option<Vec<RunSummaryDto>>) -> ClockPayload {
    let wall = state.clock.now();
    ClockPayload {
        today: state.calendar.today(wall).to_string(),
        now: mandato_core::clock::timestamp(state.calendar.now(wall)),
        offset_days: state.calendar.offset_days(),
        runs,
    }
}

/// The sandbox's business clock.
#[utoipa::path(get, path = "/sandbox/clock", tag = "sandbox",
    params(super::common::CommonHeaders),
    responses(
        (status = 200, description = "SANDBOX_CLOCK_OK", body = Envelope<ClockPayload>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn get_clock(
    State(state): State<AppState>,
    _authed: Authed,
) -> ApiResult<Envelope<ClockPayload>> {
    sandbox_only(&state)?;
    follow_stored_clock(&state).await?;
    Ok(Envelope::ok(
        "SANDBOX_CLOCK_OK",
        "business clock",
        clock_payload(&state, None),
    ))
}

#[derive(Debug, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvanceRequest {
    /// A business date after today (YYYY-MM-DD).
    pub advance_to: Option<String>,
    /// 1 to 400 days.
    #[serde(default, deserialize_with = "super::fields::json_integer")]
    pub advance_days: Option<i64>,
}

/// Move the business clock forward (only), running the charging engine for every date crossed,
/// in order. Wall-clock matters (JWT, header skew, webhook timestamps and retries) never move.
#[utoipa::path(post, path = "/sandbox/clock", tag = "sandbox",
    params(super::common::CommonHeaders),
    request_body = AdvanceRequest,
    responses(
        (status = 200, description = "SANDBOX_CLOCK_OK", body = Envelope<ClockPayload>),
        (status = 400, description = "Not forward, not exactly one of advanceTo and advanceDays, or DATE_OUT_OF_RANGE (past 9999-12-31)", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn advance_clock(
    State(state): State<AppState>,
    _authed: Authed,
    Body(body): Body<AdvanceRequest>,
) -> ApiResult<Envelope<ClockPayload>> {
    sandbox_only(&state)?;
    follow_stored_clock(&state).await?;
    let target = advance_target(&body, state.today())?;
    let runs = advance_business_clock(&state, target).await?;
    Ok(Envelope::ok(
        "SANDBOX_CLOCK_OK",
        "business clock advanced",
        clock_payload(&state, Some(runs)),
    ))
}

/// The date an advance request asks for: forward only, at most 400 days, never past
/// 9999-12-31 (the last day the store can compare as a date).
pub fn advance_target(
    body: &AdvanceRequest,
    today: chrono::NaiveDate,
) -> Result<chrono::NaiveDate, Error> {
    match (&body.advance_to, body.advance_days) {
        (Some(date), None) => {
            let target = Date::parse(date)
                .map_err(|e| match e {
                    DateError::OutOfRange => {
                        Error::refused_at(DATE_OUT_OF_RANGE, "advanceTo", e.to_string())
                    }
                    DateError::Invalid => Error::validation("advanceTo", e.code(), e.to_string()),
                })?
                .naive();
            if target <= today {
                return Err(Error::validation(
                    "advanceTo",
                    "NOT_FORWARD",
                    format!("the clock only moves forward from {today}"),
                ));
            }
            if (target - today).num_days() > 400 {
                return Err(Error::validation(
                    "advanceTo",
                    "TOO_FAR",
                    "at most 400 days at a time",
                ));
            }
            Ok(target)
        }
        (None, Some(days)) if (1..=400).contains(&days) => {
            let target = today + chrono::Duration::days(days);
            if target > Date::MAX.naive() {
                return Err(Error::refused_at(
                    DATE_OUT_OF_RANGE,
                    "advanceDays",
                    format!("the business clock cannot pass {}", Date::MAX),
                ));
            }
            Ok(target)
        }
        (None, Some(_)) => Err(Error::validation("advanceDays", "OUT_OF_RANGE", "1 to 400")),
        _ => Err(Error::validation(
            "body",
            "ONE_OF_REQUIRED",
            "send exactly one of advanceTo and advanceDays",
        )),
    }
}

/// Takes the business clock as stored (another engine on the same PostgreSQL database may
/// have moved it).
pub async fn follow_stored_clock(state: &AppState) -> Result<(), Error> {
    state.engine.follow_stored_clock().await
}

/// Moves the business clock up to `target`, charging each date crossed (`Engine::advance_business_clock`).
pub async fn advance_business_clock(
    state: &AppState,
    target: chrono::NaiveDate,
) -> Result<Vec<RunSummaryDto>, Error> {
    let runs = state.engine.advance_business_clock(target).await?;
    Ok(runs.iter().map(RunSummaryDto::from).collect())
}

/// Run today's charging now (only what is due and not yet attempted today).
#[utoipa::path(post, path = "/sandbox/charging/run", tag = "sandbox",
    params(super::common::CommonHeaders),
    responses(
        (status = 200, description = "SANDBOX_CHARGING_RUN_OK", body = Envelope<RunSummaryDto>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn run_charging(
    State(state): State<AppState>,
    _authed: Authed,
) -> ApiResult<Envelope<RunSummaryDto>> {
    sandbox_only(&state)?;
    follow_stored_clock(&state).await?;
    let summary = state
        .charge_today(mandato_engine::charging::run::Trigger::Sandbox)
        .await?;
    Ok(Envelope::ok(
        "SANDBOX_CHARGING_RUN_OK",
        "charging run finished",
        RunSummaryDto::from(&summary),
    ))
}

#[derive(Debug, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivateRequest {
    /// 3, 4, 11 (cards) or 5, 6, 14 (bank debit).
    #[serde(default, deserialize_with = "super::fields::json_integer")]
    pub payment_method_id: Option<i64>,
    pub card: Option<CardIn>,
    pub bank_account: Option<BankAccountIn>,
}

#[derive(Debug, serde::Deserialize, ToSchema)]
pub struct CardIn {
    /// A test card: ending 1111/4242 approve, 0002 INSUFFICIENT_FUNDS, 0069 EXPIRED_CARD.
    pub number: Option<String>,
    /// MM/YY.
    pub expiry: Option<String>,
    pub cvv: Option<String>,
}

#[derive(Debug, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BankAccountIn {
    pub bank_code: Option<String>,
    /// CHECKING, VISTA or SAVINGS.
    pub account_type: Option<String>,
    /// Ending 0000 approves at settlement, 9999 is rejected at validation.
    pub account_number: Option<String>,
    pub holder_rut: Option<String>,
}

fn parse_instrument(
    body: &ActivateRequest,
    today: chrono::NaiveDate,
) -> Result<mandato_core::domain::instrument::InstrumentInput, Error> {
    use mandato_core::domain::instrument::InstrumentInput;
    use mandato_core::domain::state::PaymentMethod;
    let method = match body.payment_method_id {
        None => {
            return Err(Error::validation(
                "paymentMethodId",
                "REQUIRED",
                "is required",
            ));
        }
        Some(id) => PaymentMethod::from_id(id).ok_or_else(|| {
            Error::validation(
                "paymentMethodId",
                "INVALID_VALUE",
                "one of 3, 4, 11, 5, 6, 14",
            )
        })?,
    };
    let problems =
        |prefix: &str, problems: Vec<mandato_core::domain::instrument::InstrumentProblem>| {
            Error::Validation(
                problems
                    .into_iter()
                    .map(|p| {
                        mandato_core::error::FieldError::new(
                            format!("{prefix}.{}", p.field),
                            p.code,
                            p.message,
                        )
                    })
                    .collect(),
            )
        };
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    if method.is_card() {
        let card = body
            .card
            .as_ref()
            .ok_or_else(|| Error::validation("card", "REQUIRED", "a card method needs card"))?;
        use chrono::Datelike;
        InstrumentInput::card(
            method,
            &text(&card.number),
            &text(&card.expiry),
            &text(&card.cvv),
            (today.year(), today.month()),
        )
        .map_err(|p| problems("card", p))
    } else {
        let bank = body.bank_account.as_ref().ok_or_else(|| {
            Error::validation(
                "bankAccount",
                "REQUIRED",
                "a bank debit method needs bankAccount",
            )
        })?;
        InstrumentInput::bank(
            method,
            &text(&bank.bank_code),
            &text(&bank.account_type),
            &text(&bank.account_number),
            &text(&bank.holder_rut),
        )
        .map_err(|p| problems("bankAccount", p))
    }
}

/// Activate a PENDING mandate with a test instrument, without the Magic Link page.
#[utoipa::path(post, path = "/sandbox/mandates/{internalId}/activate", tag = "sandbox",
    params(super::common::CommonHeaders, ("internalId" = String, Path, description = "man_...")),
    request_body = ActivateRequest,
    responses(
        (status = 200, description = "SANDBOX_ACTIVATE_OK", body = Envelope<super::wire::MandatePayload>),
        (status = 400, description = "Invalid instrument, method not allowed, MANDATE_STATE_CONFLICT, MAGIC_LINK_EXPIRED", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such mandate in this commerce, or production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn activate(
    State(state): State<AppState>,
    authed: Authed,
    Path(internal_id): Path<String>,
    Body(body): Body<ActivateRequest>,
) -> ApiResult<Envelope<super::wire::MandatePayload>> {
    use mandato_engine::operations::activation;
    sandbox_only(&state)?;
    let today = state.today();
    let instrument = parse_instrument(&body, today)?;
    let reference = mandato_engine::operations::MandateRef::Internal(internal_id.clone());
    let loaded = state
        .read(&authed.commerce, |c, ctx| {
            let row = mandato_engine::operations::mandates::find_row(c, ctx, &reference)?;
            super::link::load_mandate(c, row)
        })
        .map_err(|e| e.located("path.internalId", &internal_id))?;
    let now = state.clock.now();
    // Links expire by business time, which the sandbox clock moves.
    let business_now = state.calendar.now(now);
    activation::check_activatable(&loaded.mandate, instrument.method(), business_now)?;
    let processor = state
        .processor_for(loaded.commerce.id, instrument.method())?
        .ok_or_else(|| {
            Error::refused_at(
                mandato_engine::rails::ACQUIRER_NOT_CONFIGURED,
                "paymentMethodId",
                "no acquirer serves this method's rail",
            )
        })?;
    let enrolled = processor
        .enroll(&instrument)
        .map_err(|e| Error::validation("paymentMethodId", "INSTRUMENT_REFUSED", e.to_string()))?;
    // The same terms and document as the Magic Link page, so integrators see real payloads.
    let acceptance = activation::Acceptance {
        ip: None,
        user_agent: Some("sandbox activate".into()),
        terms: loaded.terms(instrument.method()),
    };
    let document =
        super::link::epac_document(&loaded, &instrument.facts(), &enrolled, &acceptance, now);
    let view = state
        .write(authed.commerce, move |tx, ctx| {
            activation::activate(
                tx,
                ctx.commerce,
                &loaded.mandate,
                &activation::Enrolment {
                    instrument: &instrument.facts(),
                    enrolled: &enrolled,
                    acceptance: &acceptance,
                    document: document.as_ref(),
                },
                ctx.now,
            )
        })
        .await?;
    Ok(Envelope::ok(
        "SANDBOX_ACTIVATE_OK",
        "mandate activated",
        super::wire::MandatePayload::new(view, &state.public_base_url),
    ))
}

#[derive(Debug, serde::Deserialize, ToSchema)]
pub struct OutcomeRequest {
    /// PAID or REJECTED (decide the next charge attempt), or REVERSED (now, on a PAID one).
    pub result: Option<String>,
    /// With REJECTED: INSUFFICIENT_FUNDS (soft), CARD_DECLINED, EXPIRED_CARD, ACCOUNT_CLOSED,
    /// BANK_VALIDATION_FAILED.
    pub code: Option<String>,
}

/// Decide an installment's next charge outcome, or reverse a paid one now.
#[utoipa::path(post, path = "/sandbox/installments/{internalId}/outcome", tag = "sandbox",
    params(super::common::CommonHeaders, ("internalId" = String, Path, description = "ins_...")),
    request_body = OutcomeRequest,
    responses(
        (status = 200, description = "SANDBOX_OUTCOME_OK", body = Envelope<super::wire::InstallmentDto>),
        (status = 400, description = "Invalid field, INSTALLMENT_STATE_CONFLICT", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such installment in this commerce, or production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn outcome(
    State(state): State<AppState>,
    authed: Authed,
    Path(internal_id): Path<String>,
    Body(body): Body<OutcomeRequest>,
) -> ApiResult<Envelope<super::wire::InstallmentDto>> {
    use mandato_core::domain::state::RejectionCode;
    sandbox_only(&state)?;
    let result = body.result.clone().unwrap_or_default();
    let outcome = match (result.as_str(), body.code.as_deref()) {
        ("REJECTED", None) => return Err(Error::validation("code", "REQUIRED", "REJECTED needs a rejection code").into()),
        ("REJECTED", Some(c)) => ForcedOutcome::Rejected(RejectionCode::parse(c).ok_or_else(|| {
            Error::validation("code", "INVALID_VALUE", "INSUFFICIENT_FUNDS, CARD_DECLINED, EXPIRED_CARD, ACCOUNT_CLOSED or BANK_VALIDATION_FAILED")
        })?),
        ("PAID", _) => ForcedOutcome::Paid,
        ("REVERSED", _) => ForcedOutcome::Reversed,
        _ => return Err(Error::validation("result", "INVALID_VALUE", "PAID, REJECTED or REVERSED").into()),
    };
    let id = internal_id.clone();
    let (installment, dates) = state
        .write(authed.commerce, move |tx, ctx| {
            operation::force_outcome(tx, ctx, &id, outcome)
        })
        .await
        .map_err(|e| e.located("path.internalId", &internal_id))?;
    Ok(Envelope::ok(
        "SANDBOX_OUTCOME_OK",
        "outcome set",
        super::wire::InstallmentDto::new(&installment, &dates),
    ))
}
