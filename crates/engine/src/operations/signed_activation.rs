//! Activation by electronic signature: on a mandate whose activation mode is `SIGNATURE`,
//! the customer's enrolment stores the instrument and starts a signature process over the
//! mandate document (the customer its single signatory); the mandate stays PENDING. This
//! module calls the signature engine (`esign::ceremony`), never the other way round:
//!
//! - [`process_completed`] runs in the write that stores the process COMPLETED with its sealed
//!   document (`esign::sealing` calls it with what `ceremony::complete_seal` answers): the
//!   mandate becomes ACTIVE and its activation event (with `signedDocument`) is written there,
//!   so a completed signature never stands beside a PENDING mandate;
//! - when the process is rejected, expires or is cancelled, `ceremony::process_ended` records
//!   the reason on the mandate's link to it: the mandate stays PENDING with that reason, and its
//!   Magic Link can start a new process.

use base64::Engine;
use chrono::{DateTime, Utc};
use mandato_store::db::Db;

use super::activation::{self, Enrolment};
use crate::esign::ceremony::{self, Act, ProcessView};
use crate::esign::{CreateProcess, ProcessState};
use crate::notify::events::{self, SignedDocument};
use mandato_core::clock::timestamp;
use mandato_core::domain::state::{MandateState, PaymentMethod};
use mandato_core::error::{Error, Result};
use mandato_store::commerces::Commerce;
use mandato_store::mandates::MandateRow;
use mandato_store::{customers, instruments, mandate_signatures, mandates, signatures};

/// Who the audit trail names when a new enrolment replaces an open process.
const BY_NEW_ENROLMENT: &str = "MAGIC_LINK_NEW_ENROLMENT";

/// Why a mandate's open signature process is cancelled with no signature of its own.
#[derive(Clone, Copy, Debug)]
pub enum CancelledBy {
    /// The mandate was cancelled.
    MandateCancellation,
    /// The mandate was activated without its signature (the sandbox's activation).
    DirectActivation,
}

impl CancelledBy {
    /// The name in the process's audit trail.
    fn name(self) -> &'static str {
        match self {
            CancelledBy::MandateCancellation => "MANDATE_CANCELLED",
            CancelledBy::DirectActivation => "MANDATE_ACTIVATED_DIRECTLY",
        }
    }
}

/// Stores the enrolment of a signature-gated PENDING mandate and starts its signature process
/// (`process`: the mandate document, validated as `POST /signature` validates). An open process
/// of an earlier enrolment is cancelled first; one whose signature is already in (its seal
/// under way) refuses the new enrolment with `SIGNATURE_IN_PROGRESS`.
pub fn start(
    conn: Db<'_>,
    commerce: &Commerce,
    mandate: &MandateRow,
    enrolment: &Enrolment<'_>,
    document_sha256: &str,
    process: CreateProcess,
    act: &Act<'_>,
) -> Result<ProcessView> {
    if let Some(previous) = mandate_signatures::latest_of_mandate(conn, mandate.seq)?
        && previous.process_state.is_open()
    {
        if ceremony::awaiting_seal(conn, previous.process_seq)? {
            return Err(Error::refused(
                "SIGNATURE_IN_PROGRESS",
                "the mandate's signature is complete and its document is being sealed",
            ));
        }
        let view = ceremony::load_view(
            conn,
            signatures::process_by_seq(conn, previous.process_seq)?,
        )?;
        ceremony::cancel_process(conn, commerce, act, view, BY_NEW_ENROLMENT)?;
    }
    let stamp = timestamp(act.now);
    activation::store_enrolment(
        conn,
        mandate.seq,
        enrolment,
        Some(document_sha256),
        &stamp,
        instruments::replace,
    )?;
    let view = ceremony::create(conn, commerce, act, &process)?;
    let method = activation::enrolled_method(enrolment.instrument, enrolment.enrolled);
    mandate_signatures::insert(conn, mandate.seq, view.process.seq, &method, &stamp)?;
    Ok(view)
}

