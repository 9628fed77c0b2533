//! Following Fintoc Direct Debit (CONTRACT 13): what the bank decides after the customer or
//! the run acted. The engine asks Fintoc about every subscription still validating and every
//! charge still awaited at each run and every hour (`Engine::start`), and about one object at
//! once when Fintoc's verified webhook names it (`rails::fintoc_webhooks`). The webhook is a
//! prompt to ask, never the answer itself: what is applied is what Fintoc's API says, through
//! the same paths as polling, so a lost or late event changes nothing but timing.
//!
//! An active subscription activates its mandate as any activation does; a canceled one is
//! recorded as failed (the mandate stays PENDING, its link offers the bank step again). A
//! charge's outcome is applied as the run applies any bank's (`Charger::settle_validations`).

use chrono::NaiveDate;

use mandato_core::domain::state::{MandateState, PaymentMethod};
use mandato_core::error::Result;
use mandato_store::commerces::Commerce;
use mandato_store::db::Db;
use mandato_store::fintoc::{Enrolment, Event};
use mandato_store::{commerces, customers, installments, mandates};

use super::run::Charger;
use crate::documents::of_mandate::{Subject, epac_document};
use crate::operations::activation;
use crate::operations::fintoc as enrolments;
use crate::rails::Acquirer;
use mandato_core::domain::acquirer::Rail;

/// The most enrolments or charges one pass asks about (Fintoc allows five requests a second).
const PER_PASS: i64 = 200;

/// How long verified webhook events are kept: far past their signature's tolerance, so a
/// replay is always recognised while it could still verify.
pub const FINTOC_EVENTS_KEPT_DAYS: i64 = 7;

impl Charger {
    /// Acts on the verified webhook events not yet handled: asks Fintoc about each one's
    /// charge or subscription. Answers how many were handled.
    pub fn handle_fintoc_events(&self, today: NaiveDate) -> Result<usize> {
        let mut handled = 0;
        loop {
            let events = self
                .store()
                .read(|c| Ok(mandato_store::fintoc::unhandled_events(c, PER_PASS)?))?;
            for event in &events {
                self.handle_fintoc_event(event, today)?;
                let at = mandato_core::clock::timestamp(self.clock().now());
                self.store()
                    .write(|tx| Ok(mandato_store::fintoc::event_handled(tx, event, &at)?))?;
            }
            handled += events.len();
            if events.len() < PER_PASS as usize {
                return Ok(handled);
            }
        }
    }

    fn handle_fintoc_event(&self, event: &Event, today: NaiveDate) -> Result<()> {
        let object = event.object_id.as_str();
        match event.kind.split('.').next().unwrap_or_default() {
            "charge" => {
                let open = self
                    .store()
                    .read(|c| Ok(mandato_store::fintoc::open_charge(c, object)?))?;
                if let Some(attempt) = open {
                    self.settle_validations(std::slice::from_ref(&attempt), today)?;
                }
            }
            "subscription" | "subscription_intent" => {
                let validating = self
                    .store()
                    .read(|c| Ok(mandato_store::fintoc::validating_one(c, object)?))?;
                if let Some(enrolment) = validating {
                    self.follow_enrolment(&enrolment)?;
                }
            }
            other => tracing::debug!(kind = other, "a fintoc event of no concern"),
        }
        Ok(())
    }

    /// Asks Fintoc about every charge whose outcome is awaited; answers how many it decided.
    pub fn settle_fintoc_charges(&self, today: NaiveDate) -> Result<usize> {
        let open = self
            .store()
            .read(|c| Ok(mandato_store::fintoc::open_charges(c, PER_PASS)?))?;
        self.settle_validations(&open, today)
    }

    /// Forgets webhook events older than [`FINTOC_EVENTS_KEPT_DAYS`].
    pub(super) fn prune_fintoc_events(&self) -> Result<usize> {
        let before = mandato_core::clock::timestamp(
            self.clock().now() - chrono::Duration::days(FINTOC_EVENTS_KEPT_DAYS),
        );
        self.store()
            .write(|tx| Ok(mandato_store::fintoc::prune_events(tx, &before)?))
    }

