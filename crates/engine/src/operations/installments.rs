//! Adding installments to DYNAMIC mandates and changing installment states by hand.

use std::collections::HashSet;

use mandato_store::db::Db;
use serde_json::{Value, json};

use super::{Ctx, CustomerRef, MandateRef, ledger};
use crate::notify::events;
use mandato_core::domain::date::Date;
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::{InstallmentState, MandateState, MandateType};
use mandato_core::error::{Error, FieldErrors, Result};
use mandato_store::installments::{
    self, InstallmentRefs, InstallmentRow, NewInstallment, StateChange,
};
use mandato_store::mandates::{self, MandateRow};
use mandato_store::{calendar, customers};

/// A validated `POST /installments`.
pub struct AddInstallments {
    pub customer: CustomerRef,
    pub product: MandateRef,
    pub installments: Vec<NewInstallment>,
}

pub struct Added {
    pub mandate: MandateRow,
    pub installments: Vec<InstallmentRow>,
}

/// Checks installments against what the mandate's charges allow: its currency, and for
/// DYNAMIC mandates the `maxAmount` per installment. `prefix` is the JSON path of the array.
pub fn check_against_charges(
    currency: Currency,
    max_amount: Option<&Money>,
    items: &[NewInstallment],
    prefix: &str,
    errors: &mut FieldErrors,
) {
    for (i, item) in items.iter().enumerate() {
        if item.amount.currency() != currency {
            errors.push(
                format!("{prefix}[{i}].currencyId"),
                "CURRENCY_MISMATCH",
                format!("the mandate charges in {}", currency.code()),
            );
        } else if let Some(max) = max_amount
            && item.amount.amount() > max.amount()
        {
            errors.push(
                format!("{prefix}[{i}].amount"),
                "AMOUNT_ABOVE_MAXIMUM",
                format!(
                    "the mandate allows at most {} per installment",
                    max.amount().normalize()
                ),
            );
        }
    }
}

/// The currency and per-installment maximum recorded in a mandate's charges.
fn stored_limits(mandate: &MandateRow) -> Result<(Currency, Option<Money>)> {
    let charges = mandate.charges.value();
    let currency = charges["currencyId"]
        .as_str()
        .and_then(Currency::parse)
        .ok_or_else(|| {
            Error::Internal(anyhow::anyhow!("mandate {} has no currency", mandate.id))
        })?;
    let max =
        match &charges["maxAmount"] {
            Value::Number(n) => Some(Money::parse(n, currency).map_err(|e| {
                Error::Internal(anyhow::anyhow!("stored maxAmount unreadable: {e}"))
            })?),
            _ => None,
        };
    Ok((currency, max))
}

pub fn add(conn: Db<'_>, ctx: &Ctx<'_>, cmd: &AddInstallments) -> Result<Added> {
    let mandate = super::mandates::find_row(conn, ctx, &cmd.product)?;
    let owner = customers::by_seq(conn, mandate.customer_seq)?;
    let owned = match &cmd.customer {
        CustomerRef::UserId(id) => owner.user_id == *id,
        CustomerRef::InternalUserId(id) => owner.id == *id,
    };
    if !owned {
        // The mandate exists, but not for this customer: the 404 names the customer.
        let (field, id) = cmd.customer.field("customer");
        return Err(Error::not_found_at("mandate", &field, id));
    }
    if mandate.mandate_type != MandateType::Dynamic {
        return Err(Error::refused_at(
            "MANDATE_TYPE_CONFLICT",
            "product",
            format!(
                "installments can only be added to DYNAMIC mandates, this one is {}",
                mandate.mandate_type.name()
            ),
        ));
    }
    if !mandate.state.accepts_installment_changes() {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            format!(
                "installments cannot be added to a {} mandate",
                mandate.state.name()
            ),
        ));
    }
    let (currency, max) = stored_limits(&mandate)?;
    let mut errors = FieldErrors::new();
    check_against_charges(
        currency,
        max.as_ref(),
        &cmd.installments,
        "installments",
        &mut errors,
    );
    errors.into_result()?;
    let rows = installments::insert_many(
        conn,
        mandate.seq,
        ctx.commerce.id,
        &cmd.installments,
        "installments",
        &ctx.timestamp(),
    )?;
    Ok(Added {
        mandate,
        installments: rows,
    })
}

/// Evidence of a payment made outside the automatic flow.
pub struct PaymentEvidence {
    pub date: Date,
    pub amount: Money,
    pub authorization_code: Option<String>,
    pub method: Option<String>,
}

pub enum Action {
    Payment(PaymentEvidence),
    Annulment,
}

