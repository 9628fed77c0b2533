//! What a Webpay Plus portal payment's outcome does here (CONTRACT 13), whoever learned it:
//! the Magic Link's return (`/link/{token}/webpay/return`) or the charging run, which asks
//! Transbank about payments whose customer never came back.
//!
//! An approval pays the installment with the portal's records (`operations::portal`). An
//! approval the installment can no longer take (the engine charged it, the merchant marked
//! it, the mandate ended while the customer was on Webpay) is given back at Transbank at once:
//! nobody pays an installment twice. Each step is recorded only after Transbank did it.

use chrono::{DateTime, NaiveDate, Utc};

use mandato_core::clock::timestamp;
use mandato_core::domain::state::{PaymentMethod, RejectionCode};
use mandato_core::error::{Error, Result};
use mandato_store::Store;
use mandato_store::webpay::{self, Ending, NewPayment, WebpayPayment};
use mandato_store::{commerces, installments};

use super::Acquirer;
use super::transbank::{Oneclick, WebpayOutcome};
use crate::operations::portal::{self, ApprovedPayment};

/// What an outcome did to the payment and its installment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The installment is PAID with this approval (now, or by an earlier return).
    Paid,
    /// Webpay refused the card; nothing was charged. `reason` reads Transbank's code at the
    /// commerce's level.
    Refused {
        response_code: i64,
        reason: RejectionCode,
    },
    /// The customer has not paid (yet).
    NotPaid,
    /// The customer cancelled on Webpay, or the payment expired there.
    Abandoned,
    /// Approved, but the installment could no longer take it: the money went back.
    Refunded,
    /// Approved, the installment could not take it, and the refund failed: staff must give
    /// the money back by hand (logged as an error with the authorization code).
    NeedsRefund { authorization_code: String },
}

/// How many portal payments one Magic Link may start in an hour: a customer retrying a
/// refused card is far below it; a script creating Transbank transactions is stopped by it.
pub const PAYMENTS_PER_WINDOW: i64 = 20;
pub const PAYMENT_WINDOW: chrono::Duration = chrono::Duration::hours(1);

/// A payment still STARTED this long after it was created is asked about by the charging
/// run: Webpay's form times out after 10 minutes and its token after 5 (Webpay Plus guide).
pub const OPEN_FOR: chrono::Duration = chrono::Duration::minutes(15);

/// A buy order of Webpay Plus's 26 characters: `W` and 25 hex digits of a fresh random token,
/// so no two transactions (and no Oneclick attempt's `P`/`C` orders) share one.
pub fn new_buy_order() -> String {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(mandato_core::ids::new_token().as_bytes()));
    format!("W{}", &digest[..super::transbank::BUY_ORDER_MAX - 1])
}

/// Whether the mandate's link may start another payment at `now`; when not, until when.
pub fn may_start(
    store: &Store,
    mandate_seq: i64,
    now: DateTime<Utc>,
) -> Result<std::result::Result<(), DateTime<Utc>>> {
    let since = timestamp(now - PAYMENT_WINDOW);
    let started = store.read(|c| Ok(webpay::started_since(c, mandate_seq, &since)?))?;
    Ok(if started < PAYMENTS_PER_WINDOW {
        Ok(())
    } else {
        Err(now + PAYMENT_WINDOW)
    })
}

/// Records a transaction Transbank created, before the customer is sent to Webpay.
pub fn record_start(store: &Store, payment: &NewPayment<'_>) -> Result<()> {
    store.write(|tx| Ok(webpay::insert(tx, payment)?))
}

/// Applies what Transbank says of `payment`.
pub fn apply(
    store: &Store,
    oneclick: &Oneclick,
    payment: &WebpayPayment,
    outcome: WebpayOutcome,
    business_date: NaiveDate,
    now: DateTime<Utc>,
) -> Result<Applied> {
    match outcome {
        WebpayOutcome::Approved {
            authorization_code,
            method,
        } => approve(
            store,
            oneclick,
            payment,
            &authorization_code,
            method,
            business_date,
            now,
        ),
        WebpayOutcome::Refused { response_code } => {
            end(store, payment, "REFUSED", Some(response_code), None, now)?;
            Ok(Applied::Refused {
                response_code,
                reason: oneclick.rejection_of(response_code),
            })
        }
        WebpayOutcome::NotPaid => Ok(Applied::NotPaid),
        WebpayOutcome::Expired => abandon(store, payment, now),
    }
}

/// The customer left Webpay without paying (cancelled, timed out, or never came back).
pub fn abandon(store: &Store, payment: &WebpayPayment, now: DateTime<Utc>) -> Result<Applied> {
    end(store, payment, "ABANDONED", None, None, now)?;
    Ok(Applied::Abandoned)
}

fn end(
    store: &Store,
    payment: &WebpayPayment,
    state: &str,
    response_code: Option<i64>,
    authorization_code: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let at = timestamp(now);
    store.write(|tx| {
        Ok(webpay::end(
            tx,
            payment.seq,
            &Ending {
                state,
                response_code,
                authorization_code,
                at: &at,
            },
        )?)
    })
}

