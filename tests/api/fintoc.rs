//! A Fintoc stand-in: the Direct Debit API (Chile's PAC bank-debit rail: subscription intents,
//! subscriptions, charges, signed webhook events) and a stand-in of its subscription widget, on
//! a loopback port, for the tests of the bank-debit rail. Every shape here is Fintoc's
//! documented wire (the sources below), and every choice the sources leave open is marked
//! "UNDOCUMENTED" next to the code that makes it, with the conservative reading taken.
//!
//! Sources (docs.fintoc.com pages, and the SDKs at the commits named):
//! - Base URL, `/v1` paths and auth: `api/fintoc-api/authentication` ("Authorization:
//!   YOUR_SECRET_KEY", no `Bearer`), `docs/home/dashboard/guides-api-keys` and
//!   `v2023-11-15/guides/resources/test-mode.md` (`sk_test_`/`pk_test_` keys, `mode`),
//!   `fintoc-com/fintoc-python@55f141e` `fintoc/{client,core,constants}.py` and
//!   `fintoc-com/fintoc-node@d3f7485` `src/lib/client.ts` (the raw key as header).
//! - Subscription intents: `api/direct-debit-legacy/subscriptions-intents/
//!   subscription-intents-{create,get}.md`, `reference/subscriptions-intents`, the object of
//!   `v2023-11-15/reference/direct-debit-and-subscriptions/subscription-intents/
//!   subscription-intent-object` (+ `customer_email` from its `es/` twin), the widget token
//!   of `docs/integration-flow-for-direct-debit` (`si_<id>_sec_<secret>`, 10 minutes).
//! - Subscriptions: `reference/direct-debit-subscription-object` (the object, with
//!   `account.institution`), `api/direct-debit-legacy/direct-debit-subscriptions/
//!   direct-debit-subscription-object` (balance only at creation, otherwise null),
//!   `v2023-11-15/api/direct-debit-and-subscriptions/subscriptions/subscription-object`
//!   (`pending`, `active`, `canceled`; "Only active subscriptions can be charged"),
//!   `api/direct-debit-legacy/direct-debit-subscriptions/direct-debit-subscriptions-list.md`.
//! - Charges: `reference/direct-debit-legacy/charges/charges-create.md` (body, "starts with
//!   status pending"), `reference-link/charge-object` (the object),
//!   `api/direct-debit-legacy/charges/charges-get` (statuses, `failure_code` values incl.
//!   `bank_account_unavailable`), `api/direct-debit-legacy/charges/charges-list` (filters,
//!   `page`, `per_page` 30/300, most recent first), `api/fintoc-api/metadata` (limits).
//! - Idempotency: `api/fintoc-api/idempotent-requests` (255 characters; status and body saved
//!   whether the request succeeded or failed; not saved when authentication fails; an error
//!   when the parameters differ). Pagination: `api/fintoc-api/pagination.md` (bare array,
//!   RFC 8288 `Link` with `first`/`prev`/`next`/`last`), PY `fintoc/paginator.py` (reads
//!   `Link` on every page and splits it at `,`).
//! - Errors: `api/fintoc-api/errors/errors-object.md` (the `{"error": {...}}` body),
//!   `v2023-11-15/api/fintoc-api/errors/errors-status-codes` (400/401/404/429),
//!   PY `fintoc/errors.py` (`type` values), `fintoc-com/fintoc-ruby@b4c6244`
//!   `lib/fintoc/errors.rb` (the `code` values: `missing_parameter`, `invalid_amount`,
//!   `invalid_currency`, `invalid_api_key`, `missing_resource`, `invalid_url`, ...).
//! - Widget: `docs/widget-web-integration` (`https://js.fintoc.com/v1/`, `Fintoc.create`,
//!   `open`/`close`/`destroy`), `docs/integration-flow-for-direct-debit` (`holderType`,
//!   `widgetToken`, `product: 'subscriptions'`, `publicKey`), sandbox credentials of
//!   `docs/direct-debit-test-your-integration` (RUTs 41614850-3, 40427672-7, 41579263-8,
//!   password `jonsnow`); `public_error` values of the intent object.
//! - Webhooks: `docs/webhooks-validating` and PY `fintoc/webhook.py` (`Fintoc-Signature:
//!   t=<unix>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">`), the event envelope of PY
//!   `tests/test_webhook.py` (whose recorded event and signature are the test vector below)
//!   and `api/main-resources/events-reference/events-object` (`data` is the resource itself).
//!
//! Simplifications, all on the browser side: the real widget is Fintoc's JavaScript in an
//! iframe that calls the merchant page's `onSuccess`/`onExit`. The stand-in's script
//! (`GET /widget/v1/`, standing for `https://js.fintoc.com/v1/`) defines the same
//! `window.Fintoc.create(options)`, but `open()` navigates the whole page to the stand-in's
//! `GET /widget/subscribe`, which on submit sends the browser back (303) to the page that
//! opened it (the `return` query parameter). The return carries nothing: as in production the
//! merchant learns the outcome by retrieving the intent (or from its webhook). The bank's
//! validation (`pending` → `active`), the collection of a charge and the bank's cancellation
//! happen only when the test says so ([`Standin::activate`], [`Standin::settle_charge`],
//! [`Standin::cancel`]); the real test mode settles charges "asynchronously after creation"
//! with rules its public pages do not give.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Form, Path, Query, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use serde_json::{Map, Value, json};
use sha2::Sha256;

/// A made-up secret key of the test mode (`sk_test_` + 32 characters, like the docs' example).
pub const SECRET: &str = "sk_test_Mnd4t0St4nd1nS3cr3tK3y9c8dQ";
/// The matching made-up public key, which the widget takes (`pk_test_`).
pub const PUBLIC_KEY: &str = "pk_test_Mnd4t0St4nd1nPubl1cK3yX2bR7";
/// The sandbox's documented usernames (RUTs) for a subscription in Chile.
pub const SANDBOX_RUTS: [&str; 3] = ["41614850-3", "40427672-7", "41579263-8"];
/// The password of every sandbox username.
pub const SANDBOX_PASSWORD: &str = "jonsnow";

/// "The token is temporary and will expire 10 minutes after its creation."
const WIDGET_TOKEN_TTL: Duration = Duration::from_secs(600);
/// The account holder of every sandbox subscription (the object example's `holder_name`).
const HOLDER_NAME: &str = "Jon Snow";
/// A status code and a JSON body, as answered and as saved for an idempotency key.
type Answer = (StatusCode, Value);

/// Why a charge failed, as `failure_code` reports it (`api/direct-debit-legacy/charges/
/// charges-get`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureCode {
    InsufficientFunds,
    SubscriptionInactive,
    ChargeAmountLimitExceeded,
    BankAccountUnavailable,
    Other,
}

impl FailureCode {
    pub const ALL: [FailureCode; 5] = [
        FailureCode::InsufficientFunds,
        FailureCode::SubscriptionInactive,
        FailureCode::ChargeAmountLimitExceeded,
        FailureCode::BankAccountUnavailable,
        FailureCode::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::InsufficientFunds => "insufficient_funds",
            FailureCode::SubscriptionInactive => "subscription_inactive",
            FailureCode::ChargeAmountLimitExceeded => "charge_amount_limit_exceeded",
            FailureCode::BankAccountUnavailable => "bank_account_unavailable",
            FailureCode::Other => "other",
        }
    }
}

/// Where the bank's collection takes a charge ([`Standin::settle_charge`]).
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    /// `in_progress`: listed by the charges-list filter; not terminal.
    InProgress,
    Succeeded,
    Failed(FailureCode),
    /// The current reference's third terminal status.
    Canceled,
}

/// One request that reached `/v1` (whatever its answer), as the client sent it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    /// Path and query.
    pub uri: String,
    pub headers: HeaderMap,
    pub body: String,
}

struct Intent {
    id: String,
    widget_token: String,
    issued: Instant,
    business_profile: Value,
    customer_email: Value,
    reference_id: Option<String>,
    /// `created`, `in_progress`, `succeeded`, `failed` or `rejected`.
    status: &'static str,
    public_error: Option<&'static str>,
    subscription: Option<String>,
    created_at: DateTime<Utc>,
}

struct Subscription {
    id: String,
    account_id: String,
    /// The RUT without dots or dash (the object example's `"holder_id": "111111111"`).
    holder_id: String,
    number: String,
    reference_id: String,
    /// `pending`, `active` or `canceled`.
    status: &'static str,
    created_at: DateTime<Utc>,
}

struct Charge {
    id: String,
    subscription_id: String,
    amount: i64,
    /// `pending`, `in_progress`, `succeeded`, `failed` or `canceled`.
    status: &'static str,
    failure_code: Option<FailureCode>,
    metadata: Value,
    business_profile: Value,
    created_at: DateTime<Utc>,
}

/// What an idempotency key remembers: the request it came with, and its answer once there is
/// one (`None` while the first request is still being processed).
struct Saved {
    fingerprint: Value,
    answer: Option<Answer>,
}

#[derive(Default)]
struct Ledger {
    /// In creation order (the lists answer the most recent first).
    intents: Vec<Intent>,
    subscriptions: Vec<Subscription>,
    charges: Vec<Charge>,
    idempotency: HashMap<String, Saved>,
    /// Normalized RUT → account number, set by the test.
    account_numbers: HashMap<String, String>,
    /// Arrival times of the last second's requests (the rate limit).
    window: VecDeque<Instant>,
}

#[derive(Default)]
pub struct Standin {
    /// How many POSTs carried each `Idempotency-Key`, counted on arrival (replays, refusals
    /// and requests that failed authentication included).
    pub posts: Mutex<HashMap<String, usize>>,
    /// How many charges were really created (a replayed answer creates none).
    pub charges_created: AtomicUsize,
    /// Every request to `/v1`, in arrival order.
    pub requests: Mutex<Vec<Recorded>>,
    /// How long `POST /v1/charges` takes before Fintoc processes it. The processing runs in a
    /// task of its own, so a client that gives up does not cancel the charge.
    pub latency: Mutex<Duration>,
    in_flight: AtomicUsize,
    /// The most charge creations that were in flight at once.
    pub max_in_flight: AtomicUsize,
    /// Requests per second before `429` ("You exceeded the limit of five requests per
    /// second"); `None` (the default) lets everything through, `Some(5)` is Fintoc's limit.
    pub rate_limit: Mutex<Option<usize>>,
    ledger: Mutex<Ledger>,
    base: Mutex<String>,
}

