//! Transbank Webpay Plus over REST (API v1.2): one-off payments of the Magic Link's portal
//! (CONTRACT 13). The customer types the card on Webpay; we create the transaction, hand the
//! browser over with `token_ws`, and commit it when Webpay brings the customer back.
//!
//! The wire follows `transbank/webpay/webpay_plus/transaction.py` of the official Python SDK
//! (`TransbankDevelopers/transbank-sdk-python` at 195398a) and its fixtures in
//! `tests/mocks/responses_api_mocks.py`: `create_response` (`{token, url}`),
//! `commit_status_response` (commit and status), `commit_error` (a commit before the customer
//! paid, 422), `expired_token` (a status after 7 days, 422). Refunds answer as Oneclick's do
//! (`{type: "REVERSED"}` or `NULLIFIED`).

use serde::Deserialize;
use serde_json::{Value, json};

use mandato_core::domain::state::PaymentMethod;
use mandato_core::processor::ProcessorError;

use super::{Answer, Oneclick, Op, Product};

/// `ApiConstants.SESSION_ID_LENGTH` and `RETURN_URL_LENGTH`.
const SESSION_ID_MAX: usize = 61;
const RETURN_URL_MAX: usize = 255;

/// A transaction created: the browser posts `token_ws = token` to `url`.
#[derive(Debug, Clone, Deserialize)]
pub struct WebpayStarted {
    pub token: String,
    pub url: String,
}

/// What Transbank holds for a Webpay Plus transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebpayOutcome {
    /// Paid: `response_code` 0 and `status` AUTHORIZED (or CAPTURED), with the card's method.
    Approved {
        authorization_code: String,
        method: PaymentMethod,
    },
    /// The card was refused (`response_code` other than 0) or the payment failed.
    Refused { response_code: i64 },
    /// Created, and the customer has not paid (yet): `INITIALIZED`, or a commit refused as
    /// "Invalid status 0".
    NotPaid,
    /// Transbank no longer answers for it (more than 7 days): nothing to record.
    Expired,
}

/// The commit and status answer (`commit_status_response`), the fields we read.
#[derive(Debug, Deserialize)]
struct Committed {
    status: Option<String>,
    response_code: Option<i64>,
    authorization_code: Option<String>,
    payment_type_code: Option<String>,
    buy_order: Option<String>,
}

/// The method of a Webpay Plus payment, from its `payment_type_code` (transbankdevelopers.cl/
/// referencia/webpay, the commit answer's table: "VD = Venta Débito ... VP = Venta Prepago"):
/// VD is Redcompra debit, VP prepaid, and every credit kind (VN, VC, SI, S2, NC) a credit card.
fn method_of_payment_type(code: Option<&str>) -> PaymentMethod {
    match code {
        Some("VD") => PaymentMethod::DebitCard,
        Some("VP") => PaymentMethod::PrepaidCard,
        _ => PaymentMethod::CreditCard,
    }
}

impl Oneclick {
    /// Creates a Webpay Plus transaction of `amount` whole pesos (`transaction.py` `create`).
    pub fn webpay_create(
        &self,
        buy_order: &str,
        session_id: &str,
        amount: i64,
        return_url: &str,
    ) -> Result<WebpayStarted, ProcessorError> {
        if return_url.len() > RETURN_URL_MAX {
            return Err(ProcessorError::Refused(format!(
                "the return URL is longer than Transbank's {RETURN_URL_MAX} characters"
            )));
        }
        let body = json!({
            "buy_order": buy_order,
            "session_id": super::truncate(session_id, SESSION_ID_MAX),
            "amount": amount,
            "return_url": return_url,
        });
        match self.webpay_call(
            Op::about("webpay.create", buy_order),
            reqwest::Method::POST,
            "/transactions",
            Some(body),
        )? {
            Answer::Ok(value) => serde_json::from_value(value)
                .map_err(|e| ProcessorError::Unavailable(format!("transbank create answer: {e}"))),
            Answer::Refused { status, message } => Err(ProcessorError::Refused(format!(
                "transbank refused the transaction ({status}): {message}"
            ))),
        }
    }

