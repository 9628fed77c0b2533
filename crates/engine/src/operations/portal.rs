//! The customer's own payment of an installment on the Magic Link's portal: once the acquirer
//! approved the card charge, the installment becomes PAID with that approval, its ledger entry
//! and payment event are written, and the mandate finishes when nothing is left to charge, all
//! in one transaction.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;

use super::installments::finish_if_complete;
use super::ledger;
use crate::notify::events;
use mandato_core::clock::timestamp;
use mandato_core::domain::state::{InstallmentState, PaymentMethod};
use mandato_core::error::{Error, Result};
use mandato_store::commerces::Commerce;
use mandato_store::db::Db;
use mandato_store::installments::{self, StateChange};
use mandato_store::{calendar, customers, mandates};

/// An approved portal charge of one installment.
pub struct ApprovedPayment<'a> {
    pub commerce: &'a Commerce,
    pub mandate_seq: i64,
    pub installment_seq: i64,
    pub method: PaymentMethod,
    pub authorization_code: &'a str,
    /// The acquirer's fee, when it reported one.
    pub fee: Option<Decimal>,
    pub business_date: NaiveDate,
    pub now: DateTime<Utc>,
}

/// Records `payment` in the caller's transaction. A double submit whose twin recorded this
/// same approval first is a success; an installment that moved meanwhile (charged by the
/// engine, marked by the merchant, its mandate cancelled) is refused with
/// `INSTALLMENT_STATE_CONFLICT`, and the caller tells the customer the charge needs the
/// merchant's reconciliation.
pub fn record_approved(tx: Db<'_>, payment: &ApprovedPayment<'_>) -> Result<()> {
    let mandate = mandates::by_seq(tx, payment.mandate_seq)?;
    let fresh = installments::by_seq(tx, payment.installment_seq)?;
    if fresh.state == InstallmentState::Paid
        && fresh.authorization_code.as_deref() == Some(payment.authorization_code)
    {
        return Ok(());
    }
    if !mandate.state.accepts_installment_changes()
        || !fresh.state.can_move_to(InstallmentState::Paid)
    {
        return Err(Error::refused(
            "INSTALLMENT_STATE_CONFLICT",
            format!(
                "installment {} is {} in a {} mandate",
                fresh.id,
                fresh.state.name(),
                mandate.state.name()
            ),
        ));
    }
    let stamp = timestamp(payment.now);
    let paid = installments::set_state(
        tx,
        fresh.seq,
        InstallmentState::Paid,
        &stamp,
        &StateChange {
            authorization_code: Some(payment.authorization_code),
            payment_method_id: Some(payment.method.id()),
            ..Default::default()
        },
    )?;
    ledger::record_charge(
        tx,
        &ledger::Movement {
            mandate: &mandate,
            installment: &paid,
            business_date: payment.business_date,
            now: &stamp,
        },
        &ledger::Approval {
            charged: &paid.amount,
            method: payment.method,
            authorization_code: payment.authorization_code,
            fee: payment.fee,
        },
    )?;
    let customer = customers::by_seq(tx, mandate.customer_seq)?;
    let charge_dates = calendar::charge_dates(tx, payment.commerce.id)?;
    events::record_payment(
        tx,
        payment.commerce,
        &charge_dates,
        &mandate,
        &customer,
        &paid,
        payment.now,
    )?;
    finish_if_complete(tx, mandate, &stamp)?;
    Ok(())
}