/// `len` random letters and digits, the alphabet of Fintoc's ids (`si_m7N9rAWJS9dWDKEe`).
fn random(len: usize) -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// The objects' timestamps (`"created_at": "2021-11-11T02:29:16Z"`).
fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A RUT as typed (`41.614.850-3`, `41614850-3`, `416148503`) → `416148503`.
fn normalize_rut(rut: &str) -> String {
    rut.chars()
        .filter(|c| !matches!(c, '.' | '-' | ' '))
        .collect::<String>()
        .to_uppercase()
}

fn error(status: StatusCode, kind: &str, code: &str, message: &str, param: Option<&str>) -> Answer {
    // The example's `doc_url` is `https://fintoc.com/docs#invalid-request-error`; the same
    // anchor pattern for the other types is an UNDOCUMENTED guess.
    let anchor = kind.replace('_', "-");
    (
        status,
        json!({ "error": {
            "code": code,
            "doc_url": format!("https://fintoc.com/docs#{anchor}"),
            "message": message,
            "param": param,
            "type": kind,
        }}),
    )
}

fn invalid(code: &str, message: &str, param: Option<&str>) -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        code,
        message,
        param,
    )
}

/// 404 `missing_resource` (RB `errors.rb` files it under 404). Its `type` is UNDOCUMENTED;
/// `invalid_request_error` is the type of the docs' only example.
fn missing(what: &str, id: &str) -> Answer {
    error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "missing_resource",
        &format!("No such {what}: {id}"),
        Some("id"),
    )
}

/// JSON as the recorded cassettes show it: `Content-Type: application/json; charset=utf-8`.
fn reply((status, body): Answer) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    // Exactly the secret key. `Bearer <key>` (what fintoc-ruby sends since 2025-09) is
    // refused: whether Fintoc accepts it is UNDOCUMENTED, and the docs, PY and NODE send the
    // raw key.
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(SECRET)
}

/// In front of every `/v1` route: records the request, counts POSTs per idempotency key,
/// refuses a wrong key (401, before the idempotency layer: "Fintoc does not save an
/// idempotent result when authentication fails"), then applies the optional rate limit.
async fn gate(State(standin): State<Arc<Standin>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    standin.requests.lock().unwrap().push(Recorded {
        method: parts.method.clone(),
        uri: parts.uri.to_string(),
        headers: parts.headers.clone(),
        body: String::from_utf8_lossy(&bytes).into_owned(),
    });
    if parts.method == Method::POST
        && let Some(key) = idempotency_key(&parts.headers)
    {
        *standin.posts.lock().unwrap().entry(key).or_default() += 1;
    }
    if !authorized(&parts.headers) {
        return reply(error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
            "Invalid API Key provided",
            None,
        ));
    }
    if let Some(limit) = *standin.rate_limit.lock().unwrap() {
        let mut ledger = standin.ledger.lock().unwrap();
        let now = Instant::now();
        while ledger
            .window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            ledger.window.pop_front();
        }
        if ledger.window.len() >= limit {
            // The status and its meaning are documented; the code comes from RB's
            // `RateLimitExceededError`, the type is UNDOCUMENTED. A 429 is not saved for the
            // idempotency key (UNDOCUMENTED: a rate limit sits in front of the request's
            // processing), so a retry with the same key goes through.
            return reply(error(
                StatusCode::TOO_MANY_REQUESTS,
                "invalid_request_error",
                "rate_limit_exceeded",
                "You exceeded the limit of five requests per second.",
                None,
            ));
        }
        ledger.window.push_back(now);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn idempotency_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get("idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// What the idempotency layer compares: the endpoint and the parsed parameters (a JSON body
/// compares as an object, so key order and spacing do not matter; a body that is not JSON
/// compares as its text).
fn fingerprint(path: &str, body: &Bytes) -> Value {
    let params = serde_json::from_slice::<Value>(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    json!({ "path": path, "params": params })
}

/// Runs `work` under Fintoc's idempotency rules (`api/fintoc-api/idempotent-requests`): the
/// first request's status and body are saved, errors included, and a later request with the
/// same key and the same parameters answers them again without running anything; different
/// parameters are an error. `work` runs in a task of its own: it completes (and its answer is
/// saved) even if the client goes away.
async fn idempotent<F>(
    standin: &Arc<Standin>,
    key: Option<String>,
    fingerprint: Value,
    work: F,
) -> Answer
where
    F: Future<Output = Answer> + Send + 'static,
{
    let Some(key) = key else {
        // The header is optional in the docs (the SDKs always send one).
        return tokio::spawn(work).await.unwrap_or_else(|_| crashed());
    };
    if key.is_empty() || key.chars().count() > 255 {
        // "Idempotency keys can contain up to 255 characters." The answer to a longer (or
        // empty) key is UNDOCUMENTED; the stand-in refuses it, with RB's
        // `invalid_string_size`.
        return invalid(
            "invalid_string_size",
            "Idempotency keys can contain up to 255 characters",
            Some("Idempotency-Key"),
        );
    }
    {
        let mut ledger = standin.ledger.lock().unwrap();
        match ledger.idempotency.get(&key) {
            // The status and code of a parameter mismatch are UNDOCUMENTED: a 400 with RB's
            // generic `invalid_params`.
            Some(saved) if saved.fingerprint != fingerprint => {
                return invalid(
                    "invalid_params",
                    "Keys for idempotent requests can only be used with the same parameters \
                     they were first used with",
                    Some("Idempotency-Key"),
                );
            }
            Some(Saved {
                answer: Some(answer),
                ..
            }) => return answer.clone(),
            // A second request while the first is still processed: UNDOCUMENTED. The stand-in
            // refuses it with a 409 and saves nothing for it, so the client must ask again
            // later (and then gets the first request's answer).
            Some(_) => {
                return error(
                    StatusCode::CONFLICT,
                    "invalid_request_error",
                    "idempotency_key_in_use",
                    "A request with this idempotency key is still being processed",
                    Some("Idempotency-Key"),
                );
            }
            None => {
                ledger.idempotency.insert(
                    key.clone(),
                    Saved {
                        fingerprint,
                        answer: None,
                    },
                );
            }
        }
    }
    let standin = Arc::clone(standin);
    tokio::spawn(async move {
        let answer = work.await;
        if let Some(saved) = standin.ledger.lock().unwrap().idempotency.get_mut(&key) {
            saved.answer = Some(answer.clone());
        }
        answer
    })
    .await
    .unwrap_or_else(|_| crashed())
}

fn crashed() -> Answer {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "api_error",
        "internal_server_error",
        "stand-in task failed",
        None,
    )
}

/// The body as a JSON object; no body at all is an empty one ("The original flow example POSTs
/// with no body").
fn object_body(body: &Bytes) -> Result<Map<String, Value>, Answer> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        // RB's `invalid_json`.
        _ => Err(invalid(
            "invalid_json",
            "The request body must be a JSON object",
            None,
        )),
    }
}

/// Unknown parameters are refused. UNDOCUMENTED (a server may ignore them); refusing catches
/// a misspelt field (`business_profile_name`, `subscription`) that would otherwise be dropped.
fn only_known(body: &Map<String, Value>, known: &[&str]) -> Result<(), Answer> {
    match body.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(invalid(
            "invalid_params",
            &format!("Unknown parameter: {unknown}"),
            Some(unknown),
        )),
        None => Ok(()),
    }
}

/// `null` or an object whose values are strings (`business_profile`: `{name}` on intents,
/// `{name, tax_id, category}` on charges).
fn profile(body: &Map<String, Value>, allowed: &[&str]) -> Result<Value, Answer> {
    let bad = || {
        invalid(
            "invalid_hash",
            "business_profile must be an object of strings",
            Some("business_profile"),
        )
    };
    match body.get("business_profile") {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::Object(map)) => {
            if map
                .iter()
                .all(|(k, v)| allowed.contains(&k.as_str()) && v.is_string())
            {
                Ok(Value::Object(map.clone()))
            } else {
                Err(bad())
            }
        }
        Some(_) => Err(bad()),
    }
}

/// `metadata` (`api/fintoc-api/metadata`): an object of up to 50 keys of up to 40 characters,
/// whose values are strings (up to 500 characters), booleans or numbers. The current reference
/// types it as an object; the v2023 example's string `"{}"` is refused. The codes are
/// UNDOCUMENTED (RB's `invalid_hash` and `invalid_params`).
fn metadata(body: &Map<String, Value>) -> Result<Value, Answer> {
    let map = match body.get("metadata") {
        None | Some(Value::Null) => return Ok(json!({})),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(invalid(
                "invalid_hash",
                "metadata must be an object",
                Some("metadata"),
            ));
        }
    };
    let fits = map.len() <= 50
        && map.iter().all(|(k, v)| {
            k.chars().count() <= 40
                && match v {
                    Value::String(s) => s.chars().count() <= 500,
                    Value::Bool(_) | Value::Number(_) => true,
                    _ => false,
                }
        });
    if fits {
        Ok(Value::Object(map.clone()))
    } else {
        Err(invalid(
            "invalid_params",
            "metadata takes up to 50 keys of up to 40 characters, with string (up to 500 \
             characters), boolean or number values",
            Some("metadata"),
        ))
    }
}

impl Ledger {
    fn subscription_json(&self, id: &str) -> Option<Value> {
        self.subscriptions
            .iter()
            .find(|s| s.id == id)
            .map(subscription_json)
    }

    fn intent_json(&self, intent: &Intent, with_token: bool) -> Value {
        json!({
            "id": intent.id,
            "object": "subscription_intent",
            "business_profile": intent.business_profile,
            "created_at": stamp(intent.created_at),
            "customer_email": intent.customer_email,
            "mode": "test",
            "public_error": intent.public_error,
            "reference_id": intent.reference_id,
            "status": intent.status,
            // "Object that points to the subscription that is created in case the intent is
            // successful": the subscription object, as it is now.
            "subscription": intent
                .subscription
                .as_deref()
                .and_then(|id| self.subscription_json(id)),
            // "only returned when creating the Subscription Intent. After that, it will always
            // be null."
            "widget_token": if with_token { json!(intent.widget_token) } else { Value::Null },
        })
    }
}

