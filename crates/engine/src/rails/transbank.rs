//! Transbank Oneclick Mall over REST (API v1.2): the card inscription on Webpay's own page and
//! the recurring authorizations of a commerce's cards rail (CONTRACT 13).
//!
//! The wire follows Transbank's official Python SDK (`TransbankDevelopers/transbank-sdk-python`
//! at 195398a): `transbank/webpay/oneclick/mall_inscription.py` and `mall_transaction.py` for
//! paths and bodies, `transbank/common/headers_builder.py` for the headers,
//! `transbank/common/api_constants.py` for the lengths, `transbank/common/request_service.py`
//! for errors (`{"error_message": ...}` on any non-2xx), and the fixtures in
//! `tests/mocks/responses_api_mocks.py` (`inscription_finish_response`, `authorize_response`,
//! `captured_status_response`, `buy_order_not_found`) for the answers. The response codes
//! come from Transbank's Oneclick reference (transbankdevelopers.cl/referencia/oneclick);
//! [`rejection_of`] maps them.
//!
//! Card data never passes here: the customer types it on Webpay; we keep the `tbk_user`
//! Transbank answers, the card type and the last four digits.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use mandato_core::domain::acquirer::{ResponseCodeLevel, TransbankCodes};
use mandato_core::domain::instrument::InstrumentInput;
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::{PaymentMethod, RejectionCode};
use mandato_core::processor::{ChargeRequest, ChargeResult, Enrolled, Processor, ProcessorError};
use mandato_core::secret::Secret;

use crate::config::AcquirerLimits;
use mandato_store::acquirer_calls::AcquirerCall;

pub use super::calls::CallLog;

mod webpay_plus;

pub use webpay_plus::{WebpayOutcome, WebpayStarted};

/// Oneclick Mall's REST root (`ONECLICK_ENDPOINT` in the SDK).
pub const ONECLICK_PATH: &str = "/rswebpaytransaction/api/oneclick/v1.2";
/// Webpay Plus's REST root (`WEBPAY_ENDPOINT` in the SDK).
pub const WEBPAY_PATH: &str = "/rswebpaytransaction/api/webpay/v1.2";

/// Which of the commerce's Transbank products a call goes to: each has its own REST root and
/// its own commerce code in `Tbk-Api-Key-Id`.
#[derive(Clone, Copy)]
enum Product {
    OneclickMall,
    WebpayPlus,
}
/// `ApiConstants.BUY_ORDER_LENGTH`.
pub const BUY_ORDER_MAX: usize = 26;
/// `ApiConstants.USER_NAME_LENGTH` and `EMAIL_LENGTH`.
pub const USERNAME_MAX: usize = 40;
pub const EMAIL_MAX: usize = 100;

/// What a call is, for the acquirer call log: the operation and the buy order it concerns
/// (an answer's own `buy_order` stands in when the request names none).
#[derive(Clone, Copy)]
struct Op<'a> {
    name: &'static str,
    reference: Option<&'a str>,
}

impl<'a> Op<'a> {
    fn new(name: &'static str) -> Op<'a> {
        Op {
            name,
            reference: None,
        }
    }

    fn about(name: &'static str, reference: &'a str) -> Op<'a> {
        Op {
            name,
            reference: Some(reference),
        }
    }
}

/// A commerce's Oneclick Mall: its codes, its key and where its API is.
pub struct Oneclick {
    /// Whose calls these are, and where they are logged (`acquirer_calls`).
    log: CallLog,
    base_url: String,
    codes: TransbankCodes,
    secret: Secret<String>,
    client: reqwest::Client,
    runtime: Runtime,
    /// How many authorizations `charge_many` keeps in flight at once, and how long one call
    /// may take before its outcome counts as unknown.
    limits: AcquirerLimits,
}

/// Where the blocking calls' futures run: the engine's runtime, or one owned for callers
/// without a runtime (the command line's `charge-run`).
#[derive(Clone)]
pub struct Runtime {
    handle: tokio::runtime::Handle,
    _owned: Option<std::sync::Arc<tokio::runtime::Runtime>>,
}

impl Runtime {
    pub fn current_or_own() -> std::io::Result<Runtime> {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            return Ok(Runtime {
                handle,
                _owned: None,
            });
        }
        let owned = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        Ok(Runtime {
            handle: owned.handle().clone(),
            _owned: Some(std::sync::Arc::new(owned)),
        })
    }

    pub(super) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }
}

