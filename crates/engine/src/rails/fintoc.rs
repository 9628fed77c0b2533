//! Fintoc Direct Debit over REST (`https://api.fintoc.com/v1`): the bank rail's subscription
//! intents (the customer authorizes the debit at their bank through Fintoc's widget), the
//! subscriptions they make, and one charge per installment attempt (CONTRACT 13).
//!
//! The wire follows Fintoc's API reference (docs.fintoc.com, "Direct Debit (legacy)":
//! `subscription-intents-{create,get}`, `direct-debit-subscription-object`,
//! `charges-{create,get}`, `idempotent-requests`, `errors-object`, `authentication`) and its
//! SDKs (`fintoc-com/fintoc-python` at 55f141e: `fintoc/client.py` sends the secret key as
//! `Authorization` with no scheme, and an `Idempotency-Key` on every POST). Where the
//! reference is silent (the HTTP status of a creation, the error of a charge on a subscription
//! that is not active), any 2xx is an answer and any 4xx other than 401/409/429 a refusal.
//!
//! A charge's id is Fintoc's, not ours: the attempt's idempotency key goes as
//! `Idempotency-Key` (Fintoc answers a repeated key with the first answer for 24 hours, so a
//! crash before we recorded the charge is safe) and the charge is recorded under the key
//! (`fintoc_charges`) as soon as Fintoc answers, so later runs can ask for its outcome.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use mandato_core::domain::acquirer::FINTOC_API;
use mandato_core::domain::instrument::InstrumentInput;
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::RejectionCode;
use mandato_core::processor::{ChargeRequest, ChargeResult, Enrolled, Processor, ProcessorError};
use mandato_core::secret::Secret;
use mandato_store::Store;
use mandato_store::acquirer_calls::AcquirerCall;

use super::calls::CallLog;
use super::transbank::Runtime;
use crate::config::AcquirerLimits;

/// Fintoc's widget script (`docs/widget-web-integration`).
pub const WIDGET_SCRIPT: &str = "https://js.fintoc.com/v1/";

/// A commerce's Fintoc account.
pub struct Fintoc {
    log: CallLog,
    base_url: String,
    public_key: String,
    secret: Secret<String>,
    client: reqwest::Client,
    runtime: Runtime,
    limits: AcquirerLimits,
    store: Arc<Store>,
}

/// A subscription intent just created: the widget opens with its token (valid 10 minutes).
#[derive(Debug, Clone, Deserialize)]
pub struct IntentStarted {
    pub id: String,
    pub widget_token: String,
}

/// The bank account behind a subscription (`account` of the subscription object).
#[derive(Debug, Clone, Deserialize)]
pub struct Account {
    pub number: Option<String>,
    pub holder_id: Option<String>,
    pub institution: Option<Institution>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Institution {
    pub name: Option<String>,
}

/// A subscription: `pending` while the bank validates it, `active` once it can be charged,
/// `canceled`.
#[derive(Debug, Clone, Deserialize)]
pub struct Subscription {
    pub id: String,
    pub status: String,
    pub account: Option<Account>,
}

/// A subscription intent as Fintoc holds it: `created`, `in_progress`, `succeeded`,
/// `failed` or `rejected`, with the subscription once it succeeded.
#[derive(Debug, Clone, Deserialize)]
pub struct Intent {
    pub id: String,
    pub status: String,
    pub public_error: Option<String>,
    pub subscription: Option<Subscription>,
}

/// The charge object's fields we read.
#[derive(Debug, Deserialize)]
struct Charge {
    id: String,
    status: String,
    failure_code: Option<String>,
}

/// What a call brought back.
enum Answer {
    Ok(Value),
    /// A 4xx with Fintoc's error: the request was refused and did nothing.
    Refused {
        status: u16,
        code: String,
        message: String,
    },
}

/// Our rejection code of a failed charge's `failure_code` (`charges-get`): insufficient funds
/// pass with time and are retried; the account gone, the subscription ended at the bank and
/// an amount over the bank's limit fail the same way every time.
pub fn rejection_of(failure_code: Option<&str>) -> RejectionCode {
    match failure_code {
        Some("insufficient_funds") => RejectionCode::InsufficientFunds,
        Some("bank_account_unavailable") => RejectionCode::AccountClosed,
        _ => RejectionCode::BankValidationFailed,
    }
}

impl Fintoc {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        log: CallLog,
        base_url: &str,
        public_key: &str,
        secret: Secret<String>,
        client: reqwest::Client,
        runtime: Runtime,
        limits: AcquirerLimits,
        store: Arc<Store>,
    ) -> Fintoc {
        Fintoc {
            log,
            base_url: base_url.trim_end_matches('/').to_string(),
            public_key: public_key.to_string(),
            secret,
            client,
            runtime,
            limits,
            store,
        }
    }