/// `reference/direct-debit-subscription-object`. The account's balance is null: "only present
/// when subscriptions are created ... At other moments the account balance is null". The
/// sandbox's banks are UNREAD; every account is the example's Banco Santander checking account.
fn subscription_json(s: &Subscription) -> Value {
    json!({
        "id": s.id,
        "object": "subscription",
        "account": {
            "id": s.account_id,
            "object": "account",
            "balance": null,
            "currency": "CLP",
            "holder_id": s.holder_id,
            "holder_name": HOLDER_NAME,
            "institution": {
                "id": "cl_banco_santander",
                "country": "cl",
                "name": "Banco Santander",
            },
            "name": "Cuenta Corriente",
            "number": s.number,
            "official_name": "Cuenta Corriente Moneda Local",
            "type": "checking_account",
        },
        "created_at": stamp(s.created_at),
        "mode": "test",
        "reference_id": s.reference_id,
        "status": s.status,
    })
}

/// `reference-link/charge-object`. No `subscription_id` field: no documented example has one
/// (UNDOCUMENTED whether Fintoc echoes it), so the client must keep the link itself.
fn charge_json(c: &Charge) -> Value {
    json!({
        "id": c.id,
        "object": "charge",
        "status": c.status,
        "amount": c.amount,
        "currency": "CLP",
        "failure_code": c.failure_code.map(FailureCode::as_str),
        "metadata": c.metadata,
        "mode": "test",
        "created_at": stamp(c.created_at),
        "business_profile": c.business_profile,
    })
}

impl Standin {
    /// `POST /v1/subscription_intents`, once past authentication and idempotency.
    fn create_intent(&self, body: &Bytes) -> Answer {
        let body = match object_body(body) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        // All optional. The request's email field is not named by the readable docs; the
        // object's `customer_email` is taken as its name (UNDOCUMENTED).
        if let Err(answer) = only_known(
            &body,
            &["business_profile", "customer_email", "reference_id"],
        ) {
            return answer;
        }
        let business_profile = match profile(&body, &["name"]) {
            Ok(profile) => profile,
            Err(answer) => return answer,
        };
        let customer_email = match body.get("customer_email") {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(email)) if email.contains('@') => json!(email),
            Some(_) => {
                return invalid(
                    "invalid_params",
                    "customer_email must be an email address",
                    Some("customer_email"),
                );
            }
        };
        let mut ledger = self.ledger.lock().unwrap();
        let reference_id = match body.get("reference_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(reference)) => {
                // "Up to 15 characters, uppercase letters and numbers only, and not already in
                // use by another subscription intent that has not failed." Which code answers
                // each violation is UNDOCUMENTED: RB's `invalid_reference_id_size` for the
                // length, `invalid_params` for the rest.
                if reference.is_empty() || reference.len() > 15 {
                    return invalid(
                        "invalid_reference_id_size",
                        "reference_id must have between 1 and 15 characters",
                        Some("reference_id"),
                    );
                }
                if !reference
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                {
                    return invalid(
                        "invalid_params",
                        "reference_id takes uppercase letters and numbers only",
                        Some("reference_id"),
                    );
                }
                if ledger.intents.iter().any(|i| {
                    i.status != "failed" && i.reference_id.as_deref() == Some(reference.as_str())
                }) {
                    return invalid(
                        "invalid_params",
                        "reference_id is already in use",
                        Some("reference_id"),
                    );
                }
                Some(reference.clone())
            }
            Some(_) => {
                return invalid(
                    "invalid_string",
                    "reference_id must be a string",
                    Some("reference_id"),
                );
            }
        };
        let id = format!("si_{}", random(16));
        let intent = Intent {
            widget_token: format!("{id}_sec_{}", random(24)),
            id,
            issued: Instant::now(),
            business_profile,
            customer_email,
            reference_id,
            status: "created",
            public_error: None,
            subscription: None,
            created_at: Utc::now(),
        };
        // The HTTP status of a creation (200 or 201) is UNDOCUMENTED: 201, so a client that
        // expects exactly 200 fails here (it must take any 2xx).
        let answer = (StatusCode::CREATED, ledger.intent_json(&intent, true));
        ledger.intents.push(intent);
        answer
    }

    /// `POST /v1/charges`, once past authentication and idempotency.
    fn create_charge(&self, body: &Bytes) -> Answer {
        let body = match object_body(body) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        // `recipient_account`: "Only used for organizations with recipient accounts enabled;
        // otherwise it is ignored."
        if let Err(answer) = only_known(
            &body,
            &[
                "amount",
                "currency",
                "subscription_id",
                "metadata",
                "business_profile",
                "recipient_account",
            ],
        ) {
            return answer;
        }
        for name in ["subscription_id", "amount", "currency"] {
            if body.get(name).is_none_or(Value::is_null) {
                return invalid(
                    "missing_parameter",
                    &format!("Missing required param: {name}"),
                    Some(name),
                );
            }
        }
        // "A positive integer": 5000.0, "5000" and 0 are refused (RB's `invalid_amount`).
        let Some(amount) = body["amount"].as_i64().filter(|a| *a > 0) else {
            return invalid(
                "invalid_amount",
                "amount must be a positive integer",
                Some("amount"),
            );
        };
        // "enum CLP": the v2023 example's lowercase "clp" is refused.
        if body["currency"] != "CLP" {
            return invalid(
                "invalid_currency",
                "CLP is the only supported currency",
                Some("currency"),
            );
        }
        let Some(subscription_id) = body["subscription_id"].as_str() else {
            return invalid(
                "invalid_string",
                "subscription_id must be a string",
                Some("subscription_id"),
            );
        };
        let metadata = match metadata(&body) {
            Ok(metadata) => metadata,
            Err(answer) => return answer,
        };
        let business_profile = match profile(&body, &["name", "tax_id", "category"]) {
            Ok(profile) => profile,
            Err(answer) => return answer,
        };
        let mut ledger = self.ledger.lock().unwrap();
        let Some(subscription) = ledger
            .subscriptions
            .iter()
            .find(|s| s.id == subscription_id)
        else {
            // UNDOCUMENTED: an unknown subscription in the body answers 400 (the parameter is
            // invalid) with `missing_resource`.
            return invalid(
                "missing_resource",
                &format!("No such subscription: {subscription_id}"),
                Some("subscription_id"),
            );
        };
        if subscription.status != "active" {
            // "The subscription must be active"; the status and code of the refusal are
            // UNDOCUMENTED. 400 with `subscription_inactive`, the documented name of the same
            // condition among charge failure codes (RB's 422 `subscription_in_progress` is
            // the other candidate for a pending one).
            return invalid(
                "subscription_inactive",
                &format!(
                    "Subscription {subscription_id} is {}; only active subscriptions can be charged",
                    subscription.status
                ),
                Some("subscription_id"),
            );
        }
        let charge = Charge {
            id: format!("ch_{}", random(16)),
            subscription_id: subscription_id.to_string(),
            amount,
            status: "pending",
            failure_code: None,
            metadata,
            business_profile,
            created_at: Utc::now(),
        };
        let answer = (StatusCode::CREATED, charge_json(&charge));
        ledger.charges.push(charge);
        self.charges_created.fetch_add(1, Ordering::SeqCst);
        answer
    }

    /// The intent as `GET /v1/subscription_intents/{id}` answers it (for event data).
    pub fn intent(&self, intent_id: &str) -> Option<Value> {
        let ledger = self.ledger.lock().unwrap();
        let intent = ledger.intents.iter().find(|i| i.id == intent_id)?;
        Some(ledger.intent_json(intent, false))
    }

    /// The subscription as `GET /v1/subscriptions/{id}` answers it.
    pub fn subscription(&self, subscription_id: &str) -> Option<Value> {
        self.ledger
            .lock()
            .unwrap()
            .subscription_json(subscription_id)
    }

    /// The charge as `GET /v1/charges/{id}` answers it.
    pub fn charge(&self, charge_id: &str) -> Option<Value> {
        let ledger = self.ledger.lock().unwrap();
        ledger
            .charges
            .iter()
            .find(|c| c.id == charge_id)
            .map(charge_json)
    }

    /// The account number a subscription of this sandbox RUT gets (any spelling of the RUT).
    /// Without one it is `95` followed by the RUT's first eight digits.
    pub fn set_account_number(&self, rut: &str, number: &str) {
        self.ledger
            .lock()
            .unwrap()
            .account_numbers
            .insert(normalize_rut(rut), number.to_string());
    }

    fn move_subscription(&self, subscription_id: &str, from: &[&str], to: &'static str) -> Value {
        let mut ledger = self.ledger.lock().unwrap();
        let subscription = ledger
            .subscriptions
            .iter_mut()
            .find(|s| s.id == subscription_id)
            .unwrap_or_else(|| panic!("no subscription {subscription_id}"));
        assert!(
            from.contains(&subscription.status),
            "subscription {subscription_id} is {}, not {from:?}",
            subscription.status
        );
        subscription.status = to;
        subscription_json(subscription)
    }

    /// The bank confirmed the subscription (`subscription.activated`): `pending` → `active`.
    /// Answers the subscription object (the event's data).
    pub fn activate(&self, subscription_id: &str) -> Value {
        self.move_subscription(subscription_id, &["pending"], "active")
    }

    /// The bank cancelled the subscription (`subscription.canceled`). Answers the object.
    pub fn cancel(&self, subscription_id: &str) -> Value {
        self.move_subscription(subscription_id, &["pending", "active"], "canceled")
    }

    /// The bank's collection decided the charge (a `pending` or `in_progress` one). Answers
    /// the charge object (the data of `charge.succeeded` / `charge.failed`).
    pub fn settle_charge(&self, charge_id: &str, outcome: Outcome) -> Value {
        let mut ledger = self.ledger.lock().unwrap();
        let charge = ledger
            .charges
            .iter_mut()
            .find(|c| c.id == charge_id)
            .unwrap_or_else(|| panic!("no charge {charge_id}"));
        assert!(
            matches!(charge.status, "pending" | "in_progress"),
            "charge {charge_id} is already {}",
            charge.status
        );
        // "Always null unless status is failed."
        (charge.status, charge.failure_code) = match outcome {
            Outcome::InProgress => ("in_progress", None),
            Outcome::Succeeded => ("succeeded", None),
            Outcome::Failed(code) => ("failed", Some(code)),
            Outcome::Canceled => ("canceled", None),
        };
        charge_json(charge)
    }

    /// A webhook event as Fintoc would POST it: the raw body (the envelope of PY
    /// `tests/test_webhook.py`: `id`, `type`, `mode`, `created_at`, `data` = the resource
    /// itself, `object: "event"`, compact JSON) and its `Fintoc-Signature` header value,
    /// signed with the endpoint's `secret` at `at_unix`.
    pub fn signed_event(
        &self,
        secret: &str,
        event_type: &str,
        data: Value,
        at_unix: i64,
    ) -> (String, String) {
        let created_at = DateTime::from_timestamp(at_unix, 0)
            .expect("a representable time")
            .to_rfc3339_opts(SecondsFormat::Millis, true);
        let body = json!({
            "id": format!("evt_{}", random(16)),
            "type": event_type,
            "mode": "test",
            "created_at": created_at,
            "data": data,
            "object": "event",
        })
        .to_string();
        let header = signature(secret, at_unix, &body);
        (body, header)
    }
}

