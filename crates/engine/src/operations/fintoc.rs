//! The Magic Link's bank step on Fintoc Direct Debit (CONTRACT 13): a subscription intent the
//! customer authorizes at their bank through Fintoc's widget. What the customer accepted is
//! kept with the intent (`fintoc_enrolments`) until Fintoc says how it ended: a subscription
//! the bank is validating (the mandate stays PENDING, `activationStatus: IN_VALIDATION`), an
//! active one (the mandate activates as any activation does), or a failure (it stays PENDING
//! with the reason).

use chrono::{DateTime, Utc};

use mandato_core::clock::timestamp;
use mandato_core::domain::instrument::{BANKS, InstrumentFacts};
use mandato_core::domain::rut::Rut;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_core::processor::Enrolled;
use mandato_store::db::Db;
use mandato_store::fintoc::{self, Enrolment, NewEnrolment};

use super::activation::Acceptance;
use crate::rails::fintoc::Subscription;

/// How many intents one Magic Link may start in [`ENROLMENT_WINDOW`].
pub const ENROLMENTS_PER_WINDOW: i64 = 20;
pub const ENROLMENT_WINDOW: chrono::Duration = chrono::Duration::hours(1);

/// Whether the mandate may start another intent at `now`; when not, until when it waits.
pub fn may_start(
    conn: Db<'_>,
    mandate_seq: i64,
    now: DateTime<Utc>,
) -> Result<std::result::Result<(), DateTime<Utc>>> {
    let started = fintoc::started_since(conn, mandate_seq, &timestamp(now - ENROLMENT_WINDOW))?;
    Ok(if started < ENROLMENTS_PER_WINDOW {
        Ok(())
    } else {
        Err(now + ENROLMENT_WINDOW)
    })
}

/// Records an intent Fintoc created, with what the customer accepted, before the widget opens.
pub fn record_start(
    tx: Db<'_>,
    intent_id: &str,
    mandate_seq: i64,
    method: PaymentMethod,
    acceptance: &Acceptance,
    now: DateTime<Utc>,
) -> Result<()> {
    Ok(fintoc::insert_enrolment(
        tx,
        &NewEnrolment {
            intent_id,
            mandate_seq,
            method_id: method.id(),
            terms: &acceptance.terms,
            ip: acceptance.ip.as_deref(),
            user_agent: acceptance.user_agent.as_deref(),
            at: &timestamp(now),
        },
    )?)
}

/// What the customer accepted when the intent started.
pub fn acceptance_of(enrolment: &Enrolment) -> Acceptance {
    Acceptance {
        ip: enrolment.ip.clone(),
        user_agent: enrolment.user_agent.clone(),
        terms: enrolment.terms.clone(),
    }
}

/// When the customer accepted the terms: when the intent started (the widget came after).
pub fn accepted_at(enrolment: &Enrolment) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(&enrolment.created_at)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// The instrument an active subscription is: the bank (by Fintoc's institution, to our bank
/// codes when we know it), the account type, the holder's RUT; the subscription's id charges
/// it, and the account's last four digits are shown.
pub fn instrument_of(
    method: PaymentMethod,
    subscription: &Subscription,
) -> Result<(InstrumentFacts, Enrolled)> {
    let account = subscription.account.as_ref().ok_or_else(|| {
        Error::Internal(anyhow::anyhow!("fintoc subscription without its account"))
    })?;
    let holder = account
        .holder_id
        .as_deref()
        .and_then(|id| Rut::parse(id).ok())
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("fintoc account without a holder RUT")))?;
    let bank_name = account
        .institution
        .as_ref()
        .and_then(|i| i.name.clone())
        .unwrap_or_default();
    let bank_code = BANKS
        .iter()
        .find(|(_, name)| {
            !bank_name.is_empty() && name.contains(bank_name.trim_start_matches("Banco "))
        })
        .map(|(code, _)| code.to_string())
        .unwrap_or_else(|| bank_name.clone());
    // Fintoc's reference shows only `checking_account` (direct-debit-subscription-object);
    // another type is shown as a checking account rather than guessed.
    let account_type = "CHECKING".to_string();
    let digits: String = account
        .number
        .as_deref()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let last4 = digits[digits.len().saturating_sub(4)..].to_string();
    Ok((
        InstrumentFacts::Bank {
            method,
            bank_code,
            account_type,
            holder_rut: holder,
        },
        Enrolled {
            token: subscription.id.clone(),
            brand: (!bank_name.is_empty()).then_some(bank_name),
            last4,
        },
    ))
}

pub use mandato_store::fintoc::Enrolment as FintocEnrolment;

/// The mandate's enrolment with this intent.
pub fn enrolment(conn: Db<'_>, intent_id: &str, mandate_seq: i64) -> Result<Option<Enrolment>> {
    Ok(fintoc::enrolment(conn, intent_id, mandate_seq)?)
}

/// The intent made a subscription the bank is validating; false when it had moved on.
pub fn validating(
    tx: Db<'_>,
    intent_id: &str,
    subscription_id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    Ok(fintoc::advance(
        tx,
        intent_id,
        "STARTED",
        "VALIDATING",
        Some(subscription_id),
        None,
        &timestamp(now),
    )?)
}

/// The intent (or its subscription) failed with `reason`; false when it had moved on.
pub fn failed(
    tx: Db<'_>,
    intent_id: &str,
    from: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    Ok(fintoc::advance(
        tx,
        intent_id,
        from,
        "FAILED",
        None,
        Some(reason),
        &timestamp(now),
    )?)
}

/// The subscription is active and activates the mandate; false when it had moved on.
pub fn activated(
    tx: Db<'_>,
    intent_id: &str,
    from: &str,
    subscription_id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    Ok(fintoc::advance(
        tx,
        intent_id,
        from,
        "ACTIVATED",
        Some(subscription_id),
        None,
        &timestamp(now),
    )?)
}

/// Whether the mandate's latest enrolment is a subscription the bank is validating.
pub fn bank_validating(conn: Db<'_>, mandate_seq: i64) -> Result<bool> {
    Ok(fintoc::latest_of_mandate(conn, mandate_seq)?.is_some_and(|e| e.state == "VALIDATING"))
}
