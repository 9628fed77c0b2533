//! The customer replaces the card of an ACTIVE mandate from its Magic Link (after a rejected
//! charge, or before a card expires). The new card is charged from then on, and the mandate's
//! rejected installments are retried at the next charging run; the contract defines no event
//! for a change of instrument, so none is sent (the next payment event names the method).

use chrono::{DateTime, NaiveDate, Utc};
use mandato_store::db::Db;

use super::activation::{Enrolment, enrolled_method, store_enrolment};
use mandato_core::clock::timestamp;
use mandato_core::domain::state::MandateState;
use mandato_core::error::{Error, Result};
use mandato_store::mandates::{self as mandate_store, MandateRow};
use mandato_store::{charging, instruments};

/// What a card change did.
#[derive(Debug, PartialEq, Eq)]
pub struct CardChanged {
    /// Rejected installments now due for a retry at the next run.
    pub retried: usize,
}

/// Whether the mandate's card can be replaced now: only an ACTIVE mandate has one to replace.
pub fn check_replaceable(mandate: &MandateRow) -> Result<()> {
    if mandate.state == MandateState::Active {
        Ok(())
    } else {
        Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            format!(
                "the mandate is {}; only an active mandate changes its card",
                mandate.state.name()
            ),
        ))
    }
}

/// Stores the new card (and the customer's acceptance of the terms with it) in place of the
/// enrolled instrument, and schedules the rejected installments for the run of `today` (or
/// the next one, when today's already attempted them).
pub fn replace_card(
    conn: Db<'_>,
    mandate: &MandateRow,
    enrolment: &Enrolment<'_>,
    today: NaiveDate,
    now: DateTime<Utc>,
) -> Result<CardChanged> {
    check_replaceable(mandate)?;
    let stamp = timestamp(now);
    let method = enrolled_method(enrolment.instrument, enrolment.enrolled);
    if !mandate_store::set_enrolled_method(conn, mandate.seq, &method, &stamp)? {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            "the mandate was cancelled or finished meanwhile",
        ));
    }
    store_enrolment(
        conn,
        mandate.seq,
        enrolment,
        None,
        &stamp,
        instruments::replace,
    )?;
    let retried = charging::retry_rejected_on(conn, mandate.seq, &today.to_string())?;
    Ok(CardChanged { retried })
}