    /// Commits the transaction `token` after Webpay brought the customer back
    /// (`transaction.py` `commit`). A transaction already committed (a second return, or a
    /// crash after the first commit) is answered with its status.
    pub fn webpay_commit(&self, token: &str) -> Result<WebpayOutcome, ProcessorError> {
        let path = format!("/transactions/{}", super::path_segment(token));
        match self.webpay_call(Op::new("webpay.commit"), reqwest::Method::PUT, &path, None)? {
            Answer::Ok(value) => outcome(value),
            Answer::Refused { .. } => self.webpay_status(token),
        }
    }

    /// What Transbank holds for the transaction `token` (`transaction.py` `status`).
    pub fn webpay_status(&self, token: &str) -> Result<WebpayOutcome, ProcessorError> {
        let path = format!("/transactions/{}", super::path_segment(token));
        match self.webpay_call(Op::new("webpay.status"), reqwest::Method::GET, &path, None)? {
            Answer::Ok(value) => outcome(value),
            Answer::Refused { message, .. } if message.contains("max time") => {
                Ok(WebpayOutcome::Expired)
            }
            Answer::Refused { status, message } => Err(ProcessorError::Unavailable(format!(
                "transbank status ({status}): {message}"
            ))),
        }
    }

    /// Gives back `amount` whole pesos of the transaction `token` (`transaction.py`
    /// `refund`); "already fully refunded" means an earlier request of ours went through.
    pub fn webpay_refund(
        &self,
        token: &str,
        buy_order: &str,
        amount: i64,
    ) -> Result<(), ProcessorError> {
        let path = format!("/transactions/{}/refunds", super::path_segment(token));
        let body = json!({ "amount": amount });
        match self.webpay_call(
            Op::about("webpay.refund", buy_order),
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

    fn webpay_call(
        &self,
        op: Op<'_>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, ProcessorError> {
        self.run(self.send_to(Product::WebpayPlus, op, method, path, body))
    }
}

/// Transbank's approval rule, as the PHP SDK's `isApproved()`: `response_code` 0 and a status
/// that holds the money.
fn outcome(value: Value) -> Result<WebpayOutcome, ProcessorError> {
    let answer: Committed = serde_json::from_value(value)
        .map_err(|e| ProcessorError::Unavailable(format!("transbank commit answer: {e}")))?;
    if answer.buy_order.is_none() {
        return Err(ProcessorError::Unavailable(
            "transbank answered a transaction without its buy order".into(),
        ));
    }
    Ok(match (answer.status.as_deref(), answer.response_code) {
        (Some("INITIALIZED"), _) => WebpayOutcome::NotPaid,
        (Some("AUTHORIZED" | "CAPTURED"), Some(0)) => WebpayOutcome::Approved {
            authorization_code: answer.authorization_code.unwrap_or_default(),
            method: method_of_payment_type(answer.payment_type_code.as_deref()),
        },
        (_, code) => WebpayOutcome::Refused {
            response_code: code.unwrap_or(-1),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_fixtures_read_as_transbank_means_them() {
        let approved = json!({
            "vci": "TSY", "amount": 150000, "status": "AUTHORIZED",
            "buy_order": "buy_order_mock_123456789", "session_id": "session_ide_mock_123456789",
            "card_detail": {"card_number": "6623"}, "accounting_date": "0624",
            "transaction_date": "2020-06-24T12:26:21.463Z", "authorization_code": "1213",
            "payment_type_code": "VN", "response_code": 0, "installments_number": 0
        });
        assert_eq!(
            outcome(approved).unwrap(),
            WebpayOutcome::Approved {
                authorization_code: "1213".into(),
                method: PaymentMethod::CreditCard,
            }
        );
        let failed = json!({"status": "FAILED", "response_code": -1, "buy_order": "x"});
        assert_eq!(
            outcome(failed).unwrap(),
            WebpayOutcome::Refused { response_code: -1 }
        );
        // A mock of the PHP SDK: -96 with AUTHORIZED is no approval.
        let odd = json!({"status": "AUTHORIZED", "response_code": -96, "buy_order": "x"});
        assert_eq!(
            outcome(odd).unwrap(),
            WebpayOutcome::Refused { response_code: -96 }
        );
        let created = json!({"status": "INITIALIZED", "buy_order": "x"});
        assert_eq!(outcome(created).unwrap(), WebpayOutcome::NotPaid);
        assert!(outcome(json!({"status": "AUTHORIZED"})).is_err());
    }
}