/// An inscription started: the browser posts `TBK_TOKEN = token` to `url_webpay`.
#[derive(Debug, Clone, Deserialize)]
pub struct InscriptionStarted {
    pub token: String,
    pub url_webpay: String,
}

/// A finished inscription as Transbank answers it (`inscription_finish_response`).
#[derive(Debug, Deserialize)]
struct InscriptionAnswer {
    response_code: i64,
    tbk_user: Option<String>,
    card_type: Option<String>,
    card_number: Option<String>,
}

/// How an inscription ended.
#[derive(Debug)]
pub enum InscriptionOutcome {
    /// The card is inscribed: `enrolled.token` is the `tbk_user`.
    Approved {
        enrolled: Enrolled,
        method: PaymentMethod,
    },
    /// Transbank refused it (`response_code` other than 0).
    Refused { response_code: i64 },
}

/// One authorization's detail (`authorize_response.details[]`).
#[derive(Debug, Deserialize)]
struct Detail {
    status: Option<String>,
    authorization_code: Option<String>,
    response_code: i64,
    commerce_code: String,
    buy_order: String,
}

#[derive(Debug, Deserialize)]
struct Authorization {
    buy_order: String,
    details: Vec<Detail>,
}

/// What a call brought back.
enum Answer {
    Ok(Value),
    /// A 4xx with Transbank's `error_message`: the request was refused and did nothing.
    Refused {
        status: u16,
        message: String,
    },
}

/// The parent and child buy orders of an attempt: derived from its idempotency key, so the
/// same attempt always sends the same orders and no two attempts share one. 25 hex digits of
/// SHA-256 (100 bits) after a one-letter prefix fill Transbank's 26 characters.
pub fn buy_orders(idempotency_key: &str) -> (String, String) {
    let digest = hex::encode(Sha256::digest(idempotency_key.as_bytes()));
    let tail = &digest[..BUY_ORDER_MAX - 1];
    (format!("P{tail}"), format!("C{tail}"))
}

/// The rejection code of a Transbank `response_code` other than 0, read at the commerce's
/// level (Oneclick reference's limits; Webpay's authorization codes, level 1 and level 2).
///
/// Oneclick's daily amount and count limits (-97 "máximo monto diario de pago excedido", -99
/// "máxima cantidad de pagos diarios excedido") pass with the day, as insufficient funds do,
/// so they are soft and retried per the commerce's policy; the per-payment limit (-98) fails
/// the same amount every time. At level 1 the issuers' reasons are grouped (-1 to -5) and
/// final. Level 2 tells them apart: "Excede monto máximo" (-3) is soft as the daily limits
/// are, an invalid expiry date (-4) or an expired card (-8) is `EXPIRED_CARD`, and the rest
/// (invalid or blocked card, general refusal, the brands' retry cap -11) are final. Level 2's
/// "Error de conexión" (-2) has no soft code of ours that would not tell the customer
/// something false, so it is final too: the merchant's next mandate charge tries again.
pub fn rejection_of(level: ResponseCodeLevel, response_code: i64) -> RejectionCode {
    match (level, response_code) {
        (_, -97 | -99) => RejectionCode::InsufficientFunds,
        (ResponseCodeLevel::Two, -3) => RejectionCode::InsufficientFunds,
        (ResponseCodeLevel::Two, -4 | -8) => RejectionCode::ExpiredCard,
        _ => RejectionCode::CardDeclined,
    }
}

/// The method a card inscribed at Transbank is charged as (CONTRACT 13): debit → 4, prepaid
/// → 11, otherwise credit (3). Transbank's `card_type` names the brand; "Redcompra" is its
/// debit network, "Prepago" its prepaid one.
pub fn method_of(card_type: &str) -> PaymentMethod {
    match card_type.to_ascii_lowercase().as_str() {
        "redcompra" => PaymentMethod::DebitCard,
        "prepago" => PaymentMethod::PrepaidCard,
        _ => PaymentMethod::CreditCard,
    }
}

impl Oneclick {
    /// The rejection of `response_code` at this commerce's level.
    pub fn rejection_of(&self, response_code: i64) -> RejectionCode {
        rejection_of(self.codes.response_codes, response_code)
    }

