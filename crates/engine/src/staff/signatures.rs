//! Signature processes as staff see them: the list, one process with its trail, sealed
//! documents and the mandate it activates, and the documents' bytes.

use mandato_core::domain::activation::ActivationFailure;
use mandato_core::error::{Error, Result};
use mandato_store::db::Db;
use mandato_store::mandates::{self, MandateRow};
use mandato_store::signatures::{self, AuditRow, ProcessFilter};
use mandato_store::{commerces, mandate_signatures};

use std::sync::Arc;

use mandato_core::clock::timestamp;
use mandato_store::commerces::Commerce;

use crate::Engine;
use crate::esign::CreateProcess;
use crate::esign::ceremony::{self, Act, CancelOutcome, ProcessView};

/// A page of processes (newest first) with each one's commerce code.
pub struct ProcessPage {
    pub items: Vec<(ProcessView, String)>,
    /// The sequence number the next page starts before.
    pub next_before: Option<i64>,
    pub total: i64,
}

/// One process with everything its staff page shows.
pub struct ProcessRecords {
    pub view: ProcessView,
    pub commerce: String,
    pub trail: Vec<AuditRow>,
    /// The mandate the process activates (or failed to), with the reason it failed.
    pub mandate: Option<(MandateRow, Option<ActivationFailure>)>,
    /// `(document id, sealed bytes)` of each sealed document.
    pub sealed: Vec<(String, Vec<u8>)>,
}

fn activated_mandate(
    conn: Db<'_>,
    process_seq: i64,
) -> Result<Option<(MandateRow, Option<ActivationFailure>)>> {
    let Some(link) = mandate_signatures::by_process(conn, process_seq)? else {
        return Ok(None);
    };
    Ok(Some((
        mandates::by_seq(conn, link.mandate_seq)?,
        link.failure,
    )))
}

impl Engine {
    pub fn signature_processes(
        &self,
        filter: &ProcessFilter,
        before_seq: Option<i64>,
        limit: i64,
    ) -> Result<ProcessPage> {
        self.store().read(|c| {
            let mut rows = signatures::list_processes(c, filter, before_seq, limit + 1)?;
            let next_before = if rows.len() as i64 > limit {
                rows.truncate(limit as usize);
                rows.last().map(|(p, _)| p.seq)
            } else {
                None
            };
            let mut items = Vec::with_capacity(rows.len());
            for (process, commerce) in rows {
                items.push((ceremony::load_view(c, process)?, commerce));
            }
            Ok(ProcessPage {
                items,
                next_before,
                total: signatures::count_processes(c, filter)?,
            })
        })
    }

    /// A process of any commerce by internal id (`SIGNATURE_PROCESS_NOT_FOUND` otherwise).
    pub fn signature_process(&self, internal_id: &str) -> Result<ProcessRecords> {
        self.store().read(|c| {
            let process = signatures::process_by_id_any(c, internal_id)?
                .ok_or(Error::not_found("signature process"))?;
            let commerce = commerces::by_id(c, process.commerce_id)?
                .map(|c| c.code)
                .unwrap_or_default();
            let trail = signatures::audit_of(c, process.seq)?;
            let mandate = activated_mandate(c, process.seq)?;
            let view = ceremony::load_view(c, process)?;
            let mut sealed = Vec::new();
            for d in view.documents.iter().filter(|d| d.sealed_sha256.is_some()) {
                if let Some(bytes) = signatures::sealed_bytes(c, d.seq)? {
                    sealed.push((d.id.clone(), bytes));
                }
            }
            Ok(ProcessRecords {
                view,
                commerce,
                trail,
                mandate,
                sealed,
            })
        })
    }

    /// A process's internal id and its audit trail, oldest first.
    pub fn signature_trail(&self, internal_id: &str) -> Result<(String, Vec<AuditRow>)> {
        self.store().read(|c| {
            let process = signatures::process_by_id_any(c, internal_id)?
                .ok_or(Error::not_found("signature process"))?;
            Ok((process.id, signatures::audit_of(c, process.seq)?))
        })
    }