    /// The key the widget opens with (public by design).
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// Where the widget's script is: Fintoc's, or the one a test stand-in serves beside its
    /// API when the rail points elsewhere (a sandbox only accepts such a base URL).
    pub fn widget_script(&self) -> String {
        if self.base_url == FINTOC_API {
            WIDGET_SCRIPT.to_string()
        } else {
            format!("{}/widget/v1/", self.base_url)
        }
    }

    /// The origin the widget's script and frames come from, for the page's policy.
    pub fn widget_origin(&self) -> String {
        let script = self.widget_script();
        url::Url::parse(&script)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or(script)
    }

    fn run<F: std::future::Future>(&self, calls: F) -> F::Output {
        let output = self.runtime.block_on(calls);
        self.log.flush();
        output
    }

    /// One call to Fintoc: its answer, a refusal (4xx), or an unknown outcome; logged.
    async fn send(
        &self,
        operation: &'static str,
        reference: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Answer, ProcessorError> {
        let url = format!("{}{path}", self.base_url);
        let mut request = self
            .client
            .request(method.clone(), &url)
            .timeout(self.limits.timeout)
            .header("Authorization", self.secret.expose())
            .header("Content-Type", "application/json");
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
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
        let duration_ms = started.elapsed().as_millis().min(i64::MAX as u128) as i64;
        let mut call = AcquirerCall {
            commerce_id: self.log.commerce_id(),
            operation: operation.to_string(),
            reference: reference.map(str::to_string),
            http_status: None,
            response_code: None,
            duration_ms,
            error: None,
            created_at: self.log.now(),
        };
        let (status, text) = match outcome {
            Ok(answer) => answer,
            Err(e) => {
                let e = e.without_url();
                tracing::warn!(%method, operation, elapsed_ms = duration_ms, error = %e, "fintoc unreachable");
                call.error = Some(e.to_string());
                self.log.keep(call);
                return Err(ProcessorError::Unavailable(format!("fintoc: {e}")));
            }
        };
        call.http_status = Some(i64::from(status.as_u16()));
        tracing::info!(%method, operation, status = status.as_u16(), elapsed_ms = duration_ms, "fintoc call");
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        if status.is_success() {
            self.log.keep(call);
            return parsed
                .map(Answer::Ok)
                .ok_or_else(|| ProcessorError::Unavailable("fintoc answered no JSON".to_string()));
        }
        let error = parsed.as_ref().map(|v| &v["error"]);
        let code = error
            .and_then(|e| e["code"].as_str())
            .unwrap_or_default()
            .to_string();
        let message = error
            .and_then(|e| e["message"].as_str())
            .unwrap_or_default()
            .to_string();
        call.error = Some(format!("{code}: {message}"));
        self.log.keep(call);
        // A wrong key, a request still being processed under the same key, the rate limit
        // and 5xx say nothing of the customer: the outcome stays unknown.
        if status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 408 | 409 | 429) {
            return Ok(Answer::Refused {
                status: status.as_u16(),
                code,
                message,
            });
        }
        Err(ProcessorError::Unavailable(format!(
            "fintoc answered {status}: {code} {message}"
        )))
    }

