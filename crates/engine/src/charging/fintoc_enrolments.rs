//! Subscriptions the bank is still validating (Fintoc Direct Debit, CONTRACT 13): at every
//! run (and hourly, `Engine::start`) the engine asks Fintoc for each, activates the mandate of
//! an active one as any activation does, and records a canceled one as failed (the mandate
//! stays PENDING, its link offers the bank step again).

use mandato_core::domain::state::{MandateState, PaymentMethod};
use mandato_core::error::Result;
use mandato_store::{commerces, mandates};

use super::run::Charger;
use crate::operations::activation;
use crate::operations::fintoc as enrolments;
use crate::rails::Acquirer;
use mandato_core::domain::acquirer::Rail;

/// The most enrolments one pass asks about (Fintoc allows five requests a second).
const PER_PASS: i64 = 200;

impl Charger {
    /// Asks Fintoc about every subscription still validating; answers how many ended.
    pub fn settle_fintoc_enrolments(&self) -> Result<usize> {
        let open = self
            .store()
            .read(|c| Ok(mandato_store::fintoc::validating(c, PER_PASS)?))?;
        let mut ended = 0;
        for enrolment in open {
            let Some(subscription_id) = enrolment.subscription_id.clone() else {
                continue;
            };
            let mandate = self
                .store()
                .read(|c| Ok(mandates::by_seq(c, enrolment.mandate_seq)?))?;
            let acquirer = self
                .store()
                .read(|c| self.rails().acquirer(c, mandate.commerce_id, Rail::Bank))?;
            let Acquirer::Fintoc(fintoc) = acquirer else {
                continue;
            };
            let subscription = match fintoc.subscription(&subscription_id) {
                Ok(subscription) => subscription,
                Err(e) => {
                    tracing::warn!(error = %e, "fintoc did not answer for a subscription");
                    continue;
                }
            };
            let now = self.clock().now();
            let intent = enrolment.intent_id.clone();
            match subscription.status.as_str() {
                "active" => {
                    let method =
                        PaymentMethod::from_id(enrolment.method_id).unwrap_or(PaymentMethod::Pac);
                    let (instrument, enrolled) = enrolments::instrument_of(method, &subscription)?;
                    let acceptance = enrolments::acceptance_of(&enrolment);
                    let activated = self.store().write(|tx| {
                        if !enrolments::activated(tx, &intent, "VALIDATING", &subscription.id, now)?
                        {
                            return Ok(false);
                        }
                        let fresh = mandates::by_seq(tx, mandate.seq)?;
                        if fresh.state != MandateState::Pending
                            || !fresh.payment_methods.contains(&method.id())
                        {
                            // Cancelled (or activated another way) meanwhile: nothing to do.
                            return Ok(true);
                        }
                        let commerce =
                            commerces::by_id(tx, fresh.commerce_id)?.ok_or_else(|| {
                                mandato_core::error::Error::Internal(anyhow::anyhow!(
                                    "mandate without its commerce"
                                ))
                            })?;
                        activation::activate(
                            tx,
                            &commerce,
                            &fresh,
                            &activation::Enrolment {
                                instrument: &instrument,
                                enrolled: &enrolled,
                                acceptance: &acceptance,
                                document: None,
                            },
                            now,
                        )?;
                        Ok(true)
                    })?;
                    if activated {
                        ended += 1;
                        self.events_written();
                    }
                }
                "canceled" => {
                    self.store().write(|tx| {
                        enrolments::failed(tx, &intent, "VALIDATING", "subscription_canceled", now)
                    })?;
                    ended += 1;
                }
                _ => {}
            }
        }
        Ok(ended)
    }
}
