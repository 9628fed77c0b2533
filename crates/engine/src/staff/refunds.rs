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
use mandato_store::{charging, installments, mandates};

use crate::Engine;
use crate::rails::ACQUIRER_NOT_CONFIGURED;

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
        let Some((key, amount, currency)) = found.charge else {
            return Err(Error::refused(
                INSTALLMENT_NOT_REFUNDABLE,
                "this installment was not charged by the charging engine (it was marked paid \
                 or paid on the portal); give the money back where it was paid",
            ));
        };
        let (mandate_id, method) = self.store().read(|c| {
            let installment = installments::by_seq(c, found.installment_seq)?;
            let mandate = mandates::by_seq(c, found.mandate_seq)?;
            Ok((mandate.id, installment.payment_method_id))
        })?;
        let method = method
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
        let refunded = tokio::task::spawn_blocking(move || processor.refund(&key, &money))
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
}
