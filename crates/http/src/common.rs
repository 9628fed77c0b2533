//! The eight common headers of every `/api/v1` operation (CONTRACT 2): validated together, then
//! the API key, the commerce and the correlationId; every request is audited afterwards (one
//! row each once the API key is accepted; before that, only counted per minute and reason).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, OriginalUri, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::Value;
use utoipa::IntoParams;

use super::AppState;
use super::error::{ApiError, CORRELATION_ID};
use super::guard::Deadline;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::records::{
    AuditEntry, AuditPlace, CORRELATION_CLAIM, Commerce, CorrelationClaim, DeferredClaim, Refusal,
    RequestKind, Reservation, correlation_reused,
};

/// The common headers, as documented for every merchant operation.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(non_snake_case, dead_code)]
pub struct CommonHeaders {
    /// Country of origin of the request (`CL`).
    country: String,
    /// The commerce code; after login it must equal the JWT's `sub`.
    commerce: String,
    /// Integration channel agreed with the operator; at most 64 characters.
    channel: String,
    /// RFC 3339 date-time with offset, within 5 minutes of the server's clock.
    requestDateTime: String,
    /// A UUID, never reused by the commerce within 7 days.
    correlationId: String,
    /// Functional process: `HYBRID`, `API` or `BATCH`.
    processId: String,
    /// Sales executive or commercial integration; at most 64 characters.
    salesExecutiveId: String,
    /// The environment's API key.
    #[param(rename = "x-api-key")]
    x_api_key: String,
}

/// What the common-headers layer established about a request, for the handlers.
#[derive(Clone, Debug)]
pub struct MerchantRequest {
    pub commerce: Arc<Commerce>,
    pub correlation_id: String,
}

const AUDITED_HEADERS: [&str; 7] = [
    "country",
    "commerce",
    "channel",
    "requestDateTime",
    "correlationId",
    "processId",
    "salesExecutiveId",
];

struct Validated {
    commerce: String,
    channel: String,
    correlation_id: String,
    api_key: String,
}

pub async fn layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let deadline = request.extensions().get::<Deadline>().copied();
    // Before any work: a request runs only when its audit row will have room (CONTRACT 2).
    let audit_place = state.audit.place().await;
    // A read changes nothing a replay could repeat, and a creation nothing before its first
    // transaction: their claims may wait for it (`Reservation::Deferred`).
    let kind = request_kind(request.method(), request.uri().path());
    let method = request.method().to_string();
    // Inside the nested router the URI lost its `/api/v1` prefix; audit the full path.
    let path = request.extensions().get::<OriginalUri>().map_or_else(
        || request.uri().path().to_string(),
        |o| o.path().to_string(),
    );
    let peer = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string());
    let headers = request.headers();
    let correlation = header(headers, "correlationId")
        .filter(|c| uuid::Uuid::parse_str(c).is_ok())
        .map(str::to_string);
    let mut audit = AuditEntry {
        at: mandato_core::clock::timestamp(state.clock.now()),
        method,
        path,
        status: 0,
        duration_ms: 0.0,
        commerce: header(headers, "commerce").map(str::to_string),
        correlation_id: correlation.clone(),
        api_key_prefix: None,
        headers: audited_headers(headers),
        peer,
    };
    // Admission reads the headers in place; the request moves on only afterwards.
    let admitted = admit(&state, headers, &mut audit, kind);
    let refusal = admitted
        .as_ref()
        .err()
        .and_then(|e| unauthenticated_refusal(e, &audit));
    let seen_at = audit.at.clone();
    // From here the row is queued however the request ends; one refused before its key was
    // accepted has none.
    let row = refusal.is_none().then(|| UnansweredRow {
        state: &state,
        row: Some((audit, audit_place)),
        started,
        deadline,
    });
    let response = CORRELATION_ID
        .scope(correlation.clone(), async {
            match admitted {
                Ok((merchant, deferred)) => {
                    let claim = CorrelationClaim {
                        commerce_id: merchant.commerce.id,
                        correlation_id: merchant.correlation_id.clone(),
                        seen_at,
                        deferred: deferred.clone(),
                    };
                    let mut request = request;
                    request.extensions_mut().insert(merchant);
                    let response = CORRELATION_CLAIM.scope(claim, next.run(request)).await;
                    match deferred {
                        Some(deferred) => settled(&state, &deferred, response),
                        None => response,
                    }
                }
                Err(e) => ApiError(e).into_response(),
            }
        })
        .await;
    let mut response = response;
    if let Some(id) = correlation.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert("correlationId", id);
    }
    if let Some(reason) = refusal {
        state.audit.refused(state.clock.now(), reason);
        return response;
    }
    if let Some(row) = row {
        row.answered(response.status().as_u16());
    }
    response
}