/// A validated `PUT /installments/status/change`.
pub struct ChangeStatus {
    pub product: MandateRef,
    pub installments: OwnedRefs,
    pub action: Action,
}

pub enum OwnedRefs {
    External(Vec<String>),
    Internal(Vec<String>),
}

impl OwnedRefs {
    fn borrow(&self) -> (InstallmentRefs<'_>, &'static str) {
        match self {
            OwnedRefs::External(ids) => (InstallmentRefs::External(ids), "installments.ids"),
            OwnedRefs::Internal(ids) => {
                (InstallmentRefs::Internal(ids), "installments.internalIds")
            }
        }
    }
}

pub struct Changed {
    pub mandate: MandateRow,
    pub installments: Vec<InstallmentRow>,
}

pub fn change_status(conn: Db<'_>, ctx: &Ctx<'_>, cmd: &ChangeStatus) -> Result<Changed> {
    let mandate = super::mandates::find_row(conn, ctx, &cmd.product)?;
    if matches!(
        mandate.state,
        MandateState::Cancelled | MandateState::Deleted
    ) {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            format!(
                "installments of a {} mandate cannot change",
                mandate.state.name()
            ),
        ));
    }
    let (refs, path) = cmd.installments.borrow();
    let rows = match installments::find_in_mandate(conn, mandate.seq, &refs)? {
        Ok(rows) => rows,
        Err(index) => {
            let id = match &refs {
                InstallmentRefs::External(ids) | InstallmentRefs::Internal(ids) => &ids[index],
            };
            return Err(Error::not_found_at(
                "installment",
                &format!("{path}[{index}]"),
                id,
            ));
        }
    };
    let target = match cmd.action {
        Action::Payment(_) => InstallmentState::Paid,
        Action::Annulment => InstallmentState::Annulled,
    };
    let mut errors = FieldErrors::new();
    let mut seen = HashSet::new();
    for (i, row) in rows.iter().enumerate() {
        if !seen.insert(row.seq) {
            errors.push(
                format!("{path}[{i}]"),
                "DUPLICATED_INSTALLMENT",
                "the installment is listed twice",
            );
        } else if !row.state.can_move_to(target) {
            return Err(Error::refused_at(
                "INSTALLMENT_STATE_CONFLICT",
                format!("{path}[{i}]"),
                format!(
                    "installment {} is {} and cannot become {}",
                    row.external_id,
                    row.state.name(),
                    target.name()
                ),
            ));
        }
    }
    errors.into_result()?;
    let (payment_json, authorization) = match &cmd.action {
        Action::Payment(evidence) => {
            check_evidence(ctx, evidence, &rows)?;
            let json = json!({
                "date": evidence.date.to_string(),
                "amount": evidence.amount.to_json_number(),
                "currencyId": evidence.amount.currency().code(),
                "authorizationCode": evidence.authorization_code,
                "method": evidence.method,
            });
            (Some(json), evidence.authorization_code.clone())
        }
        Action::Annulment => (None, None),
    };
    let now = ctx.timestamp();
    let owner = customers::by_seq(conn, mandate.customer_seq)?;
    let change = StateChange {
        payment: payment_json.as_ref(),
        authorization_code: authorization.as_deref(),
        payment_method_id: None,
    };
    let mut changed = Vec::with_capacity(rows.len());
    let charge_dates = calendar::charge_dates(conn, ctx.commerce.id)?;
    for row in &rows {
        let updated = installments::set_state(conn, row.seq, target, &now, &change)?;
        let movement = ledger::Movement {
            mandate: &mandate,
            installment: &updated,
            business_date: ctx.today,
            now: &now,
        };
        match &cmd.action {
            Action::Payment(_) => {
                ledger::record_manual_payment(conn, &movement, authorization.as_deref())?
            }
            Action::Annulment => ledger::record_annulment(conn, &movement)?,
        }
        events::record_payment(
            conn,
            ctx.commerce,
            &charge_dates,
            &mandate,
            &owner,
            &updated,
            ctx.now,
        )?;
        changed.push(updated);
    }
    let mandate = finish_if_complete(conn, mandate, &now)?;
    Ok(Changed {
        mandate,
        installments: changed,
    })
}