    pub fn new(
        log: CallLog,
        base_url: &str,
        codes: TransbankCodes,
        secret: Secret<String>,
        client: reqwest::Client,
        runtime: Runtime,
        limits: AcquirerLimits,
    ) -> Oneclick {
        Oneclick {
            log,
            base_url: base_url.trim_end_matches('/').to_string(),
            codes,
            secret,
            client,
            runtime,
            limits: AcquirerLimits {
                in_flight: limits.in_flight.max(1),
                ..limits
            },
        }
    }

    /// Runs calls to Transbank to their end on this (non-async) thread, then logs them.
    fn run<F: std::future::Future>(&self, calls: F) -> F::Output {
        let output = self.runtime.block_on(calls);
        self.log.flush();
        output
    }

    /// One call to Oneclick Mall, blocking this (non-async) thread until it answers.
    fn call(
        &self,
        op: Op<'_>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, ProcessorError> {
        self.run(self.send(op, method, path, body))
    }

    /// One call to Oneclick Mall: its answer, a refusal (4xx), or an unknown outcome.
    async fn send(
        &self,
        op: Op<'_>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, ProcessorError> {
        self.send_to(Product::OneclickMall, op, method, path, body)
            .await
    }

    /// One call to a Transbank product: its answer, a refusal (4xx), or an unknown outcome.
    /// Every call is kept for the call log with its status, response code and duration.
    async fn send_to(
        &self,
        product: Product,
        op: Op<'_>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, ProcessorError> {
        let started = Instant::now();
        let (answer, http_status) = match self.answer(product, method, path, body).await {
            Ok((answer, status)) => (answer, Some(i64::from(status))),
            Err(e) => (Err(e), None),
        };
        let value = match &answer {
            Ok(Answer::Ok(value)) => Some(value),
            _ => None,
        };
        let response_code = value.and_then(|v| {
            v["response_code"]
                .as_i64()
                .or(v["details"][0]["response_code"].as_i64())
        });
        let reference = op
            .reference
            .map(str::to_string)
            .or_else(|| value.and_then(|v| v["buy_order"].as_str().map(str::to_string)));
        self.log.keep(AcquirerCall {
            commerce_id: self.log.commerce_id(),
            operation: op.name.to_string(),
            reference,
            http_status,
            response_code,
            duration_ms: started.elapsed().as_millis().min(i64::MAX as u128) as i64,
            error: match &answer {
                Err(e) => Some(e.to_string()),
                Ok(Answer::Refused { message, .. }) => Some(message.clone()),
                Ok(Answer::Ok(_)) => None,
            },
            created_at: self.log.now(),
        });
        answer
    }