    /// A document's name and bytes: as uploaded, or sealed (once the process completed).
    pub fn signature_document(
        &self,
        internal_id: &str,
        document_id: &str,
        sealed: bool,
    ) -> Result<(String, Vec<u8>)> {
        self.store().read(|c| {
            let process = signatures::process_by_id_any(c, internal_id)?
                .ok_or(Error::not_found("signature process"))?;
            let doc = signatures::documents_of(c, process.seq)?
                .into_iter()
                .find(|d| d.id == document_id)
                .ok_or(Error::not_found("document"))?;
            let bytes = if sealed {
                signatures::sealed_bytes(c, doc.seq)?.ok_or(Error::not_found("sealed document"))?
            } else {
                signatures::original_bytes(c, doc.seq)?
            };
            Ok((doc.name, bytes))
        })
    }

    /// Starts a signature process for the commerce, as `POST /signature` does (the command
    /// validated as that request's), and records it in the staff audit log in its transaction.
    /// `client` is the staff member's address and user agent, for the process's trail.
    pub async fn staff_create_signature(
        self: &Arc<Self>,
        actor: &str,
        commerce: Arc<Commerce>,
        client: (Option<String>, Option<String>),
        command: CreateProcess,
    ) -> Result<ProcessView> {
        let actor = actor.to_string();
        let sandbox = self.config.environment.is_sandbox();
        let calendar = Arc::clone(&self.calendar);
        let (ip, agent) = client;
        self.write(commerce, move |tx, ctx| {
            let act = Act {
                now: ctx.now,
                business_now: calendar.now(ctx.now),
                ip: ip.as_deref(),
                user_agent: agent.as_deref(),
                sandbox,
            };
            let view = ceremony::create_for_merchant(tx, ctx.commerce, &act, &command)?;
            let detail = serde_json::json!({
                "commerce": ctx.commerce.code,
                "processName": view.process.process_name,
                "signatories": view.signatories.len(),
                "documents": view.documents.len(),
            })
            .to_string();
            mandato_store::staff::record_action(
                tx,
                &timestamp(ctx.now),
                &actor,
                "signature.create",
                Some(&view.process.id),
                Some(&detail),
            )?;
            Ok(view)
        })
        .await
    }

    /// Cancels a PENDING or IN_PROGRESS process of any commerce (the merchant API's
    /// `DELETE /signature/cancel`, CONTRACT 8): in one transaction its state becomes CANCELLED,
    /// its trail gets the CANCELLED act (by `STAFF`), `SIGNATURE_CANCELLED` is queued for its
    /// webhook, the mandate it was activating learns it, and the staff audit log records who.
    /// Already cancelled, or finished (COMPLETED, REJECTED, EXPIRED, possibly by this very
    /// look), changes nothing but that expiry and is answered as the outcome.
    pub async fn staff_cancel_signature(
        self: &Arc<Self>,
        actor: &str,
        internal_id: &str,
        client: (Option<String>, Option<String>),
        reason: Option<String>,
    ) -> Result<CancelOutcome> {
        let commerce = self.store().read(|c| {
            let process = signatures::process_by_id_any(c, internal_id)?
                .ok_or(Error::not_found("signature process"))?;
            commerces::by_id(c, process.commerce_id)?.ok_or(Error::not_found("commerce"))
        })?;
        let actor = actor.to_string();
        let target = internal_id.to_string();
        let sandbox = self.config.environment.is_sandbox();
        let calendar = Arc::clone(&self.calendar);
        let (ip, agent) = client;
        self.write(Arc::new(commerce), move |tx, ctx| {
            let act = Act {
                now: ctx.now,
                business_now: calendar.now(ctx.now),
                ip: ip.as_deref(),
                user_agent: agent.as_deref(),
                sandbox,
            };
            let view = ceremony::find(tx, ctx.commerce, &act, &target)?;
            let outcome = ceremony::cancel_process(tx, ctx.commerce, &act, view, "STAFF")?;
            if matches!(outcome, CancelOutcome::Cancelled) {
                mandato_store::staff::record_action(
                    tx,
                    &timestamp(ctx.now),
                    &actor,
                    "signature.cancel",
                    Some(&target),
                    reason.as_deref(),
                )?;
            }
            Ok(outcome)
        })
        .await
    }
}
