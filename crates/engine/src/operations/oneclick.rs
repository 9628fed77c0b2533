//! The Magic Link's Oneclick inscriptions (CONTRACT 13): what the customer accepted when
//! leaving for Webpay, kept under the SHA-256 of Transbank's token until the return.

use sha2::{Digest, Sha256};

use mandato_core::error::Result;
use mandato_store::db::Db;
use mandato_store::oneclick::{self, NewInscription};

pub use mandato_store::oneclick::StartedInscription;

use super::activation::Acceptance;

/// What a finished inscription does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Activates the PENDING mandate with the inscribed card.
    Activation,
    /// Replaces the ACTIVE mandate's card.
    CardChange,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Activation => "ACTIVATION",
            Purpose::CardChange => "CARD_CHANGE",
        }
    }

    pub fn parse(text: &str) -> Option<Purpose> {
        [Purpose::Activation, Purpose::CardChange]
            .into_iter()
            .find(|p| p.as_str() == text)
    }
}

/// How an inscription ended, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Finished,
    Refused,
    Abandoned,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Finished => "FINISHED",
            Ending::Refused => "REFUSED",
            Ending::Abandoned => "ABANDONED",
        }
    }
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// How many inscriptions one Magic Link may start in [`INSCRIPTION_WINDOW`]: a customer
/// retrying a refused card is far below it; a script hammering Transbank through the link is
/// stopped by it.
pub const INSCRIPTIONS_PER_WINDOW: i64 = 20;
pub const INSCRIPTION_WINDOW: chrono::Duration = chrono::Duration::hours(1);

/// Whether the mandate may start another inscription at `now`; when not, until when it waits.
pub fn may_start(
    conn: Db<'_>,
    mandate_seq: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<std::result::Result<(), chrono::DateTime<chrono::Utc>>> {
    let since = mandato_core::clock::timestamp(now - INSCRIPTION_WINDOW);
    let started = oneclick::started_since(conn, mandate_seq, &since)?;
    Ok(if started < INSCRIPTIONS_PER_WINDOW {
        Ok(())
    } else {
        Err(now + INSCRIPTION_WINDOW)
    })
}

/// Records an inscription Transbank just started for the mandate.
pub fn record_start(
    tx: Db<'_>,
    token: &str,
    mandate_seq: i64,
    purpose: Purpose,
    acceptance: &Acceptance,
    at: &str,
) -> Result<()> {
    oneclick::insert(
        tx,
        &NewInscription {
            token_sha256: &token_hash(token),
            mandate_seq,
            purpose: purpose.as_str(),
            terms: &acceptance.terms,
            ip: acceptance.ip.as_deref(),
            user_agent: acceptance.user_agent.as_deref(),
            at,
        },
    )?;
    Ok(())
}

/// The mandate's inscription for the token Transbank sent back, if it started here.
pub fn started(conn: Db<'_>, token: &str, mandate_seq: i64) -> Result<Option<StartedInscription>> {
    Ok(oneclick::find(conn, &token_hash(token), mandate_seq)?)
}

/// Ends the inscription; false when it had already ended (the return came twice).
pub fn end(tx: Db<'_>, token: &str, ending: Ending, at: &str) -> Result<bool> {
    Ok(oneclick::end(tx, &token_hash(token), ending.as_str(), at)?)
}

/// What re-pointing did to the customer's other mandates.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repointed {
    /// Mandates now charged to the new card.
    pub moved: Vec<String>,
    /// Mandates that do not allow the new card's method: their old card no longer exists at
    /// Transbank, so they wait for the customer to register another.
    pub left: Vec<String>,
}

/// Oneclick keeps one card per username, and our username is the customer: a finished
/// inscription invalidates the customer's previous `tbk_user` at Transbank ("Un mismo
/// `username` solo puede tener una tarjeta inscrita", transbankdevelopers.cl/documentacion/
/// oneclick). The customer's other live mandates on a card are moved to the new card, the
/// page having said so before the customer went to Webpay; those that do not allow its
/// method are left (and logged) for the customer to update.
pub fn repoint_customer_cards(
    tx: Db<'_>,
    customer_seq: i64,
    except_mandate: i64,
    method: mandato_core::domain::state::PaymentMethod,
    enrolled: &mandato_core::processor::Enrolled,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Repointed> {
    let at = mandato_core::clock::timestamp(now);
    use mandato_store::{instruments, mandates};
    let mut repointed = Repointed::default();
    for seq in instruments::other_cards_of_customer(tx, customer_seq, except_mandate)? {
        let mandate = mandates::by_seq(tx, seq)?;
        if !mandate.state.accepts_installment_changes() {
            continue;
        }
        if !mandate.payment_methods.contains(&method.id()) {
            tracing::warn!(mandate = %mandate.id, method = method.id(), "the customer's new card is of a method this mandate does not allow; it keeps a card Transbank no longer holds");
            repointed.left.push(mandate.id);
            continue;
        }
        instruments::repoint_card(
            tx,
            seq,
            method.id(),
            &enrolled.token,
            enrolled.brand.as_deref(),
            &enrolled.last4,
        )?;
        // What lookups show as the mandate's `paymentMethod` (active mandates only).
        let shown = super::activation::enrolled_method(
            &mandato_core::domain::instrument::InstrumentFacts::Card { method },
            enrolled,
        );
        mandates::set_enrolled_method(tx, seq, &shown, &at)?;
        repointed.moved.push(mandate.id);
    }
    Ok(repointed)
}