/// The `Fintoc-Signature` value of `body` sent at `at_unix`: `t=<unix>,v1=<hex HMAC-SHA256,
/// keyed with the endpoint secret's bytes, of "{t}.{body}">` (PY `fintoc/webhook.py`).
pub fn signature(secret: &str, at_unix: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{at_unix}.{body}").as_bytes());
    format!(
        "t={at_unix},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

async fn create_intent(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fingerprint = fingerprint("/v1/subscription_intents", &body);
    let worker = Arc::clone(&standin);
    let work = async move { worker.create_intent(&body) };
    reply(idempotent(&standin, idempotency_key(&headers), fingerprint, work).await)
}

async fn get_intent(State(standin): State<Arc<Standin>>, Path(id): Path<String>) -> Response {
    reply(match standin.intent(&id) {
        Some(intent) => (StatusCode::OK, intent),
        None => missing("subscription_intent", &id),
    })
}

async fn create_charge(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fingerprint = fingerprint("/v1/charges", &body);
    let worker = Arc::clone(&standin);
    let work = async move {
        let now = worker.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        worker.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let latency = *worker.latency.lock().unwrap();
        tokio::time::sleep(latency).await;
        worker.in_flight.fetch_sub(1, Ordering::SeqCst);
        worker.create_charge(&body)
    };
    reply(idempotent(&standin, idempotency_key(&headers), fingerprint, work).await)
}

async fn get_charge(State(standin): State<Arc<Standin>>, Path(id): Path<String>) -> Response {
    reply(match standin.charge(&id) {
        Some(charge) => (StatusCode::OK, charge),
        None => missing("charge", &id),
    })
}

async fn get_subscription(State(standin): State<Arc<Standin>>, Path(id): Path<String>) -> Response {
    reply(match standin.subscription(&id) {
        Some(subscription) => (StatusCode::OK, subscription),
        None => missing("subscription", &id),
    })
}

/// A list's query, validated: its pairs in order, the page and the page size.
struct ListQuery {
    pairs: Vec<(String, String)>,
    page: usize,
    per_page: usize,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
}

impl ListQuery {
    /// `page` ("Starts at 1") and `per_page` ("Defaults to 30. The maximum is 300."). Out of
    /// range values and parameters the list does not know are refused (UNDOCUMENTED; a
    /// misspelt filter silently ignored would list other subscriptions' charges).
    fn parse(raw: Option<String>, filters: &[&str]) -> Result<ListQuery, Answer> {
        let pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
                .into_owned()
                .collect();
        if let Some((unknown, _)) = pairs
            .iter()
            .find(|(k, _)| k != "page" && k != "per_page" && !filters.contains(&k.as_str()))
        {
            return Err(invalid(
                "invalid_params",
                &format!("Unknown parameter: {unknown}"),
                Some(unknown),
            ));
        }
        let number = |name: &str, default: usize, max: usize| -> Result<usize, Answer> {
            match pairs.iter().rev().find(|(k, _)| k == name) {
                None => Ok(default),
                Some((_, v)) => v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| {
                        invalid(
                            "invalid_positive_integer",
                            &format!("{name} must be an integer between 1 and {max}"),
                            Some(name),
                        )
                    }),
            }
        };
        let page = number("page", 1, usize::MAX)?;
        let per_page = number("per_page", 30, 300)?;
        let mut query = ListQuery {
            pairs,
            page,
            per_page,
            since: None,
            until: None,
        };
        query.since = query.bound("since")?;
        query.until = query.bound("until")?;
        Ok(query)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `since` / `until`: an ISO 8601 datetime, or a date (v2023's `format: date`; `until`
    /// then means the end of that day). Both bounds are inclusive (UNDOCUMENTED).
    fn bound(&self, name: &str) -> Result<Option<DateTime<Utc>>, Answer> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let at = DateTime::parse_from_rfc3339(value)
            .map(|t| t.with_timezone(&Utc))
            .ok()
            .or_else(|| {
                let day = NaiveDate::parse_from_str(value, "%Y-%m-%d").ok()?;
                let time = if name == "until" {
                    day.and_hms_opt(23, 59, 59)
                } else {
                    day.and_hms_opt(0, 0, 0)
                };
                time.map(|t| t.and_utc())
            });
        match at {
            Some(at) => Ok(Some(at)),
            None => Err(invalid(
                "invalid_date",
                &format!("{name} must be an ISO 8601 datetime"),
                Some(name),
            )),
        }
    }

    fn within(&self, at: DateTime<Utc>) -> bool {
        self.since.is_none_or(|since| at >= since) && self.until.is_none_or(|until| at <= until)
    }

    /// One page of `items` (already in the list's order) as a bare JSON array, with the
    /// `Link` header of `/v1`'s offset pagination: `first` and `last` always (PY's paginator
    /// reads the header on every page and fails without one), `prev` and `next` when they
    /// exist. The links keep the other query parameters.
    fn answer(&self, base: &str, path: &str, items: Vec<Value>) -> Response {
        let pages = items.len().div_ceil(self.per_page).max(1);
        let start = (self.page - 1).saturating_mul(self.per_page);
        let body: Vec<Value> = items.into_iter().skip(start).take(self.per_page).collect();
        let link = |page: usize, rel: &str| {
            let mut url = url::Url::parse(&format!("{base}{path}")).expect("the base URL");
            {
                let mut query = url.query_pairs_mut();
                for (k, v) in self.pairs.iter().filter(|(k, _)| k != "page") {
                    query.append_pair(k, v);
                }
                query.append_pair("page", &page.to_string());
            }
            format!("<{url}>; rel=\"{rel}\"")
        };
        let mut links = vec![link(1, "first")];
        if self.page > 1 {
            links.push(link((self.page - 1).min(pages), "prev"));
        }
        if self.page < pages {
            links.push(link(self.page + 1, "next"));
        }
        links.push(link(pages, "last"));
        let mut response = reply((StatusCode::OK, Value::Array(body)));
        response.headers_mut().insert(
            header::LINK,
            HeaderValue::from_str(&links.join(", ")).expect("an ASCII Link header"),
        );
        response
    }
}

/// `GET /v1/charges`: "sorted by creation date with the most recent charges first", filtered
/// by `since`, `until`, `status` and `subscription_id`.
async fn list_charges(State(standin): State<Arc<Standin>>, RawQuery(raw): RawQuery) -> Response {
    let query = match ListQuery::parse(raw, &["since", "until", "status", "subscription_id"]) {
        Ok(query) => query,
        Err(answer) => return reply(answer),
    };
    let statuses = ["pending", "in_progress", "succeeded", "failed", "canceled"];
    if let Some(status) = query.get("status")
        && !statuses.contains(&status)
    {
        return reply(invalid(
            "invalid_enum",
            &format!("status must be one of {}", statuses.join(", ")),
            Some("status"),
        ));
    }
    let ledger = standin.ledger.lock().unwrap();
    if let Some(id) = query.get("subscription_id")
        && !ledger.subscriptions.iter().any(|s| s.id == id)
    {
        // "The subscription must belong to your organization." The answer otherwise is
        // UNDOCUMENTED: the same 400 as a charge on an unknown subscription.
        return reply(invalid(
            "missing_resource",
            &format!("No such subscription: {id}"),
            Some("subscription_id"),
        ));
    }
    let mut items = Vec::new();
    for charge in ledger.charges.iter().rev() {
        if !query.within(charge.created_at)
            || query.get("status").is_some_and(|s| s != charge.status)
            || query
                .get("subscription_id")
                .is_some_and(|id| id != charge.subscription_id)
        {
            continue;
        }
        items.push(charge_json(charge));
    }
    drop(ledger);
    let base = standin.base.lock().unwrap().clone();
    query.answer(&base, "/v1/charges", items)
}

/// `GET /v1/subscriptions`, most recent first (the order is UNDOCUMENTED; the charges'),
/// filtered by `since` and `until` (the list's other parameters are UNREAD).
async fn list_subscriptions(
    State(standin): State<Arc<Standin>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let query = match ListQuery::parse(raw, &["since", "until"]) {
        Ok(query) => query,
        Err(answer) => return reply(answer),
    };
    let ledger = standin.ledger.lock().unwrap();
    let mut items = Vec::new();
    for subscription in ledger.subscriptions.iter().rev() {
        if query.within(subscription.created_at) {
            items.push(subscription_json(subscription));
        }
    }
    drop(ledger);
    let base = standin.base.lock().unwrap().clone();
    query.answer(&base, "/v1/subscriptions", items)
}

/// `GET /v1/subscription_intents` (the SDKs' `list`; its parameters are UNREAD: pages only).
async fn list_intents(State(standin): State<Arc<Standin>>, RawQuery(raw): RawQuery) -> Response {
    let query = match ListQuery::parse(raw, &[]) {
        Ok(query) => query,
        Err(answer) => return reply(answer),
    };
    let ledger = standin.ledger.lock().unwrap();
    let items = ledger
        .intents
        .iter()
        .rev()
        .map(|i| ledger.intent_json(i, false))
        .collect();
    drop(ledger);
    let base = standin.base.lock().unwrap().clone();
    query.answer(&base, "/v1/subscription_intents", items)
}

/// Any other path under the API: RB's 404 `invalid_url`.
async fn unknown_url(request: Request) -> Response {
    reply(error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "invalid_url",
        &format!("Unrecognized request URL: {}", request.uri().path()),
        None,
    ))
}

/// The stand-in of `https://js.fintoc.com/v1/`: `window.Fintoc.create(options)` answers a
/// widget whose `open()` takes the browser to the stand-in's subscribe page with the options
/// the real widget is configured with (`widgetToken`, `publicKey`, `product`, `holderType`;
/// `docs/integration-flow-for-direct-debit`), and the page to come back to. `onEvent` hears
/// `opened` (`docs/widget-events`); `onSuccess` and `onExit` are never called, since the page
/// is left (see the module's simplifications).
const WIDGET_SCRIPT: &str = r#"// Fintoc widget stand-in (mandato's tests/api/fintoc.rs), for https://js.fintoc.com/v1/.
(function () {
  "use strict";
  var BASE = __BASE__;
  function create(options) {
    options = options || {};
    return {
      open: function () {
        if (typeof options.onEvent === "function") {
          options.onEvent("opened", {});
        }
        var query = new URLSearchParams({
          widget_token: options.widgetToken || "",
          public_key: options.publicKey || "",
          product: options.product || "",
          holder_type: options.holderType || "",
          "return": window.location.href
        });
        window.location.assign(BASE + "/widget/subscribe?" + query.toString());
      },
      close: function () {},
      hide: function () {},
      destroy: function () {}
    };
  }
  window.Fintoc = { create: create };
})();
"#;

async fn widget_script(State(standin): State<Arc<Standin>>) -> Response {
    let base = standin.base.lock().unwrap().clone();
    let script = WIDGET_SCRIPT.replace("__BASE__", &json!(base).to_string());
    (
        [(
            header::CONTENT_TYPE,
            "application/javascript; charset=utf-8",
        )],
        script,
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The widget's page for a problem (a bad configuration, a used or expired token).
fn widget_problem(status: StatusCode, message: &str) -> Response {
    (
        status,
        Html(format!(
            "<!doctype html><html lang=\"es\"><head><title>Fintoc</title></head><body>\
             <h1>Fintoc (stand-in)</h1><p class=\"error\">{}</p></body></html>",
            escape(message)
        )),
    )
        .into_response()
}

/// The intent of a widget token, if the widget can still work on it: not yet decided, and the
/// token at most 10 minutes old. An expired token fails its intent with
/// `subscription_intent_expired` (the documented `public_error`; that expiry is what sets it
/// is UNDOCUMENTED).
/// Its refusal is the message of the widget's error page (always a 400).
fn usable<'a>(ledger: &'a mut Ledger, token: &str) -> Result<&'a mut Intent, &'static str> {
    let Some(intent) = ledger.intents.iter_mut().find(|i| i.widget_token == token) else {
        return Err("El widget_token no es válido (invalid_widget_token).");
    };
    if !matches!(intent.status, "created" | "in_progress") {
        return Err("Esta suscripción ya fue procesada.");
    }
    if intent.issued.elapsed() > WIDGET_TOKEN_TTL {
        intent.status = "failed";
        intent.public_error = Some("subscription_intent_expired");
        return Err("El widget_token expiró.");
    }
    Ok(intent)
}

/// `GET /widget/subscribe`: what the widget shows once opened, the bank login and the
/// authorization, in one form. The configuration is checked as strictly as the docs state it
/// (the sandbox's public key, `product: 'subscriptions'`, a `holderType`); opening it moves
/// the intent to `in_progress` (an inference: the documented status between `created` and the
/// outcome).
async fn subscribe_page(
    State(standin): State<Arc<Standin>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let param = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
    if param("public_key") != PUBLIC_KEY {
        return widget_problem(
            StatusCode::UNAUTHORIZED,
            "La clave pública (publicKey) no es válida.",
        );
    }
    if param("product") != "subscriptions" {
        return widget_problem(
            StatusCode::BAD_REQUEST,
            "El producto debe ser 'subscriptions'.",
        );
    }
    if !matches!(param("holder_type"), "individual" | "business") {
        return widget_problem(
            StatusCode::BAD_REQUEST,
            "holderType debe ser 'individual' o 'business'.",
        );
    }
    let mut ledger = standin.ledger.lock().unwrap();
    let intent = match usable(&mut ledger, param("widget_token")) {
        Ok(intent) => intent,
        Err(message) => return widget_problem(StatusCode::BAD_REQUEST, message),
    };
    intent.status = "in_progress";
    let merchant = intent.business_profile["name"]
        .as_str()
        .unwrap_or("Comercio")
        .to_string();
    Html(format!(
        "<!doctype html><html lang=\"es\"><head><title>Fintoc</title></head><body>\
         <h1>Fintoc (stand-in)</h1>\
         <p>Empresa receptora: <strong id=\"merchant\">{merchant}</strong></p>\
         <form method=\"post\" action=\"/widget/subscribe\">\
         <input type=\"hidden\" name=\"widget_token\" value=\"{token}\">\
         <input type=\"hidden\" name=\"return\" value=\"{back}\">\
         <label for=\"username\">RUT</label>\
         <input id=\"username\" name=\"username\" autocomplete=\"username\">\
         <label for=\"password\">Clave</label>\
         <input id=\"password\" name=\"password\" type=\"password\" \
         autocomplete=\"current-password\">\
         <button type=\"submit\" name=\"action\" value=\"authorize\">Autorizar</button>\
         <button type=\"submit\" name=\"action\" value=\"reject\" formnovalidate>Rechazar\
         </button></form></body></html>",
        merchant = escape(&merchant),
        token = escape(param("widget_token")),
        back = escape(param("return")),
    ))
    .into_response()
}

/// `POST /widget/subscribe`: `Rechazar` rejects the intent; `Autorizar` with a documented
/// sandbox RUT and `jonsnow` succeeds it with a new `pending` subscription (the bank still
/// validates it); any other credentials fail it with `login_invalid_credentials`. The browser
/// then goes back to `return` (303), or sees a closing page without one.
async fn subscribe_submit(
    State(standin): State<Arc<Standin>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    {
        let mut guard = standin.ledger.lock().unwrap();
        let ledger = &mut *guard;
        let rut = normalize_rut(field("username"));
        let sandbox = SANDBOX_RUTS.iter().any(|r| normalize_rut(r) == rut);
        let number = ledger
            .account_numbers
            .get(&rut)
            .cloned()
            .unwrap_or_else(|| format!("95{}", rut.get(..8).unwrap_or_default()));
        let intent = match usable(ledger, field("widget_token")) {
            Ok(intent) => intent,
            Err(message) => return widget_problem(StatusCode::BAD_REQUEST, message),
        };
        if field("action") == "reject" {
            intent.status = "rejected";
        } else if sandbox && field("password") == SANDBOX_PASSWORD {
            let subscription = Subscription {
                id: format!("sub_{}", random(16)),
                account_id: format!("acc_{}", random(16)),
                // "If not provided, it defaults to the holder_id."
                reference_id: intent.reference_id.clone().unwrap_or_else(|| rut.clone()),
                holder_id: rut,
                number,
                status: "pending",
                created_at: Utc::now(),
            };
            intent.status = "succeeded";
            intent.subscription = Some(subscription.id.clone());
            ledger.subscriptions.push(subscription);
        } else {
            intent.status = "failed";
            intent.public_error = Some("login_invalid_credentials");
        }
    }
    match url::Url::parse(field("return")) {
        Ok(back) if matches!(back.scheme(), "http" | "https") => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, back.to_string())],
        )
            .into_response(),
        _ => Html(
            "<!doctype html><html lang=\"es\"><head><title>Fintoc</title></head><body>\
             <h1>Fintoc (stand-in)</h1><p>Listo. Puedes cerrar esta ventana.</p></body></html>",
        )
        .into_response(),
    }
}

