//! What the signing pages, the Magic Link's signature step and the signatures API read about a
//! process, each in the caller's snapshot.

use mandato_core::domain::activation::ActivationFailure;
use mandato_core::error::{Error, Result};
use mandato_store::customers::{self, CustomerRow};
use mandato_store::db::Db;
use mandato_store::{mandate_signatures, signatures};

use super::ProcessState;
use super::ceremony::{self, Ceremony, ProcessView};
use crate::operations::{Ctx, CustomerRef};

/// Whether a signing token names a signatory (unknown links are answered from a read).
pub fn token_known(conn: Db<'_>, token: &str) -> Result<bool> {
    Ok(signatures::signatory_by_token(conn, token)?.is_some())
}

/// The id of the signatory a token names (empty when none).
pub fn signatory_id(conn: Db<'_>, token: &str) -> Result<String> {
    Ok(signatures::signatory_by_token(conn, token)?
        .map(|s| s.id)
        .unwrap_or_default())
}

/// The sealed bytes of each document, in order (`None` for one not sealed).
pub fn sealed_documents(conn: Db<'_>, document_seqs: &[i64]) -> Result<Vec<Option<Vec<u8>>>> {
    document_seqs
        .iter()
        .map(|seq| signatures::sealed_bytes(conn, *seq))
        .collect()
}

/// What a signatory's document link finds.
pub enum DocumentLookup {
    /// No such token or no such document.
    Unknown,
    /// The process ended without completing; its ceremony says how.
    Closed(Box<Ceremony>),
    /// The document's name and bytes: sealed once the process is complete, else the original.
    Found { name: String, bytes: Vec<u8> },
}

/// The `number`th (from 1) document of the process a signing token belongs to.
pub fn signatory_document(conn: Db<'_>, token: &str, number: &str) -> Result<DocumentLookup> {
    let Some(c) = ceremony::peek(conn, token)? else {
        return Ok(DocumentLookup::Unknown);
    };
    let state = c.view.process.state;
    if !state.is_open() && state != ProcessState::Completed {
        return Ok(DocumentLookup::Closed(Box::new(c)));
    }
    let Some(doc) = number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| c.view.documents.get(i))
    else {
        return Ok(DocumentLookup::Unknown);
    };
    let sealed = if state == ProcessState::Completed {
        signatures::sealed_bytes(conn, doc.seq)?
    } else {
        None
    };
    let bytes = match sealed {
        Some(b) => b,
        None => signatures::original_bytes(conn, doc.seq)?,
    };
    Ok(DocumentLookup::Found {
        name: doc.name.clone(),
        bytes,
    })
}

/// Where a signature-gated mandate's signature stands.
pub enum MandateSigning {
    /// Open: the customer signs with this signatory token.
    Open { token: String },
    /// Signed; the document is being sealed, then the mandate activates.
    Sealing,
    /// Ended without activating the mandate.
    Ended(ActivationFailure),
}

/// The mandate's latest signature process, while it has not activated the mandate (`None`:
/// no process yet, or it completed).
pub fn mandate_signing(conn: Db<'_>, mandate_seq: i64) -> Result<Option<MandateSigning>> {
    let Some(row) = mandate_signatures::latest_of_mandate(conn, mandate_seq)? else {
        return Ok(None);
    };
    Ok(match row.process_state {
        s if s.is_open() => {
            if ceremony::awaiting_seal(conn, row.process_seq)? {
                Some(MandateSigning::Sealing)
            } else {
                signatures::signatories_of(conn, row.process_seq)?
                    .into_iter()
                    .next()
                    .map(|s| MandateSigning::Open { token: s.token })
            }
        }
        ProcessState::Completed => None,
        _ => row.failure.map(MandateSigning::Ended),
    })
}

/// One of the acting commerce's processes by internal id (`SIGNATURE_PROCESS_NOT_FOUND`).
pub fn process_of_commerce(conn: Db<'_>, ctx: &Ctx<'_>, internal_id: &str) -> Result<ProcessView> {
    let process = signatures::process_by_internal_id(conn, ctx.commerce.id, internal_id)?
        .ok_or(Error::not_found("signature process"))?;
    ceremony::load_view(conn, process)
}

/// The acting commerce's customers the references name, in order (`None` where a reference
/// is missing or names nobody).
pub fn customers_named(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    references: &[Option<&CustomerRef>],
) -> Result<Vec<Option<CustomerRow>>> {
    let commerce_id = ctx.commerce.id;
    references
        .iter()
        .map(|reference| match reference {
            Some(CustomerRef::UserId(id)) => Ok(customers::by_user_id(conn, commerce_id, id)?),
            Some(CustomerRef::InternalUserId(id)) => {
                Ok(customers::by_internal_id(conn, commerce_id, id)?)
            }
            None => Ok(None),
        })
        .collect()
}