/// A payment must account for exactly the installments it settles, in their currency, on a
/// date that has happened, with an authorization code when the commerce's contract says so.
fn check_evidence(
    ctx: &Ctx<'_>,
    evidence: &PaymentEvidence,
    rows: &[InstallmentRow],
) -> Result<()> {
    let mut errors = FieldErrors::new();
    let currency = rows[0].amount.currency();
    if evidence.amount.currency() != currency
        || rows.iter().any(|r| r.amount.currency() != currency)
    {
        errors.push(
            "payment.currencyId",
            "CURRENCY_MISMATCH",
            format!("the installments are in {}", currency.code()),
        );
    } else {
        let due: rust_decimal::Decimal = rows.iter().map(|r| r.amount.amount()).sum();
        if due != evidence.amount.amount() {
            errors.push(
                "payment.amount",
                "PAYMENT_AMOUNT_MISMATCH",
                format!("the listed installments add up to {}", due.normalize()),
            );
        }
    }
    if evidence.date > ctx.today {
        errors.push(
            "payment.date",
            "DATE_IN_FUTURE",
            "a payment cannot be dated after today",
        );
    }
    if ctx.commerce.authorization_required && evidence.authorization_code.is_none() {
        errors.push(
            "payment.authorizationCode",
            "REQUIRED",
            "this commerce's contract requires the authorization code of every payment",
        );
    }
    errors.into_result()
}

/// SUBSCRIPTION mandates, and ONEPAY ones that terminate when charged, finish once every
/// installment is final.
pub fn finish_if_complete(conn: Db<'_>, mandate: MandateRow, now: &str) -> Result<MandateRow> {
    if !may_finish(&mandate) {
        return Ok(mandate);
    }
    let (all, unsettled) = installments::unsettled_count(conn, mandate.seq)?;
    if all == 0 || unsettled > 0 {
        return Ok(mandate);
    }
    mandates::set_state(conn, mandate.seq, MandateState::Finished, None, now)?;
    Ok(mandates::by_seq(conn, mandate.seq)?)
}

/// `finish_if_complete` for many mandates (a charging page's): their installments counted in
/// one statement.
pub fn finish_all_if_complete(conn: Db<'_>, mandates: &[&MandateRow], now: &str) -> Result<()> {
    let candidates: Vec<i64> = mandates
        .iter()
        .filter(|m| may_finish(m))
        .map(|m| m.seq)
        .collect();
    let counts = installments::unsettled_counts(conn, &candidates)?;
    for seq in candidates {
        if let Some((all, 0)) = counts.get(&seq)
            && *all > 0
        {
            mandates::set_state(conn, seq, MandateState::Finished, None, now)?;
        }
    }
    Ok(())
}

/// Whether the mandate finishes once its installments are final, and has not ended yet.
fn may_finish(mandate: &MandateRow) -> bool {
    let finishes = match mandate.mandate_type {
        MandateType::Subscription => true,
        MandateType::Onepay => mandate.terminate_when_charged,
        MandateType::Dynamic | MandateType::Permanent => false,
    };
    finishes && matches!(mandate.state, MandateState::Pending | MandateState::Active)
}

/// Reverses a PAID installment now (the acquirer took the money back): REVERSED, its payment
/// event and its ledger entry. The sandbox's `REVERSED` outcome and `mandato trigger
/// payment.reversed`.
pub fn reverse(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    row: &InstallmentRow,
    mandate: &MandateRow,
) -> Result<InstallmentRow> {
    if !row.state.can_move_to(InstallmentState::Reversed) {
        return Err(Error::refused(
            "INSTALLMENT_STATE_CONFLICT",
            format!(
                "only a PAID installment can be reversed; this one is {}",
                row.state.name()
            ),
        ));
    }
    let now = ctx.timestamp();
    let reversed = installments::set_state(
        conn,
        row.seq,
        InstallmentState::Reversed,
        &now,
        &Default::default(),
    )?;
    ledger::record_reversal(
        conn,
        &ledger::Movement {
            mandate,
            installment: &reversed,
            business_date: ctx.today,
            now: &now,
        },
    )?;
    let customer = customers::by_seq(conn, mandate.customer_seq)?;
    let charge_dates = calendar::charge_dates(conn, ctx.commerce.id)?;
    events::record_payment(
        conn,
        ctx.commerce,
        &charge_dates,
        mandate,
        &customer,
        &reversed,
        ctx.now,
    )?;
    Ok(reversed)
}

/// A page of the acting commerce's receivables (`filter.limit` of them) and the day each is
/// charged.
pub fn receivables(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    filter: &mandato_store::installments::ReceivablesFilter,
) -> Result<(
    Vec<mandato_store::installments::Receivable>,
    std::sync::Arc<mandato_core::domain::holidays::ChargeDates>,
)> {
    Ok((
        mandato_store::installments::receivables(conn, ctx.commerce.id, filter)?,
        ctx.charge_dates(conn)?,
    ))
}