    fn call(
        &self,
        operation: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, ProcessorError> {
        self.run(self.send(operation, None, method, path, body, None))
    }

    /// Creates a subscription intent for the widget (`subscription-intents-create`): the
    /// commerce's name is what the widget shows as the recipient.
    pub fn create_intent(&self, business_name: &str) -> Result<IntentStarted, ProcessorError> {
        let body = json!({ "business_profile": { "name": business_name } });
        // A fresh key: a retried creation must not make a second intent.
        let key = mandato_core::ids::new_token();
        let answer = self.run(self.send(
            "fintoc.intent.create",
            None,
            reqwest::Method::POST,
            "/v1/subscription_intents",
            Some(body),
            Some(&key),
        ))?;
        match answer {
            Answer::Ok(value) => serde_json::from_value(value)
                .map_err(|e| ProcessorError::Unavailable(format!("fintoc intent answer: {e}"))),
            Answer::Refused {
                status,
                code,
                message,
            } => Err(ProcessorError::Refused(format!(
                "fintoc refused the subscription intent ({status} {code}): {message}"
            ))),
        }
    }

    /// What Fintoc holds for a subscription intent (`subscription-intents-get`).
    pub fn intent(&self, id: &str) -> Result<Intent, ProcessorError> {
        let path = format!("/v1/subscription_intents/{}", segment(id));
        match self.call("fintoc.intent.get", reqwest::Method::GET, &path, None)? {
            Answer::Ok(value) => serde_json::from_value(value)
                .map_err(|e| ProcessorError::Unavailable(format!("fintoc intent answer: {e}"))),
            Answer::Refused {
                status,
                code,
                message,
            } => Err(ProcessorError::Refused(format!(
                "fintoc has no such intent ({status} {code}): {message}"
            ))),
        }
    }

    /// What Fintoc holds for a subscription.
    pub fn subscription(&self, id: &str) -> Result<Subscription, ProcessorError> {
        let path = format!("/v1/subscriptions/{}", segment(id));
        match self.call("fintoc.subscription.get", reqwest::Method::GET, &path, None)? {
            Answer::Ok(value) => serde_json::from_value(value).map_err(|e| {
                ProcessorError::Unavailable(format!("fintoc subscription answer: {e}"))
            }),
            Answer::Refused {
                status,
                code,
                message,
            } => Err(ProcessorError::Refused(format!(
                "fintoc has no such subscription ({status} {code}): {message}"
            ))),
        }
    }

    /// One charge for an attempt (`charges-create`), whole pesos, under the attempt's key.
    async fn create_charge(
        &self,
        request: &ChargeRequest<'_>,
    ) -> Result<ChargeResult, ProcessorError> {
        if request.amount.currency() != Currency::Clp {
            return Err(ProcessorError::Refused("Fintoc charges CLP only".into()));
        }
        let pesos: i64 = request
            .amount
            .amount()
            .trunc()
            .to_string()
            .parse()
            .map_err(|_| ProcessorError::Refused("amount out of range".into()))?;
        let body = json!({
            "amount": pesos,
            "currency": "CLP",
            "subscription_id": request.token,
            "metadata": { "mandatoAttempt": request.idempotency_key },
        });
        let answer = self
            .send(
                "fintoc.charge.create",
                Some(request.idempotency_key),
                reqwest::Method::POST,
                "/v1/charges",
                Some(body),
                Some(request.idempotency_key),
            )
            .await?;
        match answer {
            Answer::Ok(value) => {
                let charge: Charge = serde_json::from_value(value).map_err(|e| {
                    ProcessorError::Unavailable(format!("fintoc charge answer: {e}"))
                })?;
                self.remember(request.idempotency_key, &charge.id)?;
                Ok(outcome(&charge))
            }
            Answer::Refused {
                status,
                code,
                message,
            } => {
                tracing::info!(status, %code, %message, "fintoc refused a charge");
                Ok(ChargeResult::Rejected {
                    code: rejection_of(Some(code.as_str())),
                })
            }
        }
    }

    fn remember(&self, idempotency_key: &str, charge_id: &str) -> Result<(), ProcessorError> {
        let at = self.log.now();
        self.store
            .write(|tx| {
                Ok(mandato_store::fintoc::record_charge(
                    tx,
                    idempotency_key,
                    charge_id,
                    &at,
                )?)
            })
            .map_err(|e| ProcessorError::Unavailable(format!("charge not recorded: {e}")))
    }

    /// The outcome of the charge recorded under `idempotency_key`; `None` when Fintoc never
    /// answered for it.
    async fn status_of(
        &self,
        idempotency_key: &str,
    ) -> Result<Option<ChargeResult>, ProcessorError> {
        let key = idempotency_key.to_string();
        let charge_id = self
            .store
            .read(|c| Ok(mandato_store::fintoc::charge_of(c, &key)?))
            .map_err(|e| ProcessorError::Unavailable(e.to_string()))?;
        let Some(charge_id) = charge_id else {
            return Ok(None);
        };
        let path = format!("/v1/charges/{}", segment(&charge_id));
        match self
            .send(
                "fintoc.charge.get",
                Some(idempotency_key),
                reqwest::Method::GET,
                &path,
                None,
                None,
            )
            .await?
        {
            Answer::Ok(value) => {
                let charge: Charge = serde_json::from_value(value).map_err(|e| {
                    ProcessorError::Unavailable(format!("fintoc charge answer: {e}"))
                })?;
                Ok(Some(outcome(&charge)))
            }
            Answer::Refused {
                status,
                code,
                message,
            } => Err(ProcessorError::Unavailable(format!(
                "fintoc charge {charge_id} ({status} {code}): {message}"
            ))),
        }
    }
}

/// A charge's status as our outcome: pending and in progress wait for the bank.
fn outcome(charge: &Charge) -> ChargeResult {
    match charge.status.as_str() {
        "succeeded" => ChargeResult::Approved {
            authorization_code: charge.id.clone(),
            // Fintoc reports no fee; the ledger uses the commerce's rule.
            fee: None,
        },
        "failed" => ChargeResult::Rejected {
            code: rejection_of(charge.failure_code.as_deref()),
        },
        "canceled" => ChargeResult::Rejected {
            code: RejectionCode::BankValidationFailed,
        },
        _ => ChargeResult::Pending,
    }
}

impl Processor for Fintoc {
    /// Bank accounts are authorized at the bank through Fintoc's widget, never typed here.
    fn enroll(&self, _instrument: &InstrumentInput) -> Result<Enrolled, ProcessorError> {
        Err(ProcessorError::Refused(
            "bank accounts are authorized through Fintoc's widget, not typed here".into(),
        ))
    }