/// What recording an approval found.
enum Recorded {
    Paid,
    /// An earlier return or run ended the payment already.
    Ended(WebpayPayment),
    /// The installment moved while the customer was on Webpay.
    NotPayable,
}

fn approve(
    store: &Store,
    oneclick: &Oneclick,
    payment: &WebpayPayment,
    authorization_code: &str,
    method: PaymentMethod,
    business_date: NaiveDate,
    now: DateTime<Utc>,
) -> Result<Applied> {
    let recorded = store.write(|tx| {
        let fresh = webpay::by_seq(tx, payment.seq)?;
        if fresh.state != "STARTED" {
            return Ok(Recorded::Ended(fresh));
        }
        let installment = installments::by_seq(tx, payment.installment_seq)?;
        let mandate = mandato_store::mandates::by_seq(tx, installment.mandate_seq)?;
        let commerce = commerces::by_id(tx, mandate.commerce_id)?
            .ok_or_else(|| Error::Internal(anyhow::anyhow!("commerce of a mandate")))?;
        let paid = portal::record_approved(
            tx,
            &ApprovedPayment {
                commerce: &commerce,
                mandate_seq: mandate.seq,
                installment_seq: installment.seq,
                method,
                authorization_code,
                // Webpay Plus reports no fee; the ledger uses the commerce's schedule.
                fee: None,
                business_date,
                now,
            },
        );
        match paid {
            Ok(()) => {}
            Err(Error::Refused {
                name: "INSTALLMENT_STATE_CONFLICT",
                ..
            }) => {
                return Ok(Recorded::NotPayable);
            }
            Err(e) => return Err(e),
        }
        webpay::end(
            tx,
            payment.seq,
            &Ending {
                state: "APPROVED",
                response_code: Some(0),
                authorization_code: Some(authorization_code),
                at: &timestamp(now),
            },
        )?;
        Ok(Recorded::Paid)
    })?;
    match recorded {
        Recorded::Paid => Ok(Applied::Paid),
        Recorded::Ended(payment) => Ok(ended(&payment, Some(oneclick))),
        Recorded::NotPayable => give_back(store, oneclick, payment, authorization_code, now),
    }
}

/// Refunds an approval the installment could not take, then records it.
fn give_back(
    store: &Store,
    oneclick: &Oneclick,
    payment: &WebpayPayment,
    authorization_code: &str,
    now: DateTime<Utc>,
) -> Result<Applied> {
    match oneclick.webpay_refund(&payment.token, &payment.buy_order, payment.amount) {
        Ok(()) => {
            end(
                store,
                payment,
                "REFUNDED",
                Some(0),
                Some(authorization_code),
                now,
            )?;
            tracing::warn!(
                buy_order = %payment.buy_order,
                "a portal payment arrived for an installment that could no longer take it; refunded"
            );
            Ok(Applied::Refunded)
        }
        Err(e) => {
            // Left STARTED: the next charging run asks Transbank again and retries the refund.
            tracing::error!(
                buy_order = %payment.buy_order,
                %authorization_code,
                error = %e,
                "a portal payment the installment could not take was not refunded"
            );
            Ok(Applied::NeedsRefund {
                authorization_code: authorization_code.to_string(),
            })
        }
    }
}

/// A portal payment to start: the installment and where Webpay brings the customer back.
pub struct PaymentStart {
    pub commerce_id: i64,
    pub mandate_seq: i64,
    pub installment_seq: i64,
    /// The installment's internal id: Transbank's `session_id`.
    pub installment_id: String,
    /// Whole pesos.
    pub amount: i64,
    pub return_url: String,
}

/// Why a portal payment did not start.
#[derive(Debug)]
pub enum NotStarted {
    /// The link started [`PAYMENTS_PER_WINDOW`] payments in the last hour; it may again then.
    TooMany(DateTime<Utc>),
    /// Transbank does not serve this commerce's cards.
    NotOffered,
    /// Transbank refused or did not answer.
    Acquirer(mandato_core::processor::ProcessorError),
}

/// How Webpay brought the customer back to `/link/{token}/webpay/return`
/// (transbankdevelopers.cl/documentacion/webpay-plus, "Resumen de flujos").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Return {
    /// Only `token_ws`: paid or refused; the transaction must be committed.
    Finished { token: String },
    /// `TBK_TOKEN` (with `TBK_ORDEN_COMPRA` and `TBK_ID_SESION`): the customer cancelled on
    /// Webpay, or left from its error page.
    Cancelled { token: String },
    /// Only `TBK_ORDEN_COMPRA` and `TBK_ID_SESION`: the form timed out.
    TimedOut { buy_order: String },
}

impl Return {
    /// Reads Webpay's parameters, whichever way they came.
    pub fn of(value: impl Fn(&str) -> Option<String>) -> Option<Return> {
        let present = |name: &str| value(name).filter(|v| !v.is_empty());
        if let Some(token) = present("TBK_TOKEN") {
            return Some(Return::Cancelled { token });
        }
        if let Some(token) = present("token_ws") {
            return Some(Return::Finished { token });
        }
        present("TBK_ORDEN_COMPRA").map(|buy_order| Return::TimedOut { buy_order })
    }
}

