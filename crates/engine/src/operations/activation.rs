//! Activating a mandate: the customer's instrument is enrolled with the processor, the
//! mandate becomes ACTIVE, the acceptance is recorded and the activation event written, all
//! in one transaction (the enrolment itself happens before, at the processor).

use chrono::{DateTime, Utc};
use mandato_store::db::Db;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::mandates::{self, MandateView};
use crate::notify::events;
use mandato_core::clock::timestamp;
use mandato_core::domain::instrument::{InstrumentFacts, bank_name};
use mandato_core::domain::state::{MandateState, PaymentMethod};
use mandato_core::error::{Error, Result};
use mandato_core::processor::Enrolled;
use mandato_core::secret::Secret;
use mandato_store::commerces::Commerce;
use mandato_store::instruments::{self, NewAcceptance, NewInstrument};
use mandato_store::mandates::MandateRow;
use mandato_store::{customers, mandates as mandate_store};

/// What the customer saw and where from, kept as proof of consent.
pub struct Acceptance {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// The terms exactly as shown.
    pub terms: String,
}

/// Whether `mandate` can be activated with `method` at business time `now`; the message says
/// why not. Every enrolment route asks it, the sandbox's too: an expired link is expired for
/// the merchant's test tools exactly as for the customer's page.
pub fn check_activatable(
    mandate: &MandateRow,
    method: PaymentMethod,
    now: DateTime<Utc>,
) -> Result<()> {
    if mandate.state != MandateState::Pending {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            format!(
                "the mandate is {}, not awaiting activation",
                mandate.state.name()
            ),
        ));
    }
    if DateTime::parse_from_rfc3339(&mandate.magic_link_expires_at)
        .is_ok_and(|e| e.with_timezone(&Utc) <= now)
    {
        return Err(Error::refused(
            "MAGIC_LINK_EXPIRED",
            "the activation link has expired",
        ));
    }
    if !mandate.payment_methods.contains(&method.id()) {
        return Err(Error::refused_at(
            "PAYMENT_METHOD_NOT_ALLOWED",
            "paymentMethodId",
            format!(
                "payment method {} is not allowed for this mandate",
                method.id()
            ),
        ));
    }
    Ok(())
}

/// What the merchant and the staff see of the instrument: never more than the last four.
pub fn masked(instrument: &InstrumentFacts, enrolled: &Enrolled) -> String {
    match instrument {
        InstrumentFacts::Card { .. } => format!(
            "{} **** {}",
            enrolled.brand.as_deref().unwrap_or("CARD"),
            enrolled.last4
        ),
        InstrumentFacts::Bank { bank_code, .. } => {
            format!(
                "{} **** {}",
                bank_name(bank_code).unwrap_or(bank_code),
                enrolled.last4
            )
        }
    }
}

/// What the customer enrolled and accepted.
pub struct Enrolment<'a> {
    pub instrument: &'a InstrumentFacts,
    /// The processor's answer to enrolling `instrument`.
    pub enrolled: &'a Enrolled,
    pub acceptance: &'a Acceptance,
    /// The EPAC mandate PDF, sent to the merchant as `fileBase64`.
    pub document: Option<&'a Secret<Vec<u8>>>,
}

/// Activates a PENDING mandate whose instrument the processor has just enrolled.
pub fn activate(
    conn: Db<'_>,
    commerce: &Commerce,
    mandate: &MandateRow,
    enrolment: &Enrolment<'_>,
    now: DateTime<Utc>,
) -> Result<MandateView> {
    let Enrolment {
        instrument,
        enrolled,
        document,
        ..
    } = *enrolment;
    let stamp = timestamp(now);
    if !mandate_store::activate(
        conn,
        mandate.seq,
        &enrolled_method(instrument, enrolled),
        &stamp,
    )? {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            "the mandate was activated or cancelled meanwhile",
        ));
    }
    let document_sha = document.map(|d| hex::encode(Sha256::digest(d.expose())));
    store_enrolment(
        conn,
        mandate.seq,
        enrolment,
        document_sha.as_deref(),
        &stamp,
        // A signature-gated mandate the sandbox activates directly already holds the
        // instrument its enrolment stored.
        instruments::replace,
    )?;
    super::signed_activation::cancel_open_process(
        conn,
        commerce,
        mandate.seq,
        now,
        super::signed_activation::CancelledBy::DirectActivation,
    )?;
    let active = mandate_store::by_seq(conn, mandate.seq)?;
    let customer = customers::by_seq(conn, active.customer_seq)?;
    let file = document.map(|d| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(d.expose())
    });
    events::record_activation(conn, commerce, &active, &customer, file.as_deref(), now)?;
    mandates::view(conn, active)
}