    fn charge(&self, request: &ChargeRequest<'_>) -> Result<ChargeResult, ProcessorError> {
        self.run(self.create_charge(request))
    }

    fn charge_many(
        &self,
        requests: &[ChargeRequest<'_>],
    ) -> Vec<Result<ChargeResult, ProcessorError>> {
        use futures_util::stream::{self, StreamExt};
        // Fintoc allows five requests a second: a few in flight, not Transbank's 64.
        self.run(
            stream::iter(requests.iter().map(|r| self.create_charge(r)))
                .buffered(self.limits.in_flight.clamp(1, 4))
                .collect(),
        )
    }

    fn status(&self, idempotency_key: &str) -> Result<Option<ChargeResult>, ProcessorError> {
        self.run(self.status_of(idempotency_key))
    }

    /// A send cut by a crash may still be processed at Fintoc; the same key sent again after
    /// this long answers that same charge (idempotency holds 24 hours).
    fn resend_after(&self) -> Duration {
        self.limits.timeout * 2
    }

    fn settle(&self, idempotency_key: &str) -> Result<ChargeResult, ProcessorError> {
        self.run(self.status_of(idempotency_key))?
            .ok_or_else(|| ProcessorError::Refused("unknown charge".into()))
    }

    /// Fintoc Direct Debit has no refunds: the merchant gives the money back by transfer.
    fn refund(&self, _idempotency_key: &str, _amount: &Money) -> Result<(), ProcessorError> {
        Err(ProcessorError::Refused(
            "Fintoc Direct Debit does not refund charges; give the money back by transfer".into(),
        ))
    }
}

/// An id as a path segment: Fintoc's are letters, digits and `_`; anything else is encoded.
fn segment(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_codes_map_to_our_rejections() {
        assert_eq!(
            rejection_of(Some("insufficient_funds")),
            RejectionCode::InsufficientFunds
        );
        assert_eq!(
            rejection_of(Some("bank_account_unavailable")),
            RejectionCode::AccountClosed
        );
        for hard in [
            "subscription_inactive",
            "charge_amount_limit_exceeded",
            "other",
        ] {
            assert_eq!(
                rejection_of(Some(hard)),
                RejectionCode::BankValidationFailed
            );
        }
        let charge = |status: &str, failure: Option<&str>| Charge {
            id: "ch_1".into(),
            status: status.into(),
            failure_code: failure.map(str::to_string),
        };
        assert_eq!(outcome(&charge("pending", None)), ChargeResult::Pending);
        assert_eq!(outcome(&charge("in_progress", None)), ChargeResult::Pending);
        assert_eq!(
            outcome(&charge("failed", Some("insufficient_funds"))),
            ChargeResult::Rejected {
                code: RejectionCode::InsufficientFunds
            }
        );
        assert!(matches!(
            outcome(&charge("succeeded", None)),
            ChargeResult::Approved { .. }
        ));
    }
}