    /// Sends a call and reads its answer: `Err` only when no answer arrived.
    async fn answer(
        &self,
        product: Product,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(Result<Answer, ProcessorError>, u16), ProcessorError> {
        let (root, commerce_code) = match product {
            Product::OneclickMall => (ONECLICK_PATH, &self.codes.mall),
            Product::WebpayPlus => (WEBPAY_PATH, &self.codes.webpay),
        };
        let url = format!("{}{root}{path}", self.base_url);
        let mut request = self
            .client
            .request(method.clone(), &url)
            .timeout(self.limits.timeout)
            .header("Tbk-Api-Key-Id", commerce_code.as_str())
            .header("Tbk-Api-Key-Secret", self.secret.expose())
            .header("Content-Type", "application/json");
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let started = Instant::now();
        let outcome = async {
            let response = request.send().await?;
            let status = response.status();
            let text = response.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        }
        .await;
        let elapsed = started.elapsed().as_millis();
        let (status, text) = match outcome {
            Ok(answer) => answer,
            Err(e) => {
                // Without the URL: an inscription's path holds its token.
                let e = e.without_url();
                tracing::warn!(%method, path = %redacted(product, path), elapsed_ms = elapsed, error = %e, "transbank unreachable");
                return Err(ProcessorError::Unavailable(format!("transbank: {e}")));
            }
        };
        tracing::info!(%method, path = %redacted(product, path), status = status.as_u16(), elapsed_ms = elapsed, "transbank call");
        let code = status.as_u16();
        if status.is_success() {
            let value = if text.trim().is_empty() {
                Ok(Answer::Ok(Value::Null))
            } else {
                serde_json::from_str(&text).map(Answer::Ok).map_err(|e| {
                    ProcessorError::Unavailable(format!("transbank answered no JSON: {e}"))
                })
            };
            return Ok((value, code));
        }
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| {
                v["error_message"]
                    .as_str()
                    .or(v["description"].as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default();
        // 401/403 (a wrong key or code) and 5xx say nothing of the customer: the outcome
        // stays unknown and is asked for again, rather than declining anyone for our error.
        if status.is_client_error() && !matches!(code, 401 | 403 | 408 | 429) {
            return Ok((
                Ok(Answer::Refused {
                    status: code,
                    message,
                }),
                code,
            ));
        }
        Ok((
            Err(ProcessorError::Unavailable(format!(
                "transbank answered {status}: {message}"
            ))),
            code,
        ))
    }

    /// Starts an inscription for `username` (our `internalUserId`); Transbank brings the
    /// browser back to `response_url`.
    pub fn start_inscription(
        &self,
        username: &str,
        email: &str,
        response_url: &str,
    ) -> Result<InscriptionStarted, ProcessorError> {
        let body = json!({
            "username": truncate(username, USERNAME_MAX),
            "email": truncate(email, EMAIL_MAX),
            "response_url": response_url,
        });
        match self.call(
            Op::new("oneclick.inscription.start"),
            reqwest::Method::POST,
            "/inscriptions",
            Some(body),
        )? {
            Answer::Ok(value) => serde_json::from_value(value).map_err(|e| {
                ProcessorError::Unavailable(format!("transbank inscription answer: {e}"))
            }),
            Answer::Refused { status, message } => Err(ProcessorError::Refused(format!(
                "transbank refused the inscription ({status}): {message}"
            ))),
        }
    }

    /// Finishes the inscription `token` after the customer came back from Webpay.
    pub fn finish_inscription(&self, token: &str) -> Result<InscriptionOutcome, ProcessorError> {
        let path = format!("/inscriptions/{}", path_segment(token));
        let value = match self.call(
            Op::new("oneclick.inscription.finish"),
            reqwest::Method::PUT,
            &path,
            None,
        )? {
            Answer::Ok(value) => value,
            Answer::Refused { status, message } => {
                return Err(ProcessorError::Refused(format!(
                    "transbank refused to finish the inscription ({status}): {message}"
                )));
            }
        };
        let answer: InscriptionAnswer = serde_json::from_value(value).map_err(|e| {
            ProcessorError::Unavailable(format!("transbank inscription answer: {e}"))
        })?;
        let (0, Some(tbk_user)) = (answer.response_code, answer.tbk_user) else {
            return Ok(InscriptionOutcome::Refused {
                response_code: answer.response_code,
            });
        };
        let card_type = answer.card_type.unwrap_or_default();
        let digits: String = answer
            .card_number
            .unwrap_or_default()
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let last4 = digits[digits.len().saturating_sub(4)..].to_string();
        Ok(InscriptionOutcome::Approved {
            method: method_of(&card_type),
            enrolled: Enrolled {
                token: tbk_user,
                brand: (!card_type.is_empty()).then_some(card_type),
                last4,
            },
        })
    }

    /// Deletes an inscription at Transbank (the card is no longer used by any mandate).
    pub fn delete_inscription(&self, username: &str, tbk_user: &str) -> Result<(), ProcessorError> {
        let body = json!({ "username": username, "tbk_user": tbk_user });
        match self.call(
            Op::new("oneclick.inscription.delete"),
            reqwest::Method::DELETE,
            "/inscriptions",
            Some(body),
        )? {
            Answer::Ok(_) => Ok(()),
            Answer::Refused { status, message } => Err(ProcessorError::Refused(format!(
                "transbank refused to delete the inscription ({status}): {message}"
            ))),
        }
    }

    /// What Transbank holds for an attempt's parent buy order: `None` when it never saw it.
    async fn status_of(
        &self,
        idempotency_key: &str,
    ) -> Result<Option<ChargeResult>, ProcessorError> {
        let (parent, child) = buy_orders(idempotency_key);
        let path = format!("/transactions/{parent}");
        match self
            .send(
                Op::about("oneclick.status", &parent),
                reqwest::Method::GET,
                &path,
                None,
            )
            .await?
        {
            Answer::Ok(value) => self.outcome(value, &child).map(Some),
            // `buy_order_not_found`: the authorization never reached Transbank.
            Answer::Refused { message, .. } if message.contains("not found") => Ok(None),
            Answer::Refused { status, message } => Err(ProcessorError::Unavailable(format!(
                "transbank status ({status}): {message}"
            ))),
        }
    }

    /// The outcome of an authorization (or a status) answer for our child buy order.
    fn outcome(&self, value: Value, child: &str) -> Result<ChargeResult, ProcessorError> {
        let answer: Authorization = serde_json::from_value(value).map_err(|e| {
            ProcessorError::Unavailable(format!("transbank authorization answer: {e}"))
        })?;
        let detail = answer
            .details
            .into_iter()
            .find(|d| d.buy_order == child && d.commerce_code == self.codes.child.as_str())
            .ok_or_else(|| {
                ProcessorError::Unavailable(format!(
                    "transbank answered buy order {} without our detail",
                    answer.buy_order
                ))
            })?;
        let approved = detail.response_code == 0
            && matches!(detail.status.as_deref(), Some("AUTHORIZED" | "CAPTURED"));
        Ok(if approved {
            ChargeResult::Approved {
                authorization_code: detail.authorization_code.unwrap_or_default(),
                // Transbank reports no fee at charge time; the ledger uses the schedule.
                fee: None,
            }
        } else {
            ChargeResult::Rejected {
                code: self.rejection_of(detail.response_code),
            }
        })
    }
}

impl Oneclick {
    /// One Oneclick Mall authorization for an attempt (`mall_transaction.py` `authorize`):
    /// the child store's detail, in whole pesos, with the attempt's buy orders;
    /// `installments_number` 0 (no installments), as the SDK's tests send.
    async fn authorize(&self, request: &ChargeRequest<'_>) -> Result<ChargeResult, ProcessorError> {
        if request.amount.currency() != Currency::Clp {
            return Err(ProcessorError::Refused(
                "Transbank charges whole pesos only".into(),
            ));
        }
        let pesos = request.amount.amount().trunc().to_string();
        let (parent, child) = buy_orders(request.idempotency_key);
        let body = json!({
            "username": request.customer_ref,
            "tbk_user": request.token,
            "buy_order": parent,
            "details": [{
                "commerce_code": self.codes.child.as_str(),
                "buy_order": child,
                "amount": pesos.parse::<i64>().unwrap_or(0),
                "installments_number": 0,
            }],
        });
        match self
            .send(
                Op::about("oneclick.authorize", &parent),
                reqwest::Method::POST,
                "/transactions",
                Some(body),
            )
            .await?
        {
            Answer::Ok(value) => self.outcome(value, &child),
            // A refusal of a buy order an earlier send of this attempt already placed (a
            // lost answer) is no decline: Transbank's status of the order holds the outcome.
            Answer::Refused { status, message } => {
                match self.status_of(request.idempotency_key).await? {
                    Some(known) => Ok(known),
                    None => {
                        tracing::info!(status, %message, "transbank refused an authorization");
                        Ok(ChargeResult::Rejected {
                            code: RejectionCode::CardDeclined,
                        })
                    }
                }
            }
        }
    }
}

impl Processor for Oneclick {
    /// Cards are inscribed on Webpay's page (`start_inscription`), never typed here.
    fn enroll(&self, _instrument: &InstrumentInput) -> Result<Enrolled, ProcessorError> {
        Err(ProcessorError::Refused(
            "cards are inscribed on Webpay's page, not typed here".into(),
        ))
    }

    fn charge(&self, request: &ChargeRequest<'_>) -> Result<ChargeResult, ProcessorError> {
        self.run(self.authorize(request))
    }

    /// Up to `in_flight` authorizations at once, answered in the requests' order: a page of
    /// a run against an acquirer that answers in L seconds takes about N × L / in_flight.
    fn charge_many(
        &self,
        requests: &[ChargeRequest<'_>],
    ) -> Vec<Result<ChargeResult, ProcessorError>> {
        use futures_util::stream::{self, StreamExt};
        self.run(
            stream::iter(requests.iter().map(|r| self.authorize(r)))
                .buffered(self.limits.in_flight)
                .collect(),
        )
    }

    fn status(&self, idempotency_key: &str) -> Result<Option<ChargeResult>, ProcessorError> {
        self.run(self.status_of(idempotency_key))
    }

    /// Twice the call limit: a send cut by a crash is still processed at Transbank after our
    /// connection is gone, and its status says "not found" until it is recorded there.
    fn resend_after(&self) -> Duration {
        self.limits.timeout * 2
    }

    /// A Oneclick Mall refund of the child detail (`mall_transaction.py` `refund`): Transbank
    /// answers `REVERSED` (same day) or `NULLIFIED`; "already fully refunded" means an earlier
    /// request of ours went through.
    fn refund(&self, idempotency_key: &str, amount: &Money) -> Result<(), ProcessorError> {
        let (parent, child) = buy_orders(idempotency_key);
        let body = json!({
            "commerce_code": self.codes.child.as_str(),
            "detail_buy_order": child,
            "amount": amount.amount().trunc().to_string().parse::<i64>().unwrap_or(0),
        });
        let path = format!("/transactions/{parent}/refunds");
        match self.call(
            Op::about("oneclick.refund", &parent),
            reqwest::Method::POST,
            &path,
            Some(body),
        )? {
            Answer::Ok(value) => match value["type"].as_str() {
                Some("REVERSED" | "NULLIFIED") => Ok(()),
                other => Err(ProcessorError::Unavailable(format!(
                    "transbank answered a refund of type {other:?}"
                ))),
            },
            Answer::Refused { message, .. } if message.contains("already fully refunded") => Ok(()),
            Answer::Refused { status, message } => Err(ProcessorError::Refused(format!(
                "transbank refused the refund ({status}): {message}"
            ))),
        }
    }

    /// Oneclick answers every authorization at once; nothing is left to settle.
    fn settle(&self, idempotency_key: &str) -> Result<ChargeResult, ProcessorError> {
        self.run(self.status_of(idempotency_key))?
            .ok_or_else(|| ProcessorError::Refused("unknown charge".into()))
    }
}

fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// A token or buy order as a path segment: Transbank's are alphanumeric; anything else is
/// percent-encoded rather than trusted.
fn path_segment(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A path for the log: an inscription token is a bearer credential, so it is cut; so is a
/// Webpay Plus transaction's token, which names the customer's payment.
fn redacted(product: Product, path: &str) -> String {
    match product {
        Product::OneclickMall if path.starts_with("/inscriptions/") => {
            "/inscriptions/{token}".to_string()
        }
        Product::WebpayPlus if path.starts_with("/transactions/") => {
            let tail = if path.ends_with("/refunds") {
                "/refunds"
            } else {
                ""
            };
            format!("/transactions/{{token}}{tail}")
        }
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buy_orders_fit_transbank_and_follow_the_attempt() {
        let (parent, child) = buy_orders("ins_0123456789abcdefghij-2026-11-30");
        assert_eq!(parent.len(), BUY_ORDER_MAX);
        assert_eq!(child.len(), BUY_ORDER_MAX);
        assert_ne!(parent, child);
        assert_eq!(buy_orders("ins_0123456789abcdefghij-2026-11-30").0, parent);
        assert_ne!(buy_orders("ins_0123456789abcdefghij-2026-12-01").0, parent);
    }

    #[test]
    fn limits_are_soft_and_other_declines_final() {
        use ResponseCodeLevel::{One, Two};
        for code in [-97, -99] {
            assert!(rejection_of(One, code).is_soft(), "{code}");
            assert!(rejection_of(Two, code).is_soft(), "{code}");
        }
        for code in [-1, -2, -3, -4, -5, -96, -98] {
            assert_eq!(
                rejection_of(One, code),
                RejectionCode::CardDeclined,
                "{code}"
            );
        }
    }

    #[test]
    fn level_two_tells_the_issuers_reasons_apart() {
        use ResponseCodeLevel::Two;
        assert_eq!(rejection_of(Two, -3), RejectionCode::InsufficientFunds);
        assert_eq!(rejection_of(Two, -4), RejectionCode::ExpiredCard);
        assert_eq!(rejection_of(Two, -8), RejectionCode::ExpiredCard);
        for code in [-1, -2, -5, -6, -7, -9, -10, -11, -96, -98] {
            assert_eq!(
                rejection_of(Two, code),
                RejectionCode::CardDeclined,
                "{code}"
            );
        }
    }

    #[test]
    fn the_card_type_decides_the_method() {
        assert_eq!(method_of("Visa"), PaymentMethod::CreditCard);
        assert_eq!(method_of("Redcompra"), PaymentMethod::DebitCard);
        assert_eq!(method_of("Prepago"), PaymentMethod::PrepaidCard);
    }
}