/// The status a request's row keeps when the client closed its connection before the answer
/// (nginx's, as log readers know it): no answer was sent.
const CLIENT_CLOSED_REQUEST: u16 = 499;

/// An admitted request's audit row until its answer is known. A request can be dropped before
/// that: its time limit cut it (`guard::request_time_limit`, outside this layer) or its client
/// closed the connection. Its row is queued then all the same (CONTRACT 2: every request), as
/// 408 past its deadline, else `CLIENT_CLOSED_REQUEST`; a write it had queued may still have
/// committed.
struct UnansweredRow<'a> {
    state: &'a AppState,
    row: Option<(AuditEntry, AuditPlace)>,
    started: Instant,
    deadline: Option<Deadline>,
}

impl UnansweredRow<'_> {
    fn answered(mut self, status: u16) {
        self.queue(status);
    }

    fn queue(&mut self, status: u16) {
        if let Some((mut audit, place)) = self.row.take() {
            audit.status = status;
            audit.duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
            self.state.audit.log(audit, place);
        }
    }
}

impl Drop for UnansweredRow<'_> {
    fn drop(&mut self) {
        let cut = self.deadline.is_some_and(|d| d.passed());
        let status = if cut {
            StatusCode::REQUEST_TIMEOUT.as_u16()
        } else {
            CLIENT_CLOSED_REQUEST
        };
        self.queue(status);
    }
}

/// A request refused before its API key was accepted is only counted (CONTRACT 2 keeps a row
/// per request, but a flood of junk would then fill the disk); once a key is accepted every
/// request, refused or not, has its row.
fn unauthenticated_refusal(error: &Error, audit: &AuditEntry) -> Option<Refusal> {
    if audit.api_key_prefix.is_some() {
        return None;
    }
    match error {
        Error::Validation(_) => Some(Refusal::InvalidHeaders),
        Error::Forbidden {
            name: "INVALID_API_KEY",
            ..
        } => Some(Refusal::InvalidApiKey),
        _ => None,
    }
}

/// A request's answer once its deferred claim is settled: the handler's, or the
/// refusal of a correlationId that was used after all.
fn settled(state: &AppState, claim: &DeferredClaim, response: Response) -> Response {
    match state.settle_claim(claim) {
        Ok(()) => response,
        Err(e) => ApiError(e).into_response(),
    }
}

/// What a merchant request may do before its first transaction (`RequestKind`): the paths
/// are those inside the API's router. The creations act on nothing but the database: their
/// checks read the request, and the calendar or the replay records through the store.
fn request_kind(method: &axum::http::Method, path: &str) -> RequestKind {
    use axum::http::Method;
    match (method, path) {
        (&Method::GET | &Method::HEAD, _) => RequestKind::Read,
        (&Method::POST, "/user" | "/mandate" | "/installments") => RequestKind::DatabaseWrite,
        _ => RequestKind::Write,
    }
}