fn router(standin: &Arc<Standin>) -> Router {
    let api = Router::new()
        .route(
            "/v1/subscription_intents",
            get(list_intents).post(create_intent),
        )
        .route("/v1/subscription_intents/{id}", get(get_intent))
        .route("/v1/subscriptions", get(list_subscriptions))
        .route("/v1/subscriptions/{id}", get(get_subscription))
        .route("/v1/charges", get(list_charges).post(create_charge))
        .route("/v1/charges/{id}", get(get_charge))
        .fallback(unknown_url)
        .layer(middleware::from_fn_with_state(Arc::clone(standin), gate));
    Router::new()
        .route("/widget/v1/", get(widget_script))
        .route("/widget/v1", get(widget_script))
        .route(
            "/widget/subscribe",
            get(subscribe_page).post(subscribe_submit),
        )
        .merge(api)
        .with_state(Arc::clone(standin))
}

/// Starts the stand-in over plain HTTP on a loopback port (Fintoc itself refuses plain HTTP;
/// a test base URL is `http://`); answers it and its base URL (the API is under `{base}/v1`,
/// the widget script at `{base}/widget/v1/`).
pub async fn start() -> (Arc<Standin>, String) {
    let standin = Arc::new(Standin::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *standin.base.lock().unwrap() = base.clone();
    let app = router(&standin);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (standin, base)
}

/// Starts the stand-in over HTTPS with this `localhost` certificate, as production reaches
/// Fintoc; answers it and its base URL.
pub async fn start_https(cert_pem: &str, key_pem: &str) -> (Arc<Standin>, String) {
    let standin = Arc::new(Standin::default());
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = axum_server::tls_rustls::RustlsConfig::from_pem(
        cert_pem.as_bytes().to_vec(),
        key_pem.as_bytes().to_vec(),
    )
    .await
    .expect("TLS config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!(
        "https://localhost:{}",
        listener.local_addr().unwrap().port()
    );
    *standin.base.lock().unwrap() = base.clone();
    let server = axum_server::from_tcp_rustls(listener, config).expect("TLS listener");
    let app = router(&standin);
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    (standin, base)
}

// ---------------------------------------------------------------------------------------------
// The stand-in's own tests, over real HTTP.

/// An answer read whole.
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn send(request: reqwest::RequestBuilder) -> Reply {
    let response = request.send().await.expect("the stand-in answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    Reply {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

/// A client that does not follow redirects (to see each hop of the widget).
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn api_get(base: &str, path: &str) -> Reply {
    send(
        reqwest::Client::new()
            .get(format!("{base}{path}"))
            .header("Authorization", SECRET),
    )
    .await
}

async fn api_post(base: &str, path: &str, key: Option<&str>, body: &Value) -> Reply {
    let mut request = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("Authorization", SECRET)
        .json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    send(request).await
}

/// The widget page's query, as the stand-in's script builds it.
fn widget_query(token: &str, back: &str) -> [(&'static str, String); 5] {
    [
        ("widget_token", token.to_string()),
        ("public_key", PUBLIC_KEY.to_string()),
        ("product", "subscriptions".to_string()),
        ("holder_type", "individual".to_string()),
        ("return", back.to_string()),
    ]
}

/// The widget page's URL with this query.
fn widget_url(base: &str, query: &[(&str, String)]) -> String {
    url::Url::parse_with_params(&format!("{base}/widget/subscribe"), query)
        .unwrap()
        .to_string()
}

/// A form submission to the widget page, as a browser encodes it.
fn submit(
    client: &reqwest::Client,
    base: &str,
    fields: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    client
        .post(format!("{base}/widget/subscribe"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
}

/// A customer subscribes through the widget with `rut` and `password` (or rejects); answers
/// the intent's id.
pub(crate) async fn through_widget(base: &str, rut: &str, password: &str, action: &str) -> String {
    let intent = api_post(base, "/v1/subscription_intents", None, &json!({})).await;
    assert_eq!(intent.status, 201, "{}", intent.body);
    let token = intent.body["widget_token"].as_str().unwrap();
    let page = send(browser().get(widget_url(
        base,
        &widget_query(token, "http://127.0.0.1:9/back"),
    )))
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let submitted = send(submit(
        &browser(),
        base,
        &[
            ("widget_token", token),
            ("return", "http://127.0.0.1:9/back"),
            ("username", rut),
            ("password", password),
            ("action", action),
        ],
    ))
    .await;
    assert_eq!(submitted.status, 303);
    intent.body["id"].as_str().unwrap().to_string()
}

/// An active subscription of the first sandbox RUT; answers its id.
pub(crate) async fn active_subscription(standin: &Standin, base: &str) -> String {
    let intent = through_widget(base, SANDBOX_RUTS[0], SANDBOX_PASSWORD, "authorize").await;
    let id = standin.intent(&intent).unwrap()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    standin.activate(&id);
    id
}

fn charge_body(subscription: &str, amount: i64) -> Value {
    json!({ "amount": amount, "currency": "CLP", "subscription_id": subscription })
}

/// A tiny merchant site: the page the widget returns to. Answers its URL and its hit count.
async fn merchant_return_page() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let app = Router::new().route(
        "/subscribe/done",
        get(move || {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Html("<p>merchant</p>")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/subscribe/done?mandate=42",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hits)
}

#[tokio::test(flavor = "multi_thread")]
async fn authentication_takes_the_raw_secret_key_only() {
    let (standin, base) = start().await;
    let client = reqwest::Client::new();
    let url = format!("{base}/v1/subscription_intents");
    for authorization in [
        None,
        Some("sk_test_not_the_key".to_string()),
        Some(format!("Bearer {SECRET}")),
        Some(PUBLIC_KEY.to_string()),
    ] {
        let mut request = client
            .post(&url)
            .header("Idempotency-Key", "auth-key")
            .json(&json!({}));
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        let refused = send(request).await;
        assert_eq!(refused.status, 401);
        assert_eq!(
            refused.headers["content-type"],
            "application/json; charset=utf-8"
        );
        let error = &refused.body["error"];
        assert_eq!(error["type"], "authentication_error");
        assert_eq!(error["code"], "invalid_api_key");
        assert!(error["message"].is_string());
        assert!(error["param"].is_null());
        assert!(error["doc_url"].as_str().unwrap().starts_with("https://"));
    }
    // A refused authentication saved nothing for the key: with the key, it creates.
    let created = api_post(
        &base,
        "/v1/subscription_intents",
        Some("auth-key"),
        &json!({}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(standin.posts.lock().unwrap()["auth-key"], 5);
    // Reads need the key as well; an unknown path is `invalid_url`.
    let read = send(client.get(format!("{base}/v1/charges"))).await;
    assert_eq!(read.status, 401);
    let unknown = api_get(&base, "/v1/subscriptions/sub_x/charges").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"]["code"], "invalid_url");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_intent_shows_its_widget_token_only_on_creation() {
    let (_standin, base) = start().await;
    let created = api_post(
        &base,
        "/v1/subscription_intents",
        Some("intent-1"),
        &json!({ "business_profile": { "name": "Gimnasio Norte" }, "reference_id": "GYM42" }),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let intent = &created.body;
    let id = intent["id"].as_str().unwrap();
    assert!(id.starts_with("si_") && id.len() == 19, "{id}");
    assert_eq!(intent["object"], "subscription_intent");
    assert_eq!(intent["status"], "created");
    assert_eq!(intent["mode"], "test");
    assert_eq!(intent["business_profile"]["name"], "Gimnasio Norte");
    assert_eq!(intent["reference_id"], "GYM42");
    assert!(intent["public_error"].is_null());
    assert!(intent["subscription"].is_null());
    assert!(intent["customer_email"].is_null());
    let token = intent["widget_token"].as_str().unwrap();
    let secret = token
        .strip_prefix(&format!("{id}_sec_"))
        .unwrap_or_else(|| panic!("{token}"));
    assert_eq!(secret.len(), 24);
    assert!(intent["created_at"].as_str().unwrap().ends_with('Z'));

    let got = api_get(&base, &format!("/v1/subscription_intents/{id}")).await;
    assert_eq!(got.status, 200);
    assert!(got.body["widget_token"].is_null());
    assert_eq!(got.body["id"], id);
    assert_eq!(got.body["status"], "created");

    let unknown = api_get(&base, "/v1/subscription_intents/si_nope").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"]["code"], "missing_resource");

    // No body at all, as the integration flow's example posts.
    let bare = send(
        reqwest::Client::new()
            .post(format!("{base}/v1/subscription_intents"))
            .header("Authorization", SECRET),
    )
    .await;
    assert_eq!(bare.status, 201, "{}", bare.body);
    assert!(bare.body["business_profile"].is_null() && bare.body["reference_id"].is_null());

    // The reference's rules, and the old flat field refused.
    for (body, code) in [
        (json!({ "reference_id": "GYM42" }), "invalid_params"),
        (json!({ "reference_id": "lower" }), "invalid_params"),
        (
            json!({ "reference_id": "ABCDEFGHIJKLMNOP" }),
            "invalid_reference_id_size",
        ),
        (json!({ "business_profile_name": "X" }), "invalid_params"),
    ] {
        let refused = api_post(&base, "/v1/subscription_intents", None, &body).await;
        assert_eq!(refused.status, 400, "{body}");
        assert_eq!(refused.body["error"]["code"], code, "{body}");
        assert_eq!(refused.body["error"]["type"], "invalid_request_error");
    }

    let listed = api_get(&base, "/v1/subscription_intents").await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body.as_array().unwrap().len(), 2);
    assert_eq!(listed.body[1]["id"], id);
    assert!(listed.body[1]["widget_token"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_widget_script_defines_fintoc_create_and_opens_the_subscribe_page() {
    let (_standin, base) = start().await;
    let script = reqwest::get(format!("{base}/widget/v1/")).await.unwrap();
    assert_eq!(script.status(), 200);
    assert_eq!(
        script.headers()["content-type"],
        "application/javascript; charset=utf-8"
    );
    let text = script.text().await.unwrap();
    assert!(text.contains("window.Fintoc = { create: create }"));
    for needle in [
        "open: function",
        "close: function",
        "destroy: function",
        "/widget/subscribe?",
        "widgetToken",
        "publicKey",
        "holderType",
        "window.location.href",
    ] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
    assert!(text.contains(&format!("var BASE = \"{base}\";")), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_widget_subscribes_a_sandbox_customer_with_a_pending_subscription() {
    let (standin, base) = start().await;
    let (back, hits) = merchant_return_page().await;
    standin.set_account_number("40.427.672-7", "00123456789");
    let intent = api_post(
        &base,
        "/v1/subscription_intents",
        None,
        &json!({ "business_profile": { "name": "Gimnasio <Norte>" } }),
    )
    .await;
    let id = intent.body["id"].as_str().unwrap();
    let token = intent.body["widget_token"].as_str().unwrap();

    let page = browser()
        .get(widget_url(&base, &widget_query(token, &back)))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("Gimnasio &lt;Norte&gt;"), "{html}");
    assert!(html.contains(&format!("value=\"{token}\"")), "{html}");
    assert!(html.contains("Rechazar") && html.contains("name=\"password\""));
    let opened = api_get(&base, &format!("/v1/subscription_intents/{id}")).await;
    assert_eq!(opened.body["status"], "in_progress");

    // The login form, submitted as a browser does; the redirect is followed to the merchant.
    let landed = submit(
        &reqwest::Client::new(),
        &base,
        &[
            ("widget_token", token),
            ("return", back.as_str()),
            ("username", "40427672-7"),
            ("password", SANDBOX_PASSWORD),
            ("action", "authorize"),
        ],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(landed.status(), 200);
    assert_eq!(landed.url().as_str(), back);
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    let done = api_get(&base, &format!("/v1/subscription_intents/{id}")).await;
    assert_eq!(done.body["status"], "succeeded");
    assert!(done.body["public_error"].is_null());
    assert!(done.body["widget_token"].is_null());
    let subscription_id = done.body["subscription"]["id"].as_str().unwrap();
    assert!(subscription_id.starts_with("sub_"), "{subscription_id}");

    let got = api_get(&base, &format!("/v1/subscriptions/{subscription_id}")).await;
    assert_eq!(got.status, 200);
    let subscription = &got.body;
    assert_eq!(subscription["object"], "subscription");
    assert_eq!(subscription["status"], "pending");
    assert_eq!(subscription["mode"], "test");
    assert_eq!(subscription["reference_id"], "404276727");
    let account = &subscription["account"];
    assert!(account["id"].as_str().unwrap().starts_with("acc_"));
    assert_eq!(account["object"], "account");
    assert_eq!(account["holder_id"], "404276727");
    assert_eq!(account["holder_name"], "Jon Snow");
    assert_eq!(account["number"], "00123456789");
    assert_eq!(account["type"], "checking_account");
    assert_eq!(account["currency"], "CLP");
    assert!(account["balance"].is_null());
    assert_eq!(account["institution"]["id"], "cl_banco_santander");
    assert_eq!(account["institution"]["country"], "cl");
    assert_eq!(done.body["subscription"], *subscription);

    let listed = api_get(&base, "/v1/subscriptions?since=2020-01-01").await;
    assert_eq!(listed.body, json!([subscription]));
    let none = api_get(&base, "/v1/subscriptions?until=2020-01-01T00:00:00Z").await;
    assert_eq!(none.body, json!([]));
    let bad_date = api_get(&base, "/v1/charges?since=yesterday").await;
    assert_eq!(bad_date.status, 400);
    assert_eq!(bad_date.body["error"]["code"], "invalid_date");
    let unknown = api_get(&base, "/v1/subscriptions/sub_nope").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"]["code"], "missing_resource");

    // The token was spent: the widget refuses it.
    let again = browser()
        .get(widget_url(&base, &widget_query(token, &back)))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_password_fails_the_intent_and_rechazar_rejects_it() {
    let (standin, base) = start().await;
    let failed = through_widget(&base, SANDBOX_RUTS[1], "arya", "authorize").await;
    let intent = standin.intent(&failed).unwrap();
    assert_eq!(intent["status"], "failed");
    assert_eq!(intent["public_error"], "login_invalid_credentials");
    assert!(intent["subscription"].is_null());

    let stranger = through_widget(&base, "11111111-1", SANDBOX_PASSWORD, "authorize").await;
    assert_eq!(
        standin.intent(&stranger).unwrap()["public_error"],
        "login_invalid_credentials"
    );

    let rejected = through_widget(&base, SANDBOX_RUTS[2], "", "reject").await;
    let intent = standin.intent(&rejected).unwrap();
    assert_eq!(intent["status"], "rejected");
    assert!(intent["public_error"].is_null());
    assert!(intent["subscription"].is_null());
    assert_eq!(api_get(&base, "/v1/subscriptions").await.body, json!([]));

    // The widget's configuration is checked: the public key, the product, the token.
    let fresh = api_post(&base, "/v1/subscription_intents", None, &json!({})).await;
    let token = fresh.body["widget_token"].as_str().unwrap();
    for (name, value, status) in [
        ("public_key", SECRET, 401),
        ("product", "subscription", 400),
        ("holder_type", "", 400),
        ("widget_token", "si_x_sec_y", 400),
    ] {
        let mut query = widget_query(token, "http://127.0.0.1:9/back");
        query.iter_mut().find(|(k, _)| *k == name).unwrap().1 = value.to_string();
        let page = browser()
            .get(widget_url(&base, &query))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), status, "{name}={value}");
    }
    assert_eq!(
        standin.intent(fresh.body["id"].as_str().unwrap()).unwrap()["status"],
        "created"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bank_activates_and_cancels_subscriptions() {
    let (standin, base) = start().await;
    let intent = through_widget(&base, SANDBOX_RUTS[0], SANDBOX_PASSWORD, "authorize").await;
    let id = standin.intent(&intent).unwrap()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        api_get(&base, &format!("/v1/subscriptions/{id}"))
            .await
            .body["account"]["number"],
        "9541614850"
    );
    assert_eq!(standin.activate(&id)["status"], "active");
    let got = api_get(&base, &format!("/v1/subscriptions/{id}")).await;
    assert_eq!(got.body["status"], "active");
    assert_eq!(
        api_get(&base, &format!("/v1/subscription_intents/{intent}"))
            .await
            .body["subscription"]["status"],
        "active"
    );
    assert_eq!(standin.cancel(&id)["status"], "canceled");
    assert_eq!(
        api_get(&base, &format!("/v1/subscriptions/{id}"))
            .await
            .body["status"],
        "canceled"
    );
    // A canceled subscription cannot be charged either.
    let refused = api_post(&base, "/v1/charges", None, &charge_body(&id, 5000)).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["code"], "subscription_inactive");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_charge_is_created_once_per_idempotency_key() {
    let (standin, base) = start().await;
    let subscription = active_subscription(&standin, &base).await;
    let body = json!({
        "amount": 5000,
        "currency": "CLP",
        "subscription_id": subscription,
        "metadata": { "mandate": "m_1", "installment": 3, "retry": false },
    });
    let first = api_post(&base, "/v1/charges", Some("charge-m1-3"), &body).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let charge = &first.body;
    let id = charge["id"].as_str().unwrap();
    assert!(id.starts_with("ch_") && id.len() == 19, "{id}");
    assert_eq!(charge["object"], "charge");
    assert_eq!(charge["status"], "pending");
    assert_eq!(charge["amount"], 5000);
    assert_eq!(charge["currency"], "CLP");
    assert!(charge["failure_code"].is_null());
    assert_eq!(charge["metadata"], body["metadata"]);
    assert_eq!(charge["mode"], "test");
    assert!(charge.get("subscription_id").is_none());

    // The same key and parameters (in another order): the saved answer, nothing created.
    let reordered = json!({
        "subscription_id": subscription,
        "currency": "CLP",
        "metadata": { "retry": false, "installment": 3, "mandate": "m_1" },
        "amount": 5000,
    });
    let replay = api_post(&base, "/v1/charges", Some("charge-m1-3"), &reordered).await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.body, first.body);
    assert_eq!(standin.posts.lock().unwrap()["charge-m1-3"], 2);
    assert_eq!(standin.charges_created.load(Ordering::SeqCst), 1);

    // The same key with other parameters is refused, and changes nothing.
    let other = api_post(
        &base,
        "/v1/charges",
        Some("charge-m1-3"),
        &charge_body(&subscription, 6000),
    )
    .await;
    assert_eq!(other.status, 400);
    assert_eq!(other.body["error"]["type"], "invalid_request_error");
    assert_eq!(other.body["error"]["param"], "Idempotency-Key");
    assert_eq!(standin.charges_created.load(Ordering::SeqCst), 1);
    assert_eq!(
        api_get(&base, &format!("/v1/charges/{id}")).await.body,
        first.body
    );

    // An error is saved as well: once the currency is fixed, the key still answers it.
    let usd = json!({ "amount": 5000, "currency": "USD", "subscription_id": subscription });
    let refused = api_post(&base, "/v1/charges", Some("charge-usd"), &usd).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["code"], "invalid_currency");
    let again = api_post(&base, "/v1/charges", Some("charge-usd"), &usd).await;
    assert_eq!((again.status, &again.body), (400, &refused.body));
    let fixed = api_post(
        &base,
        "/v1/charges",
        Some("charge-usd"),
        &charge_body(&subscription, 5000),
    )
    .await;
    assert_eq!(fixed.status, 400);
    assert_eq!(standin.charges_created.load(Ordering::SeqCst), 1);

    // What the client sent is on record.
    let requests = standin.requests.lock().unwrap();
    let sent = requests
        .iter()
        .find(|r| r.method == Method::POST && r.uri == "/v1/charges")
        .unwrap();
    assert_eq!(sent.headers["idempotency-key"], "charge-m1-3");
    assert_eq!(sent.headers["authorization"], SECRET);
    assert_eq!(serde_json::from_str::<Value>(&sent.body).unwrap(), body);
}

#[tokio::test(flavor = "multi_thread")]
async fn charges_are_refused_on_pending_subscriptions_and_invalid_parameters() {
    let (standin, base) = start().await;
    let intent = through_widget(&base, SANDBOX_RUTS[0], SANDBOX_PASSWORD, "authorize").await;
    let pending = standin.intent(&intent).unwrap()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let refused = api_post(&base, "/v1/charges", None, &charge_body(&pending, 5000)).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["type"], "invalid_request_error");
    assert_eq!(refused.body["error"]["code"], "subscription_inactive");
    assert_eq!(refused.body["error"]["param"], "subscription_id");

    standin.activate(&pending);
    let active = pending;
    for (body, code, param) in [
        (
            json!({ "amount": 5000, "currency": "CLP" }),
            "missing_parameter",
            "subscription_id",
        ),
        (
            json!({ "currency": "CLP", "subscription_id": active }),
            "missing_parameter",
            "amount",
        ),
        (charge_body(&active, 0), "invalid_amount", "amount"),
        (charge_body(&active, -5), "invalid_amount", "amount"),
        (
            json!({ "amount": 5000.5, "currency": "CLP", "subscription_id": active }),
            "invalid_amount",
            "amount",
        ),
        (
            json!({ "amount": "5000", "currency": "CLP", "subscription_id": active }),
            "invalid_amount",
            "amount",
        ),
        (
            json!({ "amount": 5000, "currency": "clp", "subscription_id": active }),
            "invalid_currency",
            "currency",
        ),
        (
            charge_body("sub_unknown", 5000),
            "missing_resource",
            "subscription_id",
        ),
        (
            json!({ "amount": 5000, "currency": "CLP", "subscription_id": active, "metadata": "{}" }),
            "invalid_hash",
            "metadata",
        ),
        (
            json!({ "amount": 5000, "currency": "CLP", "subscription_id": active,
                    "metadata": { "nested": { "no": 1 } } }),
            "invalid_params",
            "metadata",
        ),
        (
            json!({ "amount": 5000, "currency": "CLP", "subscription": active }),
            "invalid_params",
            "subscription",
        ),
    ] {
        let refused = api_post(&base, "/v1/charges", None, &body).await;
        assert_eq!(refused.status, 400, "{body}");
        assert_eq!(refused.body["error"]["code"], code, "{body}");
        assert_eq!(refused.body["error"]["param"], param, "{body}");
    }
    let not_json = send(
        reqwest::Client::new()
            .post(format!("{base}/v1/charges"))
            .header("Authorization", SECRET)
            .body("amount=5000"),
    )
    .await;
    assert_eq!(not_json.status, 400);
    assert_eq!(not_json.body["error"]["code"], "invalid_json");
    let long_key = "k".repeat(256);
    let refused = api_post(
        &base,
        "/v1/charges",
        Some(&long_key),
        &charge_body(&active, 5000),
    )
    .await;
    assert_eq!(refused.status, 400);
    assert_eq!(standin.charges_created.load(Ordering::SeqCst), 0);

    let unknown = api_get(&base, "/v1/charges/ch_nope").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"]["code"], "missing_resource");
}

#[tokio::test(flavor = "multi_thread")]
async fn settled_charges_report_their_outcome() {
    let (standin, base) = start().await;
    let subscription = active_subscription(&standin, &base).await;
    let create = |amount: i64| {
        let (base, subscription) = (base.clone(), subscription.clone());
        async move {
            let created = api_post(
                &base,
                "/v1/charges",
                Some(&format!("settle-{amount}")),
                &charge_body(&subscription, amount),
            )
            .await;
            assert_eq!(created.status, 201, "{}", created.body);
            created.body["id"].as_str().unwrap().to_string()
        }
    };

    let paid = create(1000).await;
    assert_eq!(
        standin.settle_charge(&paid, Outcome::InProgress)["status"],
        "in_progress"
    );
    assert_eq!(
        api_get(&base, &format!("/v1/charges/{paid}")).await.body["status"],
        "in_progress"
    );
    standin.settle_charge(&paid, Outcome::Succeeded);
    let got = api_get(&base, &format!("/v1/charges/{paid}")).await;
    assert_eq!(got.body["status"], "succeeded");
    assert!(got.body["failure_code"].is_null());

    for (n, code) in FailureCode::ALL.into_iter().enumerate() {
        let failed = create(2000 + n as i64).await;
        standin.settle_charge(&failed, Outcome::Failed(code));
        let got = api_get(&base, &format!("/v1/charges/{failed}")).await;
        assert_eq!(got.body["status"], "failed");
        assert_eq!(got.body["failure_code"], code.as_str());
    }
    let canceled = create(3000).await;
    let settled = standin.settle_charge(&canceled, Outcome::Canceled);
    assert_eq!(settled["status"], "canceled");
    assert!(settled["failure_code"].is_null());
    assert_eq!(
        api_get(&base, &format!("/v1/charges/{canceled}"))
            .await
            .body,
        settled
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn charges_list_by_pages_with_a_link_header() {
    let (standin, base) = start().await;
    let first = active_subscription(&standin, &base).await;
    let second = active_subscription(&standin, &base).await;
    let mut ids = Vec::new();
    for n in 0..7 {
        let created = api_post(&base, "/v1/charges", None, &charge_body(&first, 100 + n)).await;
        ids.push(created.body["id"].as_str().unwrap().to_string());
    }
    api_post(&base, "/v1/charges", None, &charge_body(&second, 999)).await;
    standin.settle_charge(&ids[0], Outcome::Succeeded);

    // All of the first subscription's charges, most recent first, three a page.
    let mut seen = Vec::new();
    let mut next = Some(format!(
        "{base}/v1/charges?subscription_id={first}&per_page=3"
    ));
    let mut pages = 0;
    while let Some(url) = next {
        let page = send(
            reqwest::Client::new()
                .get(&url)
                .header("Authorization", SECRET),
        )
        .await;
        assert_eq!(page.status, 200);
        let items = page.body.as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|c| c["id"].as_str().unwrap().to_string()));
        let link = page.headers["link"].to_str().unwrap().to_string();
        assert!(
            link.contains("rel=\"first\"") && link.contains("rel=\"last\""),
            "{link}"
        );
        // PY's parsing: split at ",", then `<(url)>;\s*rel="(rel)"`.
        next = link.split(',').find_map(|part| {
            let part = part.trim();
            part.ends_with("rel=\"next\"")
                .then(|| part[1..part.find('>').unwrap()].to_string())
        });
        if let Some(url) = &next {
            assert!(url.contains("per_page=3") && url.contains(&first), "{url}");
        }
        pages += 1;
    }
    assert_eq!(pages, 3);
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(seen, newest_first);

    let succeeded = api_get(&base, "/v1/charges?status=succeeded").await;
    assert_eq!(succeeded.body.as_array().unwrap().len(), 1);
    assert_eq!(succeeded.body[0]["id"], ids[0]);
    let all = api_get(&base, "/v1/charges").await;
    assert_eq!(all.body.as_array().unwrap().len(), 8);
    assert!(
        !all.headers["link"]
            .to_str()
            .unwrap()
            .contains("rel=\"next\"")
    );
    let beyond = api_get(&base, "/v1/charges?page=5&per_page=3").await;
    assert_eq!(beyond.body, json!([]));
    let recent = api_get(
        &base,
        "/v1/charges?since=2020-01-01T00:00:00.000Z&until=2999-01-01",
    )
    .await;
    assert_eq!(recent.body.as_array().unwrap().len(), 8);

    for query in [
        "per_page=301",
        "page=0",
        "status=paid",
        "subscription=sub_x",
        "subscription_id=sub_unknown",
        "since=yesterday",
    ] {
        let refused = api_get(&base, &format!("/v1/charges?{query}")).await;
        assert_eq!(refused.status, 400, "{query}");
        assert_eq!(
            refused.body["error"]["type"], "invalid_request_error",
            "{query}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_charge_goes_through_after_its_client_gives_up() {
    let (standin, base) = start().await;
    let subscription = active_subscription(&standin, &base).await;
    *standin.latency.lock().unwrap() = Duration::from_millis(600);
    let body = charge_body(&subscription, 5000);
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(150))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(format!("{base}/v1/charges"))
        .header("Authorization", SECRET)
        .header("Idempotency-Key", "slow")
        .json(&body)
        .send()
        .await;
    assert!(gave_up.is_err());
    // Asked again while Fintoc still processes the first: refused, nothing saved for it.
    let busy = api_post(&base, "/v1/charges", Some("slow"), &body).await;
    assert_eq!(busy.status, 409, "{}", busy.body);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let answered = api_post(&base, "/v1/charges", Some("slow"), &body).await;
    assert_eq!(answered.status, 201, "{}", answered.body);
    assert_eq!(answered.body["status"], "pending");
    assert_eq!(standin.charges_created.load(Ordering::SeqCst), 1);
    assert_eq!(standin.posts.lock().unwrap()["slow"], 3);

    // Two charges at once are processed at once.
    let (one, two) = (charge_body(&subscription, 1), charge_body(&subscription, 2));
    let (a, b) = tokio::join!(
        api_post(&base, "/v1/charges", Some("a"), &one),
        api_post(&base, "/v1/charges", Some("b"), &two),
    );
    assert_eq!((a.status, b.status), (201, 201));
    assert!(standin.max_in_flight.load(Ordering::SeqCst) >= 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_limit_answers_429() {
    let (standin, base) = start().await;
    *standin.rate_limit.lock().unwrap() = Some(5);
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(api_get(&base, "/v1/charges").await.status);
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429]);
    let limited = api_get(&base, "/v1/charges").await;
    assert_eq!(limited.body["error"]["code"], "rate_limit_exceeded");
    *standin.rate_limit.lock().unwrap() = None;
    assert_eq!(api_get(&base, "/v1/charges").await.status, 200);
}

/// Fintoc's recorded event and signature (fintoc-python `tests/test_webhook.py`: the fixture
/// with all whitespace removed, secret `whsec_test_secret`, `t=1743890251`).
#[test]
fn the_webhook_signature_reproduces_fintocs_test_vector() {
    let payload = concat!(
        r#"{"id":"evt_2AaZeLCz0GjOW5zj","type":"payment_intent.succeeded","mode":"test","#,
        r#""created_at":"2025-04-05T21:57:31.834Z","data":{"id":"pi_2vKOKniSGXRhXTKrJ67VXZxGCVt","#,
        r#""mode":"test","amount":1,"object":"payment_intent","status":"succeeded","#,
        r#""currency":"MXN","metadata":{},"created_at":"2025-04-05T21:57:17Z","#,
        r#""expires_at":null,"error_reason":null,"payment_type":"bank_transfer","#,
        r#""reference_id":null,"widget_token":null,"customer_email":null,"#,
        r#""sender_account":{"type":"checking_account","number":"501514890244223279","#,
        r#""holder_id":"mfiu593501oe4","institution_id":"mx_stp"},"business_profile":null,"#,
        r#""transaction_date":null,"recipient_account":{"type":"checking_account","#,
        r#""number":"646180357600000000","holder_id":"fsm211008hz9","institution_id":"mx_stp"},"#,
        r#""payment_type_options":{}},"object":"event"}"#,
    );
    assert_eq!(payload.len(), 785);
    assert_eq!(
        signature("whsec_test_secret", 1743890251, payload),
        "t=1743890251,v1=11b98dd8f5500109246aa4d9875fad2e97d462560b012a5f50ff924411de0b0f"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn signed_events_carry_fintocs_envelope() {
    let (standin, base) = start().await;
    let intent = through_widget(&base, SANDBOX_RUTS[0], SANDBOX_PASSWORD, "authorize").await;
    let subscription_id = standin.intent(&intent).unwrap()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let activated = standin.activate(&subscription_id);
    assert_eq!(standin.subscription(&subscription_id).unwrap(), activated);
    let charge = api_post(
        &base,
        "/v1/charges",
        None,
        &charge_body(&subscription_id, 700),
    )
    .await;
    let charge_id = charge.body["id"].as_str().unwrap();
    let failed = standin.settle_charge(charge_id, Outcome::Failed(FailureCode::InsufficientFunds));
    assert_eq!(standin.charge(charge_id).unwrap(), failed);

    let secret = "whsec_mandato_standin";
    for (event_type, data) in [
        (
            "subscription_intent.succeeded",
            standin.intent(&intent).unwrap(),
        ),
        ("subscription.activated", activated),
        ("charge.failed", failed),
    ] {
        let (body, header) = standin.signed_event(secret, event_type, data.clone(), 1743890251);
        let event: Value = serde_json::from_str(&body).unwrap();
        let keys: Vec<&str> = event
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["id", "type", "mode", "created_at", "data", "object"]);
        assert!(event["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(event["type"], event_type);
        assert_eq!(event["mode"], "test");
        assert_eq!(event["object"], "event");
        assert_eq!(event["created_at"], "2025-04-05T21:57:31.000Z");
        assert_eq!(event["data"], data);
        assert_eq!(body, event.to_string(), "compact JSON");

        // Verified as a receiver does: split at ",", then at "=".
        let parts: HashMap<&str, &str> = header
            .split(',')
            .filter_map(|part| part.split_once('='))
            .collect();
        assert_eq!(parts["t"], "1743890251");
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{}.{body}", parts["t"]).as_bytes());
        assert_eq!(parts["v1"], hex::encode(mac.finalize().into_bytes()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_https_stand_in_serves_the_api_and_the_widget() {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "fintoc stand-in test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let (_standin, base) = start_https(&cert.pem(), &key.serialize_pem()).await;
    assert!(base.starts_with("https://localhost:"), "{base}");
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_cert.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    let created = send(
        client
            .post(format!("{base}/v1/subscription_intents"))
            .header("Authorization", SECRET)
            .json(&json!({})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let script = client
        .get(format!("{base}/widget/v1/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(script.contains(&format!("\"{base}\"")), "{script}");
}