    /// Asks Fintoc about every subscription still validating; answers how many ended.
    pub fn settle_fintoc_enrolments(&self) -> Result<usize> {
        let open = self
            .store()
            .read(|c| Ok(mandato_store::fintoc::validating(c, PER_PASS)?))?;
        let mut ended = 0;
        for enrolment in open {
            if self.follow_enrolment(&enrolment)? {
                ended += 1;
            }
        }
        Ok(ended)
    }

    /// Asks Fintoc about one subscription the bank is validating and applies its state;
    /// answers whether the enrolment ended (activated or failed).
    fn follow_enrolment(&self, enrolment: &Enrolment) -> Result<bool> {
        let Some(subscription_id) = enrolment.subscription_id.clone() else {
            return Ok(false);
        };
        let mandate = self
            .store()
            .read(|c| Ok(mandates::by_seq(c, enrolment.mandate_seq)?))?;
        let acquirer = self
            .store()
            .read(|c| self.rails().acquirer(c, mandate.commerce_id, Rail::Bank))?;
        let Acquirer::Fintoc(fintoc) = acquirer else {
            return Ok(false);
        };
        let subscription = match fintoc.subscription(&subscription_id) {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::warn!(error = %e, "fintoc did not answer for a subscription");
                return Ok(false);
            }
        };
        let now = self.clock().now();
        let intent = enrolment.intent_id.clone();
        match subscription.status.as_str() {
            "active" => {
                let method =
                    PaymentMethod::from_id(enrolment.method_id).unwrap_or(PaymentMethod::Pac);
                let (instrument, enrolled) = enrolments::instrument_of(method, &subscription)?;
                let acceptance = enrolments::acceptance_of(enrolment);
                // Made before the write: a PDF takes longer than a transaction should.
                let document = self.store().read(|c| {
                    let commerce = commerce_of(c, mandate.commerce_id)?;
                    let customer = customers::by_seq(c, mandate.customer_seq)?;
                    let installments = installments::for_mandate(c, mandate.seq)?;
                    let subject = Subject {
                        commerce: &commerce,
                        customer: &customer,
                        mandate: &mandate,
                        installments: &installments,
                    };
                    Ok(epac_document(
                        &subject,
                        &instrument,
                        &enrolled,
                        &acceptance,
                        enrolments::accepted_at(enrolment),
                    ))
                })?;
                let activated = self.store().write(|tx| {
                    if !enrolments::activated(tx, &intent, "VALIDATING", &subscription.id, now)? {
                        return Ok(false);
                    }
                    let fresh = mandates::by_seq(tx, mandate.seq)?;
                    if fresh.state != MandateState::Pending
                        || !fresh.payment_methods.contains(&method.id())
                    {
                        // Cancelled (or activated another way) meanwhile: nothing to do.
                        return Ok(true);
                    }
                    let commerce = commerce_of(tx, fresh.commerce_id)?;
                    activation::activate(
                        tx,
                        &commerce,
                        &fresh,
                        &activation::Enrolment {
                            instrument: &instrument,
                            enrolled: &enrolled,
                            acceptance: &acceptance,
                            document: document.as_ref(),
                        },
                        now,
                    )?;
                    Ok(true)
                })?;
                if activated {
                    self.events_written();
                }
                Ok(activated)
            }
            "canceled" => {
                self.store().write(|tx| {
                    enrolments::failed(tx, &intent, "VALIDATING", "subscription_canceled", now)
                })?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn commerce_of(conn: Db<'_>, id: i64) -> Result<Commerce> {
    commerces::by_id(conn, id)?.ok_or_else(|| {
        mandato_core::error::Error::Internal(anyhow::anyhow!("mandate without its commerce"))
    })
}