/// The process of `view` has just been stored COMPLETED: when a mandate awaits it, the mandate
/// becomes ACTIVE with the enrolled instrument and its activation event is written, carrying
/// the sealed document's hash (and, for EPAC, the sealed document as `fileBase64`).
pub fn process_completed(
    conn: Db<'_>,
    commerce: &Commerce,
    view: &ProcessView,
    now: DateTime<Utc>,
) -> Result<()> {
    let Some(row) = mandate_signatures::by_process(conn, view.process.seq)? else {
        return Ok(());
    };
    let mandate = mandates::by_seq(conn, row.mandate_seq)?;
    let stamp = timestamp(now);
    if mandate.state != MandateState::Pending
        || !mandates::activate(conn, mandate.seq, &row.enrolled_method, &stamp)?
    {
        // Cancelled meanwhile (which cancels an open process, so this is a process sealed by
        // an older binary's race) or activated by the sandbox: nothing to activate.
        tracing::warn!(mandate = %mandate.id, process = %view.process.id,
            "a completed mandate signature found its mandate no longer pending");
        return Ok(());
    }
    let (_, sealed, sha256) = mandate_signatures::sealed_document(conn, view.process.seq)?
        .ok_or_else(|| {
            Error::Internal(anyhow::anyhow!(
                "completed process {} has no sealed document",
                view.process.id
            ))
        })?;
    let active = mandates::by_seq(conn, mandate.seq)?;
    let customer = customers::by_seq(conn, active.customer_seq)?;
    let epac = row.enrolled_method["id"]
        .as_i64()
        .and_then(PaymentMethod::from_id)
        .is_some_and(|m| matches!(m, PaymentMethod::Epac | PaymentMethod::DirectEpac));
    let file = epac.then(|| base64::engine::general_purpose::STANDARD.encode(&sealed));
    events::record_signed_activation(
        conn,
        commerce,
        &active,
        &customer,
        file.as_deref(),
        &SignedDocument {
            signature_internal_id: &view.process.id,
            sha256: &sha256,
        },
        now,
    )?;
    Ok(())
}

/// The mandate is being cancelled (or activated without its signature): its open signature
/// process, if any, is cancelled with it.
pub fn cancel_open_process(
    conn: Db<'_>,
    commerce: &Commerce,
    mandate_seq: i64,
    now: DateTime<Utc>,
    by: CancelledBy,
) -> Result<()> {
    let Some(row) = mandate_signatures::latest_of_mandate(conn, mandate_seq)? else {
        return Ok(());
    };
    if !row.process_state.is_open() {
        return Ok(());
    }
    let act = Act {
        now,
        business_now: now,
        ip: None,
        user_agent: None,
        sandbox: false,
    };
    let view = ceremony::load_view(conn, signatures::process_by_seq(conn, row.process_seq)?)?;
    ceremony::cancel_process(conn, commerce, &act, view, by.name())?;
    Ok(())
}

/// The sealed mandate document of a mandate its signature activated.
pub struct SignedMandateDocument {
    pub signature_internal_id: String,
    pub name: String,
    pub bytes: Vec<u8>,
    pub sha256: String,
}

/// The commerce's mandate's sealed document; not found while no signature completed.
pub fn signed_document(
    conn: Db<'_>,
    ctx: &super::Ctx<'_>,
    mandate: &super::MandateRef,
) -> Result<SignedMandateDocument> {
    let row = super::mandates::find_row(conn, ctx, mandate)?;
    let not_found = || Error::not_found("signed mandate document");
    let signature = mandate_signatures::latest_of_mandate(conn, row.seq)?
        .filter(|s| s.process_state == ProcessState::Completed)
        .ok_or_else(not_found)?;
    let (name, bytes, sha256) =
        mandate_signatures::sealed_document(conn, signature.process_seq)?.ok_or_else(not_found)?;
    Ok(SignedMandateDocument {
        signature_internal_id: signature.process_id,
        name,
        bytes,
        sha256,
    })
}