impl crate::Engine {
    /// Creates the Webpay Plus transaction of a portal payment and records it; answers where
    /// the browser goes and the token it carries.
    pub async fn start_portal_payment(
        &self,
        start: PaymentStart,
    ) -> Result<std::result::Result<super::transbank::WebpayStarted, NotStarted>> {
        let Acquirer::Transbank(oneclick) =
            self.acquirer_for(start.commerce_id, PaymentMethod::CreditCard)?
        else {
            return Ok(Err(NotStarted::NotOffered));
        };
        let now = self.clock.now();
        if let Err(until) = may_start(self.store(), start.mandate_seq, now)? {
            return Ok(Err(NotStarted::TooMany(until)));
        }
        let store = std::sync::Arc::clone(self.store());
        tokio::task::spawn_blocking(move || {
            let buy_order = new_buy_order();
            let started = match oneclick.webpay_create(
                &buy_order,
                &start.installment_id,
                start.amount,
                &start.return_url,
            ) {
                Ok(started) => started,
                Err(e) => return Ok(Err(NotStarted::Acquirer(e))),
            };
            record_start(
                &store,
                &NewPayment {
                    token: &started.token,
                    buy_order: &buy_order,
                    mandate_seq: start.mandate_seq,
                    commerce_id: start.commerce_id,
                    installment_seq: start.installment_seq,
                    amount: start.amount,
                    at: &timestamp(now),
                },
            )?;
            Ok(Ok(started))
        })
        .await
        .map_err(|e| Error::Internal(e.into()))?
    }

    /// Applies what Webpay's return says of one of the mandate's portal payments, asking
    /// Transbank (commit or status) first; `None` when the return names no payment of it.
    pub async fn portal_payment_returned(
        &self,
        mandate_seq: i64,
        returned: Return,
    ) -> Result<Option<(WebpayPayment, Applied)>> {
        let payment = self.store().read(|c| {
            Ok(match &returned {
                Return::Finished { token } | Return::Cancelled { token } => {
                    webpay::by_token(c, token, mandate_seq)?
                }
                Return::TimedOut { buy_order } => webpay::by_buy_order(c, buy_order, mandate_seq)?,
            })
        })?;
        let Some(payment) = payment else {
            return Ok(None);
        };
        let acquirer = self.acquirer_for(payment.commerce_id, PaymentMethod::CreditCard)?;
        let transbank = match &acquirer {
            Acquirer::Transbank(oneclick) => Some(oneclick.as_ref()),
            _ => None,
        };
        if payment.state != "STARTED" {
            return Ok(Some((payment.clone(), ended(&payment, transbank))));
        }
        let Acquirer::Transbank(oneclick) = acquirer else {
            // Transbank no longer serves the commerce: the charging run cannot ask either.
            return Ok(Some((payment, Applied::NotPaid)));
        };
        let store = std::sync::Arc::clone(self.store());
        let (today, now) = (self.today(), self.clock.now());
        tokio::task::spawn_blocking(move || {
            let outcome = match returned {
                Return::Finished { .. } => oneclick.webpay_commit(&payment.token),
                // Transbank's guide: after a cancellation, ask for the status; nothing to commit.
                Return::Cancelled { .. } | Return::TimedOut { .. } => {
                    oneclick.webpay_status(&payment.token)
                }
            };
            let applied = match (&returned, outcome) {
                (Return::Finished { .. }, Ok(outcome)) => {
                    apply(&store, &oneclick, &payment, outcome, today, now)?
                }
                (_, Ok(WebpayOutcome::NotPaid)) => abandon(&store, &payment, now)?,
                (_, Ok(outcome)) => apply(&store, &oneclick, &payment, outcome, today, now)?,
                (_, Err(e)) => {
                    return Err(Error::Unavailable {
                        name: "ACQUIRER_UNAVAILABLE",
                        message: e.to_string(),
                        retry_after_secs: 60,
                    });
                }
            };
            Ok(Some((payment, applied)))
        })
        .await
        .map_err(|e| Error::Internal(e.into()))?
    }
}

/// What an ended payment did, as recorded; a refusal is read at the level of the commerce's
/// Transbank contract (level 1 when Transbank no longer serves it).
fn ended(payment: &WebpayPayment, transbank: Option<&Oneclick>) -> Applied {
    match payment.state.as_str() {
        "APPROVED" => Applied::Paid,
        "REFUNDED" => Applied::Refunded,
        "REFUSED" => {
            let response_code = payment.response_code.unwrap_or(-1);
            Applied::Refused {
                response_code,
                reason: match transbank {
                    Some(oneclick) => oneclick.rejection_of(response_code),
                    None => super::transbank::rejection_of(Default::default(), response_code),
                },
            }
        }
        _ => Applied::Abandoned,
    }
}
