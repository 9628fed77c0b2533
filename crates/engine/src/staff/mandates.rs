//! A mandate as staff see and change it: everything its page shows, read in one snapshot, and
//! the actions staff take on it, each recorded in the staff audit log in the action's own
//! transaction.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mandato_core::clock::timestamp;
use mandato_core::domain::holidays::ChargeDates;
use mandato_core::domain::state::{InstallmentState, MandateState};
use mandato_core::error::{Error, FieldError, Result};
use mandato_store::commerces::{self, Commerce};
use mandato_store::customers::{self, CustomerRow};
use mandato_store::db::Db;
use mandato_store::events::{self, EventRow};
use mandato_store::installments::{self, InstallmentRow};
use mandato_store::instruments::{self, AcceptanceRow};
use mandato_store::mandate_signatures::{self, MandateSignatureRow};
use mandato_store::mandates::{self, MandateRow};
use mandato_store::payment_evidence::{self, NewEvidenceFile};
use mandato_store::staff_views::{self as views, AttemptLine};

pub use mandato_store::payment_evidence::EvidenceFileMeta;

use crate::Engine;
use crate::operations::Ctx;

/// Everything a mandate's staff page shows.
pub struct MandateRecords {
    pub mandate: MandateRow,
    pub commerce: Commerce,
    pub customer: CustomerRow,
    pub installments: Vec<InstallmentRow>,
    pub charge_dates: ChargeDates,
    /// When each installment (by sequence number) was created.
    pub installment_created: HashMap<i64, String>,
    pub attempts: Vec<AttemptLine>,
    /// Installments (by sequence number) the customer paid on Webpay Plus from the portal.
    pub paid_on_webpay: Vec<i64>,
    /// In order of sequence.
    pub events: Vec<EventRow>,
    pub acceptance: Option<AcceptanceRow>,
    pub signature: Option<MandateSignatureRow>,
    /// The UF value of each business date a UF installment was charged in pesos on.
    pub uf_values: HashMap<String, String>,
    /// The file staff attached to each installment's manual payment (by sequence number),
    /// the latest when it has several.
    pub evidence_files: HashMap<i64, EvidenceFileMeta>,
}

/// The largest evidence file staff may attach to a manual payment.
pub const EVIDENCE_MAX_BYTES: usize = 5 * 1024 * 1024;

/// The kinds of evidence file accepted, told by their first bytes (never by the name the
/// browser sends): PDF, PNG, JPEG.
pub fn evidence_content_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else {
        None
    }
}

/// A file staff attach to a manual payment, already checked (kind and size).
#[derive(Debug, Clone)]
pub struct EvidenceUpload {
    /// The name as uploaded, without any directory.
    pub name: String,
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
    pub sha256: String,
}

impl EvidenceUpload {
    pub fn new(name: String, content_type: &'static str, bytes: Vec<u8>) -> Self {
        use sha2::{Digest, Sha256};
        let sha256 = hex::encode(Sha256::digest(&bytes));
        EvidenceUpload {
            name,
            content_type,
            bytes,
            sha256,
        }
    }
}

/// The file attached to a paid installment's manual payment, if any (its receipt names it).
pub fn evidence_of_installment(
    conn: Db<'_>,
    installment_seq: i64,
) -> Result<Option<EvidenceFileMeta>> {
    Ok(payment_evidence::of_installment(conn, installment_seq)?)
}

/// Keeps the evidence file of a manual payment with the installments it paid, in the
/// payment's transaction (after the operation changed them): the file is there exactly when
/// the payment is.
pub fn attach_evidence(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    mandate_id: &str,
    installment_ids: &[String],
    upload: &EvidenceUpload,
    actor: &str,
) -> Result<String> {
    let mandate = mandates::by_internal_id(conn, ctx.commerce.id, mandate_id)?
        .ok_or(Error::not_found("mandate"))?;
    let id = mandato_core::ids::new_id("pef");
    let file_seq = payment_evidence::insert(
        conn,
        &NewEvidenceFile {
            id: &id,
            commerce_id: ctx.commerce.id,
            mandate_seq: mandate.seq,
            name: &upload.name,
            content_type: upload.content_type,
            sha256: &upload.sha256,
            bytes: &upload.bytes,
            uploaded_by: actor,
            created_at: &ctx.timestamp(),
        },
    )?;
    for installment_id in installment_ids {
        let row = installments::by_internal_id(conn, ctx.commerce.id, installment_id)?
            .filter(|row| row.mandate_seq == mandate.seq)
            .ok_or(Error::not_found("installment"))?;
        payment_evidence::attach(conn, file_seq, row.seq)?;
    }
    Ok(id)
}

/// What the mandate's EPAC document is taken from.
pub struct DocumentSources {
    pub external_id: String,
    pub events: Vec<EventRow>,
    pub acceptance: Option<AcceptanceRow>,
}

const STATE_CONFLICT: &str = "INSTALLMENT_STATE_CONFLICT";