/// Validates the headers, then the credentials, then the correlationId; the claim of a read
/// or a creation may come back deferred.
fn admit(
    state: &AppState,
    headers: &HeaderMap,
    audit: &mut AuditEntry,
    kind: RequestKind,
) -> Result<(MerchantRequest, Option<Arc<DeferredClaim>>), Error> {
    let valid = validate(state, headers)?;
    let key_hash = mandato_engine::auth::api_key::hash_key(&valid.api_key);
    let (api_key, commerce) = state.credentials(&key_hash, &valid.commerce)?;
    let Some(api_key) = api_key else {
        return Err(Error::forbidden(
            "INVALID_API_KEY",
            "the API key is unknown or revoked",
        ));
    };
    audit.api_key_prefix = Some(api_key.prefix.clone());
    let Some(commerce) = commerce else {
        return Err(Error::forbidden(
            "UNKNOWN_COMMERCE",
            "the commerce is not registered",
        ));
    };
    if !api_key.allows(commerce.id) {
        return Err(Error::forbidden(
            "API_KEY_NOT_ALLOWED",
            "the API key is not valid for this commerce",
        ));
    }
    state.audit.key_used(api_key.id, state.clock.now());
    if let Some(channels) = &commerce.channels
        && !channels.contains(&valid.channel)
    {
        return Err(Error::validation(
            "header.channel",
            "CHANNEL_NOT_ALLOWED",
            "the channel is not agreed for this commerce",
        ));
    }
    // A UUID names the same value in either case: the claim is on its lower-case form, so an
    // upper-cased copy of a used id is a replay too.
    let deferred = match state.reserve_correlation(
        commerce.id,
        &valid.correlation_id.to_ascii_lowercase(),
        kind,
    )? {
        Reservation::Fresh => None,
        Reservation::Deferred(claim) => Some(claim),
        Reservation::Replayed => return Err(correlation_reused()),
    };
    Ok((
        MerchantRequest {
            commerce,
            correlation_id: valid.correlation_id,
        },
        deferred,
    ))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Checks all eight headers and reports every missing or malformed one.
fn validate(state: &AppState, headers: &HeaderMap) -> Result<Validated, Error> {
    let mut errors = FieldErrors::new();
    let text = |name: &str, max: usize, errors: &mut FieldErrors| -> Option<String> {
        let field = format!("header.{name}");
        match headers.get(name) {
            None => {
                errors.missing(field);
                None
            }
            Some(raw) => match raw.to_str().map(str::trim) {
                Ok("") => {
                    errors.push(field, "REQUIRED", "must not be empty");
                    None
                }
                Ok(v) if v.chars().count() > max => {
                    errors.push(field, "TOO_LONG", format!("at most {max} characters"));
                    None
                }
                Ok(v) => Some(v.to_string()),
                Err(_) => {
                    errors.push(field, "INVALID_FORMAT", "must be printable ASCII");
                    None
                }
            },
        }
    };
    let country = text("country", 8, &mut errors);
    let commerce = text("commerce", 64, &mut errors);
    let channel = text("channel", 64, &mut errors);
    let request_time = text("requestDateTime", 64, &mut errors);
    let correlation = text("correlationId", 64, &mut errors);
    let process = text("processId", 32, &mut errors);
    let _sales_executive = text("salesExecutiveId", 64, &mut errors);
    let api_key = text("x-api-key", 256, &mut errors);
    let config = &state.config;
    if let Some(c) = &country
        && !config.countries.contains(c)
    {
        errors.push(
            "header.country",
            "INVALID_VALUE",
            format!("must be one of {}", config.countries.join(", ")),
        );
    }
    if let Some(p) = &process
        && !config.process_ids.contains(p)
    {
        errors.push(
            "header.processId",
            "INVALID_VALUE",
            format!("must be one of {}", config.process_ids.join(", ")),
        );
    }
    if let Some(t) = &request_time {
        check_request_time(
            t,
            state.clock.now(),
            config.max_clock_skew_secs,
            &mut errors,
        );
    }
    if let Some(c) = &correlation
        && uuid::Uuid::parse_str(c).is_err()
    {
        errors.push("header.correlationId", "INVALID_FORMAT", "must be a UUID");
    }
    errors.into_result()?;
    Ok(Validated {
        commerce: commerce.expect("checked above"),
        channel: channel.expect("checked above"),
        correlation_id: correlation.expect("checked above"),
        api_key: api_key.expect("checked above"),
    })
}

fn check_request_time(
    value: &str,
    now: DateTime<Utc>,
    max_skew_secs: i64,
    errors: &mut FieldErrors,
) {
    match DateTime::parse_from_rfc3339(value) {
        Err(_) => errors.push(
            "header.requestDateTime",
            "INVALID_FORMAT",
            "must be an RFC 3339 date-time with offset, e.g. 2026-11-20T10:15:00-03:00",
        ),
        Ok(at) => {
            let skew = (at.with_timezone(&Utc) - now).num_seconds().abs();
            if skew > max_skew_secs {
                errors.push(
                    "header.requestDateTime",
                    "CLOCK_SKEW",
                    format!("must be within {max_skew_secs} seconds of the server's clock"),
                );
            }
        }
    }
}

/// The common headers worth keeping in the audit log, as the JSON object it stores; the API
/// key and the token never are.
fn audited_headers(headers: &HeaderMap) -> String {
    let mut json = String::with_capacity(320);
    json.push('{');
    for name in AUDITED_HEADERS {
        if let Some(v) = header(headers, name) {
            if json.len() > 1 {
                json.push(',');
            }
            // The names are plain ASCII; the values are escaped by serde_json.
            json.push('"');
            json.push_str(name);
            json.push_str("\":");
            let value: String = v.chars().take(128).collect();
            json.push_str(&Value::String(value).to_string());
        }
    }
    json.push('}');
    json
}