/// The mandate's `paymentMethod` once active: the method and the masked instrument.
pub fn enrolled_method(instrument: &InstrumentFacts, enrolled: &Enrolled) -> serde_json::Value {
    let method = instrument.method();
    json!({
        "id": method.id(),
        "name": method.name(),
        "instrument": masked(instrument, enrolled),
    })
}

/// Stores the enrolled instrument (through `store_instrument`: a first insert, or the
/// replacement of an earlier enrolment's) and the customer's acceptance.
pub(crate) fn store_enrolment(
    conn: Db<'_>,
    mandate_seq: i64,
    enrolment: &Enrolment<'_>,
    document_sha256: Option<&str>,
    stamp: &str,
    store_instrument: fn(
        mandato_store::db::Db<'_>,
        &NewInstrument<'_>,
    ) -> mandato_store::db::Result<()>,
) -> Result<()> {
    let Enrolment {
        instrument,
        enrolled,
        acceptance,
        ..
    } = *enrolment;
    let method = instrument.method();
    let (bank_code, account_type, holder_rut) = match instrument {
        InstrumentFacts::Bank {
            bank_code,
            account_type,
            holder_rut,
            ..
        } => (
            Some(bank_code.as_str()),
            Some(account_type.as_str()),
            Some(holder_rut.to_string()),
        ),
        InstrumentFacts::Card { .. } => (None, None, None),
    };
    store_instrument(
        conn,
        &NewInstrument {
            mandate_seq,
            method_id: method.id(),
            processor_token: &enrolled.token,
            brand: enrolled.brand.as_deref(),
            last4: &enrolled.last4,
            bank_code,
            account_type,
            holder_rut: holder_rut.as_deref(),
            created_at: stamp,
        },
    )?;
    instruments::insert_acceptance(
        conn,
        &NewAcceptance {
            mandate_seq,
            accepted_at: stamp,
            ip: acceptance.ip.as_deref(),
            user_agent: acceptance.user_agent.as_deref(),
            terms: &acceptance.terms,
            terms_sha256: &hex::encode(Sha256::digest(acceptance.terms.as_bytes())),
            document_sha256,
        },
    )?;
    Ok(())
}

/// How many declined payment attempts one Magic Link may make in [`PORTAL_WINDOW`] (CONTRACT
/// 12): enough for a customer's typos, far too few to test stolen cards through the portal.
pub const PORTAL_DECLINES_PER_WINDOW: i64 = 5;
/// The window the declines are counted in.
pub const PORTAL_WINDOW: chrono::Duration = chrono::Duration::hours(1);

/// A portal attempt allowed to reach the processor; release it unless it ended in a decline.
#[derive(Clone, Copy, Debug)]
pub struct PortalClaim(i64);

/// Claims the right to send one portal attempt of the mandate's link to the processor, at
/// wall time `now`. Refused with the time the link accepts attempts again when it already has
/// [`PORTAL_DECLINES_PER_WINDOW`] declines (or attempts under way) in the last hour.
pub fn claim_portal_attempt(
    conn: Db<'_>,
    mandate_seq: i64,
    now: DateTime<Utc>,
) -> Result<std::result::Result<PortalClaim, DateTime<Utc>>> {
    let claimed = mandate_store::claim_portal_attempt(
        conn,
        mandate_seq,
        &timestamp(now),
        &timestamp(now - PORTAL_WINDOW),
        PORTAL_DECLINES_PER_WINDOW,
    )?;
    Ok(match claimed {
        Ok(seq) => Ok(PortalClaim(seq)),
        Err(oldest) => {
            let oldest = DateTime::parse_from_rfc3339(&oldest)
                .map_err(|e| Error::Internal(anyhow::anyhow!("stored attempt time: {e}")))?;
            Err(oldest.with_timezone(&Utc) + PORTAL_WINDOW)
        }
    })
}

/// The claimed attempt did not end in a decline: it does not count against the link.
pub fn release_portal_attempt(conn: Db<'_>, claim: PortalClaim) -> Result<()> {
    Ok(mandate_store::release_portal_attempt(conn, claim.0)?)
}