/// Names every selected installment that cannot make the move, so that staff acting on several
/// at once see each one's reason together; nothing changes unless all of them can. One refused
/// installment is answered as the operation answers it (`INSTALLMENT_STATE_CONFLICT` at its
/// field), several as a `VALIDATION_ERROR` listing each. An id that is not the mandate's is a
/// 404, and a cancelled or deleted mandate is left to the operation, which refuses it whole.
pub fn check_selection(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    mandate_id: &str,
    ids: &[String],
    target: InstallmentState,
) -> Result<()> {
    let mandate = mandates::by_internal_id(conn, ctx.commerce.id, mandate_id)?
        .ok_or(Error::not_found("mandate"))?;
    if matches!(
        mandate.state,
        MandateState::Cancelled | MandateState::Deleted
    ) {
        return Ok(());
    }
    let rows = installments::for_mandate(conn, mandate.seq)?;
    let by_id: HashMap<&str, &InstallmentRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut seen = HashSet::new();
    let mut problems = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let field = format!("installmentIds[{i}]");
        let row = by_id
            .get(id.as_str())
            .ok_or(Error::not_found("installment"))?;
        if !seen.insert(id.as_str()) {
            problems.push(FieldError::new(
                field,
                "DUPLICATED_INSTALLMENT",
                "the installment is listed twice",
            ));
        } else if !row.state.can_move_to(target) {
            problems.push(FieldError::new(
                field,
                STATE_CONFLICT,
                format!(
                    "installment {} is {} and cannot become {}",
                    row.external_id,
                    row.state.name(),
                    target.name()
                ),
            ));
        }
    }
    match problems.as_slice() {
        [] => Ok(()),
        [only] if only.code == STATE_CONFLICT => Err(Error::refused_at(
            STATE_CONFLICT,
            only.field.clone(),
            only.message.clone(),
        )),
        _ => Err(Error::Validation(problems)),
    }
}

/// The customer of one of the acting commerce's mandates, by the mandate's internal id.
pub fn customer_of_mandate(conn: Db<'_>, ctx: &Ctx<'_>, internal_id: &str) -> Result<CustomerRow> {
    let mandate = mandates::by_internal_id(conn, ctx.commerce.id, internal_id)?
        .ok_or(Error::not_found("mandate"))?;
    Ok(customers::by_seq(conn, mandate.customer_seq)?)
}

impl Engine {
    /// A mandate's sequence number and its commerce's id, by the mandate's internal id.
    pub fn mandate_owner(&self, internal_id: &str) -> Result<(i64, i64)> {
        self.store()
            .read(|c| Ok(views::mandate_owner(c, internal_id)?))?
            .ok_or(Error::not_found("mandate"))
    }

    /// Everything a mandate's staff page shows, in one snapshot.
    pub fn mandate_records(&self, seq: i64) -> Result<MandateRecords> {
        self.store().read(|conn| {
            let mandate = mandates::by_seq(conn, seq)?;
            let commerce =
                commerces::by_id(conn, mandate.commerce_id)?.ok_or(Error::not_found("commerce"))?;
            let installments = installments::for_mandate(conn, seq)?;
            // A UF installment's pesos were worked out with the UF of its charge's date.
            let mut uf_values = HashMap::new();
            for date in installments
                .iter()
                .filter(|i| i.charged_clp.is_some())
                .filter_map(|i| i.last_attempt_date.as_deref())
            {
                if let Some(value) = mandato_store::charging::uf_value(conn, date)? {
                    uf_values.insert(date.to_string(), value);
                }
            }
            Ok(MandateRecords {
                customer: customers::by_seq(conn, mandate.customer_seq)?,
                installments,
                uf_values,
                charge_dates: mandato_store::calendar::charge_dates(conn, commerce.id)?,
                installment_created: views::installment_creation(conn, seq)?
                    .into_iter()
                    .collect(),
                attempts: views::attempts_of_mandate(conn, seq)?,
                paid_on_webpay: mandato_store::webpay::approved_installments(conn, seq)?,
                events: events::for_mandate(conn, seq)?,
                acceptance: instruments::latest_acceptance(conn, seq)?,
                signature: mandate_signatures::latest_of_mandate(conn, seq)?,
                evidence_files: payment_evidence::of_mandate(conn, seq)?
                    .into_iter()
                    .collect(),
                mandate,
                commerce,
            })
        })
    }

    /// An evidence file of a manual payment, with its bytes, by its id (pef_...).
    pub fn evidence_file(&self, id: &str) -> Result<(EvidenceFileMeta, Vec<u8>)> {
        self.store()
            .read(|conn| Ok(payment_evidence::by_id(conn, id)?))?
            .ok_or(Error::not_found("evidence file"))
    }

    pub fn mandate_document_sources(&self, seq: i64) -> Result<DocumentSources> {
        self.store().read(|conn| {
            Ok(DocumentSources {
                external_id: mandates::by_seq(conn, seq)?.external_id,
                events: events::for_mandate(conn, seq)?,
                acceptance: instruments::latest_acceptance(conn, seq)?,
            })
        })
    }

    /// Runs a staff member's action on a mandate as one transaction of its commerce and
    /// records it in the staff audit log in that transaction; answers the mandate's sequence
    /// number.
    pub async fn act_on_mandate(
        self: &Arc<Self>,
        actor: &str,
        internal_id: &str,
        action: &'static str,
        detail: Option<String>,
        operation: impl Fn(Db<'_>, &Ctx<'_>) -> Result<()> + Send + 'static,
    ) -> Result<i64> {
        let (seq, commerce_id) = self.mandate_owner(internal_id)?;
        let commerce = self
            .store()
            .read(|c| Ok(commerces::by_id(c, commerce_id)?))?
            .ok_or(Error::not_found("commerce"))?;
        let actor = actor.to_string();
        let target = internal_id.to_string();
        self.write(Arc::new(commerce), move |tx, ctx| {
            operation(tx, ctx)?;
            Ok(mandato_store::staff::record_action(
                tx,
                &timestamp(ctx.now),
                &actor,
                action,
                Some(&target),
                detail.as_deref(),
            )?)
        })
        .await?;
        Ok(seq)
    }
}
