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
