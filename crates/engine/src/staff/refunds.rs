//! The staff refund of a PAID card installment (CONTRACT 13): the acquirer that charged it
//! gives the money back (a Oneclick Mall refund, or the simulation's), then the installment
//! becomes REVERSED with its payment event and the ledger's REVERSAL, in the same transaction
//! as the staff audit record.
//!
//! The acquirer is asked first and our records follow: a refund is never recorded that the
//! acquirer did not make. Should the write fail after the acquirer refunded, asking again is
//! safe: Transbank answers "already fully refunded", which counts as done.

use std::str::FromStr;
use std::sync::Arc;

use rust_decimal::Decimal;

use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::{InstallmentState, PaymentMethod};
use mandato_core::error::{Error, Result};
use mandato_core::processor::ProcessorError;
use mandato_store::{charging, installments, mandates, webpay};

use crate::Engine;
use crate::rails::{ACQUIRER_NOT_CONFIGURED, Acquirer};

/// Why an installment cannot be refunded through its acquirer.
pub const INSTALLMENT_NOT_REFUNDABLE: &str = "INSTALLMENT_NOT_REFUNDABLE";

impl Engine {
    /// Refunds the PAID installment `internal_id` (`reason` goes to the staff audit log);
    /// answers its mandate's internal id.
    pub async fn refund_installment(
        self: &Arc<Self>,
        actor: &str,
        internal_id: &str,
        reason: &str,
    ) -> Result<String> {
        let found = self
            .store()
            .read(|c| Ok(charging::charged_installment(c, internal_id)?))?
            .ok_or(Error::not_found("installment"))?;
        if found.state != InstallmentState::Paid.id() {
            return Err(Error::refused(
                "INSTALLMENT_STATE_CONFLICT",
                "only a PAID installment can be refunded",
            ));
        }
        let refund = match found.charge.clone() {
            Some(charge) => self.attempt_refund(&found, charge)?,
            None => self.portal_refund(&found)?,
        };
        let mandate_id = self
            .store()
            .read(|c| Ok(mandates::by_seq(c, found.mandate_seq)?.id))?;
        let refunded = tokio::task::spawn_blocking(refund)
            .await
            .map_err(|e| Error::Internal(e.into()))?;
        match refunded {
            Ok(()) => {}
            Err(ProcessorError::Refused(message)) => {
                return Err(Error::refused("REFUND_REFUSED", message));
            }
            Err(ProcessorError::Unavailable(message)) => {
                tracing::warn!(%message, "acquirer unavailable for a refund");
                return Err(Error::Unavailable {
                    name: "ACQUIRER_UNAVAILABLE",
                    message: "the acquirer did not answer; nothing was refunded or recorded"
                        .to_string(),
                    retry_after_secs: 60,
                });
            }
        }
        let detail =
            serde_json::json!({ "installment": internal_id, "reason": reason }).to_string();
        let seq = found.installment_seq;
        self.act_on_mandate(
            actor,
            &mandate_id,
            "installment.refund",
            Some(detail),
            move |tx, ctx| {
                let row = installments::by_seq(tx, seq)?;
                let mandate = mandates::by_seq(tx, row.mandate_seq)?;
                crate::operations::installments::reverse(tx, ctx, &row, &mandate).map(drop)
            },
        )
        .await?;
        Ok(mandate_id)
    }

    /// The refund of a charge the engine made: the acquirer's refund of the attempt's key.
    fn attempt_refund(
        &self,
        found: &charging::ChargedInstallment,
        (key, amount, currency): (String, String, String),
    ) -> Result<Refund> {
        let method = self
            .store()
            .read(|c| Ok(installments::by_seq(c, found.installment_seq)?.payment_method_id))?
            .and_then(PaymentMethod::from_id)
            .filter(|m| m.is_card())
            .ok_or_else(|| {
                Error::refused(
                    INSTALLMENT_NOT_REFUNDABLE,
                    "only card charges are refunded through the acquirer",
                )
            })?;
        let money = Decimal::from_str(&amount)
            .ok()
            .zip(Currency::parse(&currency))
            .and_then(|(d, c)| Money::from_decimal(d, c).ok())
            .ok_or_else(|| {
                Error::Internal(anyhow::anyhow!("attempt amount {amount} {currency}"))
            })?;
        let processor = self
            .processor_for(found.commerce_id, method)?
            .ok_or_else(|| Error::refused(ACQUIRER_NOT_CONFIGURED, "no acquirer serves cards"))?;
        Ok(Box::new(move || processor.refund(&key, &money)))
    }

    /// The refund of a payment the customer made on Webpay Plus from the portal.
    fn portal_refund(&self, found: &charging::ChargedInstallment) -> Result<Refund> {
        let paid = self
            .store()
            .read(|c| Ok(webpay::approved_for(c, found.installment_seq)?))?
            .ok_or_else(|| {
                Error::refused(
                    INSTALLMENT_NOT_REFUNDABLE,
                    "this installment was not charged through an acquirer (it was marked paid \
                     or paid with a card of the sandbox's portal); give the money back where it \
                     was paid",
                )
            })?;
        let Acquirer::Transbank(oneclick) =
            self.acquirer_for(found.commerce_id, PaymentMethod::CreditCard)?
        else {
            return Err(Error::refused(
                ACQUIRER_NOT_CONFIGURED,
                "the installment was paid on Webpay, and Transbank no longer serves this \
                 commerce's cards",
            ));
        };
        Ok(Box::new(move || {
            oneclick.webpay_refund(&paid.token, &paid.buy_order, paid.amount)
        }))
    }
}

/// A refund to ask the acquirer for, off the async workers.
type Refund = Box<dyn FnOnce() -> std::result::Result<(), ProcessorError> + Send>;
