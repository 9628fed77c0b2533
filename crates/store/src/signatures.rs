//! Signature processes: the process, its signatories, documents (original and sealed bytes),
//! placements and audit trail. Every merchant lookup filters on the commerce.

use serde_json::Value;

use super::db::{self, Db, Param, Row, params};
use mandato_core::domain::search;
use mandato_core::error::{Error, Result};
use mandato_core::signature::{Placement, ProcessState, SignatoryState, SignatureType};

#[derive(Debug, Clone)]
pub struct ProcessRow {
    pub seq: i64,
    pub id: String,
    pub commerce_id: i64,
    pub process_name: String,
    pub external_process_id: Option<String>,
    pub request_user: Option<String>,
    pub state: ProcessState,
    pub url_callback: String,
    pub url_webhook: String,
    /// Business time.
    pub expires_at: String,
    pub rejection_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

const PROCESS_COLUMNS: &str = "seq, id, commerce_id, process_name, external_process_id, \
    request_user, state, url_callback, url_webhook, expires_at, rejection_reason, created_at, \
    updated_at, finished_at";

fn process_from_row(r: &Row<'_>) -> db::Result<ProcessRow> {
    let state: i64 = r.get(6)?;
    Ok(ProcessRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        commerce_id: r.get(2)?,
        process_name: r.get(3)?,
        external_process_id: r.get(4)?,
        request_user: r.get(5)?,
        state: ProcessState::from_id(state)
            .ok_or_else(|| db::Error::unknown(6, "process state"))?,
        url_callback: r.get(7)?,
        url_webhook: r.get(8)?,
        expires_at: r.get(9)?,
        rejection_reason: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        finished_at: r.get(13)?,
    })
}

#[derive(Debug, Clone)]
pub struct SignatoryRow {
    pub seq: i64,
    pub id: String,
    pub process_seq: i64,
    pub position: i64,
    pub customer_seq: i64,
    /// The customer's `internalUserId` and `userId`.
    pub customer_id: String,
    pub user_id: String,
    pub order: i64,
    pub kind: SignatureType,
    pub state: SignatoryState,
    pub token: String,
    pub full_name: String,
    pub rut: String,
    pub email: String,
    pub viewed_at: Option<String>,
    pub code_hash: Option<String>,
    pub code_plain: Option<String>,
    pub code_expires_at: Option<String>,
    pub code_attempts: i64,
    pub codes_sent: i64,
    pub code_verified_at: Option<String>,
    pub identity_confirmed_at: Option<String>,
    pub failures: i64,
    pub signed_at: Option<String>,
    pub rejected_at: Option<String>,
    pub rejection_reason: Option<String>,
}

const SIGNATORY_COLUMNS: &str = "s.seq, s.id, s.process_seq, s.position, s.customer_seq, c.id, \
    c.user_id, s.sign_order, s.type, s.state, s.token, s.full_name, s.rut, s.email, s.viewed_at, \
    s.code_hash, s.code_plain, s.code_expires_at, s.code_attempts, s.codes_sent, \
    s.code_verified_at, s.identity_confirmed_at, s.failures, s.signed_at, s.rejected_at, \
    s.rejection_reason";

fn signatory_from_row(r: &Row<'_>) -> db::Result<SignatoryRow> {
    let kind: String = r.get(8)?;
    let state: i64 = r.get(9)?;
    Ok(SignatoryRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        process_seq: r.get(2)?,
        position: r.get(3)?,
        customer_seq: r.get(4)?,
        customer_id: r.get(5)?,
        user_id: r.get(6)?,
        order: r.get(7)?,
        kind: SignatureType::parse(&kind).ok_or_else(|| db::Error::unknown(8, "signature type"))?,
        state: SignatoryState::from_id(state)
            .ok_or_else(|| db::Error::unknown(9, "signatory state"))?,
        token: r.get(10)?,
        full_name: r.get(11)?,
        rut: r.get(12)?,
        email: r.get(13)?,
        viewed_at: r.get(14)?,
        code_hash: r.get(15)?,
        code_plain: r.get(16)?,
        code_expires_at: r.get(17)?,
        code_attempts: r.get(18)?,
        codes_sent: r.get(19)?,
        code_verified_at: r.get(20)?,
        identity_confirmed_at: r.get(21)?,
        failures: r.get(22)?,
        signed_at: r.get(23)?,
        rejected_at: r.get(24)?,
        rejection_reason: r.get(25)?,
    })
}

/// A document without its bytes (those are read one at a time, when needed).
#[derive(Debug, Clone)]
pub struct DocumentRow {
    pub seq: i64,
    pub id: String,
    pub process_seq: i64,
    pub position: i64,
    pub name: String,
    pub page_count: i64,
    pub sha256: String,
    pub size_bytes: i64,
    pub sealed_sha256: Option<String>,
}

const DOCUMENT_COLUMNS: &str =
    "seq, id, process_seq, position, name, page_count, sha256, size_bytes, sealed_sha256";

fn document_from_row(r: &Row<'_>) -> db::Result<DocumentRow> {
    Ok(DocumentRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        process_seq: r.get(2)?,
        position: r.get(3)?,
        name: r.get(4)?,
        page_count: r.get(5)?,
        sha256: r.get(6)?,
        size_bytes: r.get(7)?,
        sealed_sha256: r.get(8)?,
    })
}

#[derive(Debug, Clone)]
pub struct PlacementRow {
    pub document_seq: i64,
    pub signatory_seq: i64,
    pub placement: Placement,
}

/// One record of the audit trail, as hashed (see `esign::audit`).
#[derive(Debug, Clone)]
pub struct AuditRow {
    pub position: i64,
    pub at: String,
    pub action: String,
    pub signatory_id: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub documents: Value,
    pub detail: Value,
    pub prev_hash: String,
    pub hash: String,
}

pub struct NewProcess<'a> {
    pub id: &'a str,
    pub commerce_id: i64,
    pub process_name: &'a str,
    pub external_process_id: Option<&'a str>,
    pub request_user: Option<&'a str>,
    pub url_callback: &'a str,
    pub url_webhook: &'a str,
    pub expires_at: &'a str,
    pub now: &'a str,
}

pub fn insert_process<'c>(db: impl Into<Db<'c>>, new: &NewProcess<'_>) -> Result<ProcessRow> {
    let db = db.into();
    let seq: i64 = db.query_row(
        "INSERT INTO signature_processes (id, commerce_id, process_name, external_process_id,
                request_user, state, url_callback, url_webhook, expires_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
         RETURNING seq",
        &params![
            new.id,
            new.commerce_id,
            new.process_name,
            new.external_process_id,
            new.request_user,
            ProcessState::Pending.id(),
            new.url_callback,
            new.url_webhook,
            new.expires_at,
            new.now,
        ],
        |r| r.get(0),
    )?;
    process_by_seq(db, seq)
}

pub struct NewSignatoryRow<'a> {
    pub id: &'a str,
    pub process_seq: i64,
    pub position: i64,
    pub customer_seq: i64,
    pub order: i64,
    pub kind: SignatureType,
    pub token: &'a str,
    pub full_name: &'a str,
    pub rut: &'a str,
    pub email: &'a str,
}

pub fn insert_signatory<'c>(db: impl Into<Db<'c>>, new: &NewSignatoryRow<'_>) -> Result<i64> {
    Ok(db.into().query_row(
        "INSERT INTO signature_signatories (id, process_seq, position, customer_seq, sign_order,
                type, state, token, full_name, rut, email)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         RETURNING seq",
        &params![
            new.id,
            new.process_seq,
            new.position,
            new.customer_seq,
            new.order,
            new.kind.name(),
            SignatoryState::Pending.id(),
            new.token,
            new.full_name,
            new.rut,
            new.email,
        ],
        |r| r.get(0),
    )?)
}

pub struct NewDocumentRow<'a> {
    pub id: &'a str,
    pub process_seq: i64,
    pub position: i64,
    pub name: &'a str,
    pub page_count: i64,
    pub bytes: &'a [u8],
    pub sha256: &'a str,
}

pub fn insert_document<'c>(db: impl Into<Db<'c>>, new: &NewDocumentRow<'_>) -> Result<i64> {
    Ok(db.into().query_row(
        "INSERT INTO signature_documents (id, process_seq, position, name, page_count, original,
                sha256, size_bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         RETURNING seq",
        &params![
            new.id,
            new.process_seq,
            new.position,
            new.name,
            new.page_count,
            new.bytes,
            new.sha256,
            new.bytes.len() as i64,
        ],
        |r| r.get(0),
    )?)
}

pub fn insert_placement<'c>(
    db: impl Into<Db<'c>>,
    document_seq: i64,
    signatory_seq: i64,
    placement: &Placement,
) -> Result<()> {
    let (page, x, y, width, height) = match *placement {
        Placement::Manual {
            page,
            x,
            y,
            width,
            height,
        } => (
            Some(i64::from(page)),
            Some(x),
            Some(y),
            Some(width),
            Some(height),
        ),
        Placement::LastPage => (None, None, None, None, None),
    };
    db.into().execute(
        "INSERT INTO signature_placements (document_seq, signatory_seq, mode, page, x, y, width,
                height)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        &params![
            document_seq,
            signatory_seq,
            placement.mode(),
            page,
            x,
            y,
            width,
            height
        ],
    )?;
    Ok(())
}

pub fn process_by_seq<'c>(db: impl Into<Db<'c>>, seq: i64) -> Result<ProcessRow> {
    let sql = format!("SELECT {PROCESS_COLUMNS} FROM signature_processes WHERE seq = ?1");
    Ok(db.into().query_row(&sql, &params![seq], process_from_row)?)
}

/// The commerce's process with this internal id; another commerce's is absent.
pub fn process_by_internal_id<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    id: &str,
) -> Result<Option<ProcessRow>> {
    let sql = format!(
        "SELECT {PROCESS_COLUMNS} FROM signature_processes WHERE id = ?1 AND commerce_id = ?2"
    );
    Ok(db
        .into()
        .query_opt(&sql, &params![id, commerce_id], process_from_row)?)
}

/// Whether the commerce created a process with this `externalProcessId` (`POST /signature`).
/// A mandate's own signature processes carry the mandate's id and are not counted.
pub fn merchant_external_id_used<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    external_id: &str,
) -> Result<bool> {
    Ok(db.into().query_row(
        "SELECT EXISTS (SELECT 1 FROM signature_processes p
                        WHERE p.commerce_id = ?1 AND p.external_process_id = ?2
                          AND NOT EXISTS (SELECT 1 FROM mandate_signatures m
                                          WHERE m.process_seq = p.seq))",
        &params![commerce_id, external_id],
        |r| r.get(0),
    )?)
}

/// Any commerce's process (staff).
pub fn process_by_id_any<'c>(db: impl Into<Db<'c>>, id: &str) -> Result<Option<ProcessRow>> {
    let sql = format!("SELECT {PROCESS_COLUMNS} FROM signature_processes WHERE id = ?1");
    Ok(db.into().query_opt(&sql, &params![id], process_from_row)?)
}

pub fn signatories_of<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<Vec<SignatoryRow>> {
    let sql = format!(
        "SELECT {SIGNATORY_COLUMNS} FROM signature_signatories s
         JOIN customers c ON c.seq = s.customer_seq
         WHERE s.process_seq = ?1 ORDER BY s.position"
    );
    Ok(db
        .into()
        .query_map(&sql, &params![process_seq], signatory_from_row)?)
}

/// The signatory a signing link opens, of any commerce.
pub fn signatory_by_token<'c>(db: impl Into<Db<'c>>, token: &str) -> Result<Option<SignatoryRow>> {
    let sql = format!(
        "SELECT {SIGNATORY_COLUMNS} FROM signature_signatories s
         JOIN customers c ON c.seq = s.customer_seq
         WHERE s.token = ?1"
    );
    Ok(db
        .into()
        .query_opt(&sql, &params![token], signatory_from_row)?)
}

pub fn documents_of<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<Vec<DocumentRow>> {
    let sql = format!(
        "SELECT {DOCUMENT_COLUMNS} FROM signature_documents WHERE process_seq = ?1 ORDER BY position"
    );
    Ok(db
        .into()
        .query_map(&sql, &params![process_seq], document_from_row)?)
}

/// The bytes as uploaded.
pub fn original_bytes<'c>(db: impl Into<Db<'c>>, document_seq: i64) -> Result<Vec<u8>> {
    Ok(db.into().query_row(
        "SELECT original FROM signature_documents WHERE seq = ?1",
        &params![document_seq],
        |r| r.get(0),
    )?)
}

/// The sealed bytes, once the process completed.
pub fn sealed_bytes<'c>(db: impl Into<Db<'c>>, document_seq: i64) -> Result<Option<Vec<u8>>> {
    Ok(db.into().query_row(
        "SELECT sealed FROM signature_documents WHERE seq = ?1",
        &params![document_seq],
        |r| r.get(0),
    )?)
}

pub fn set_sealed<'c>(
    db: impl Into<Db<'c>>,
    document_seq: i64,
    bytes: &[u8],
    sha256: &str,
) -> Result<()> {
    db.into().execute(
        "UPDATE signature_documents SET sealed = ?2, sealed_sha256 = ?3 WHERE seq = ?1",
        &params![document_seq, bytes, sha256],
    )?;
    Ok(())
}

pub fn placements_of<'c>(db: impl Into<Db<'c>>, document_seq: i64) -> Result<Vec<PlacementRow>> {
    let rows = db.into().query_map(
        "SELECT document_seq, signatory_seq, mode, page, x, y, width, height
         FROM signature_placements WHERE document_seq = ?1 ORDER BY seq",
        &params![document_seq],
        |r| {
            let mode: String = r.get(2)?;
            let placement = if mode == "MANUAL" {
                let page: i64 = r.get(3)?;
                Placement::Manual {
                    page: u32::try_from(page).map_err(|_| db::Error::unknown(3, "page"))?,
                    x: r.get(4)?,
                    y: r.get(5)?,
                    width: r.get(6)?,
                    height: r.get(7)?,
                }
            } else {
                Placement::LastPage
            };
            Ok(PlacementRow {
                document_seq: r.get(0)?,
                signatory_seq: r.get(1)?,
                placement,
            })
        },
    )?;
    Ok(rows)
}

/// Moves the process to `state`; `finished` stamps `finished_at`.
pub fn set_process_state<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    state: ProcessState,
    reason: Option<&str>,
    now: &str,
) -> Result<()> {
    let finished = !state.is_open();
    db.into().execute(
        "UPDATE signature_processes SET state = ?2, updated_at = ?3,
                finished_at = CASE WHEN ?4 THEN ?3 ELSE finished_at END,
                rejection_reason = COALESCE(?5, rejection_reason)
         WHERE seq = ?1",
        &params![seq, state.id(), now, finished, reason],
    )?;
    Ok(())
}

/// The next number of the process's event sequence, taken in the transaction that writes it.
pub fn next_event_sequence<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<i64> {
    Ok(db.into().query_row(
        "UPDATE signature_processes SET event_sequence = event_sequence + 1 WHERE seq = ?1
             RETURNING event_sequence",
        &params![process_seq],
        |r| r.get(0),
    )?)
}

/// Ties an outbox event to its process.
pub fn link_event<'c>(db: impl Into<Db<'c>>, event_id: &str, process_seq: i64) -> Result<()> {
    let changed = db.into().execute(
        "UPDATE events SET signature_process_seq = ?2 WHERE id = ?1",
        &params![event_id, process_seq],
    )?;
    if changed != 1 {
        return Err(Error::Internal(anyhow::anyhow!(
            "event {event_id} is not in the outbox"
        )));
    }
    Ok(())
}

/// `(sequence, body)` of a process's events, in order.
pub fn event_bodies<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<Vec<(i64, String)>> {
    Ok(db.into().query_map(
        "SELECT sequence, body FROM events WHERE signature_process_seq = ?1 ORDER BY sequence",
        &params![process_seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}

// ----- signatory steps -----

pub fn set_viewed<'c>(db: impl Into<Db<'c>>, seq: i64, at: &str) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET viewed_at = COALESCE(viewed_at, ?2) WHERE seq = ?1",
        &params![seq, at],
    )?;
    Ok(())
}

/// A fresh one-time code: the previous one stops working and its attempts start over.
pub fn set_code<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    code_hash: &str,
    code_plain: Option<&str>,
    expires_at: &str,
) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET code_hash = ?2, code_plain = ?3, code_expires_at = ?4,
                code_attempts = 0, codes_sent = codes_sent + 1
         WHERE seq = ?1",
        &params![seq, code_hash, code_plain, expires_at],
    )?;
    Ok(())
}

/// A wrong RUT, code or identity answer; `code` also counts against the current code.
pub fn add_failure<'c>(db: impl Into<Db<'c>>, seq: i64, code: bool) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET failures = failures + 1,
                code_attempts = code_attempts + CASE WHEN ?2 THEN 1 ELSE 0 END
         WHERE seq = ?1",
        &params![seq, code],
    )?;
    Ok(())
}

pub fn set_code_verified<'c>(db: impl Into<Db<'c>>, seq: i64, at: &str) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET code_verified_at = ?2, code_hash = NULL WHERE seq = ?1",
        &params![seq, at],
    )?;
    Ok(())
}

pub fn set_identity_confirmed<'c>(db: impl Into<Db<'c>>, seq: i64, at: &str) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET identity_confirmed_at = ?2 WHERE seq = ?1",
        &params![seq, at],
    )?;
    Ok(())
}

pub fn set_signed<'c>(db: impl Into<Db<'c>>, seq: i64, at: &str) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET state = ?2, signed_at = ?3 WHERE seq = ?1 AND state = ?4",
        &params![
            seq,
            SignatoryState::Signed.id(),
            at,
            SignatoryState::Pending.id()
        ],
    )?;
    Ok(())
}

pub fn set_rejected<'c>(db: impl Into<Db<'c>>, seq: i64, at: &str, reason: &str) -> Result<()> {
    db.into().execute(
        "UPDATE signature_signatories SET state = ?2, rejected_at = ?3, rejection_reason = ?4
         WHERE seq = ?1 AND state = ?5",
        &params![
            seq,
            SignatoryState::Rejected.id(),
            at,
            reason,
            SignatoryState::Pending.id()
        ],
    )?;
    Ok(())
}

// ----- audit -----

pub struct NewAudit<'a> {
    pub process_seq: i64,
    pub row: &'a AuditRow,
}

/// `(position, hash)` of the process's last audit record.
pub fn last_audit<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<Option<(i64, String)>> {
    Ok(db.into().query_opt(
        "SELECT position, hash FROM signature_audit WHERE process_seq = ?1
             ORDER BY position DESC LIMIT 1",
        &params![process_seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}

pub fn insert_audit<'c>(db: impl Into<Db<'c>>, new: &NewAudit<'_>) -> Result<()> {
    let r = new.row;
    let documents = serde_json::to_string(&r.documents)?;
    let detail = serde_json::to_string(&r.detail)?;
    db.into().execute(
        "INSERT INTO signature_audit (process_seq, position, at, action, signatory_id, ip,
                user_agent, documents, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        &params![
            new.process_seq,
            r.position,
            &r.at,
            &r.action,
            &r.signatory_id,
            &r.ip,
            &r.user_agent,
            &documents,
            &detail,
            &r.prev_hash,
            &r.hash,
        ],
    )?;
    Ok(())
}

/// Calls `f` with the `(seq, id)` of every signature process, oldest first, reading a batch of
/// rows at a time (memory stays flat however many there are).
pub fn for_each_process<'c>(
    db: impl Into<Db<'c>>,
    mut f: impl FnMut(i64, &str) -> Result<()>,
) -> Result<()> {
    const BATCH: i64 = 1000;
    let db = db.into();
    let mut after = i64::MIN;
    loop {
        let batch: Vec<(i64, String)> = db.query_map(
            "SELECT seq, id FROM signature_processes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            &params![after, BATCH],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        after = *last;
        for (seq, id) in &batch {
            f(*seq, id)?;
        }
    }
}

pub fn audit_of<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<Vec<AuditRow>> {
    Ok(db.into().query_map(
        "SELECT position, at, action, signatory_id, ip, user_agent, documents, detail,
                    prev_hash, hash
             FROM signature_audit WHERE process_seq = ?1 ORDER BY position",
        &params![process_seq],
        |r| {
            let documents: String = r.get(6)?;
            let detail: String = r.get(7)?;
            Ok(AuditRow {
                position: r.get(0)?,
                at: r.get(1)?,
                action: r.get(2)?,
                signatory_id: r.get(3)?,
                ip: r.get(4)?,
                user_agent: r.get(5)?,
                documents: serde_json::from_str(&documents).unwrap_or(Value::Null),
                detail: serde_json::from_str(&detail).unwrap_or(Value::Null),
                prev_hash: r.get(8)?,
                hash: r.get(9)?,
            })
        },
    )?)
}

// ----- expiry and staff listing -----

/// Open processes whose expiry (business time) is at or before `business_now`.
pub fn expired_open<'c>(db: impl Into<Db<'c>>, business_now: &str, limit: i64) -> Result<Vec<i64>> {
    Ok(db.into().query_map(
        "SELECT seq FROM signature_processes
             WHERE state IN (1, 2) AND expires_at <= ?1
               AND EXISTS (SELECT 1 FROM signature_signatories s
                           WHERE s.process_seq = signature_processes.seq AND s.state <> 2)
             ORDER BY expires_at LIMIT ?2",
        &params![business_now, limit],
        |r| r.get(0),
    )?)
}

/// Whether every signatory of the process has signed.
pub fn all_signed<'c>(db: impl Into<Db<'c>>, process_seq: i64) -> Result<bool> {
    Ok(db.into().query_row(
        "SELECT NOT EXISTS (SELECT 1 FROM signature_signatories
                                WHERE process_seq = ?1 AND state <> 2)",
        &params![process_seq],
        |r| r.get(0),
    )?)
}

/// Open processes whose signatories have all signed: they await their seal (a crash between
/// the last signature and the seal leaves them so), oldest first.
pub fn awaiting_seal<'c>(db: impl Into<Db<'c>>, limit: i64) -> Result<Vec<i64>> {
    Ok(db.into().query_map(
        "SELECT p.seq FROM signature_processes p
             WHERE p.state IN (1, 2)
               AND NOT EXISTS (SELECT 1 FROM signature_signatories s
                               WHERE s.process_seq = p.seq AND s.state <> 2)
             ORDER BY p.seq LIMIT ?1",
        &params![limit],
        |r| r.get(0),
    )?)
}

/// What the staff list of processes shows: every filter is optional.
#[derive(Debug, Clone, Default)]
pub struct ProcessFilter {
    pub commerce_id: Option<i64>,
    pub state: Option<ProcessState>,
    /// Created at or after this stored timestamp.
    pub created_from: Option<String>,
    /// Created before this stored timestamp.
    pub created_to: Option<String>,
    /// Words of a signatory's name or e-mail, a RUT, a process id or name, compared without
    /// accents or case (`domain::search`).
    pub text: Option<String>,
}

/// The `WHERE` clause of the staff list and its count, on `signature_processes p`; its
/// parameters are those of [`filter_params`].
const FILTER_SQL: &str = "(CAST(?1 AS BIGINT) IS NULL OR p.commerce_id = ?1)
    AND (CAST(?2 AS BIGINT) IS NULL OR p.state = ?2)
    AND (CAST(?3 AS TEXT) IS NULL OR p.created_at >= ?3)
    AND (CAST(?4 AS TEXT) IS NULL OR p.created_at < ?4)
    AND (CAST(?5 AS TEXT) IS NULL
         OR search_fold(p.id) LIKE ?5 ESCAPE '\\'
         OR search_fold(p.process_name) LIKE ?5 ESCAPE '\\'
         OR search_fold(p.external_process_id) LIKE ?5 ESCAPE '\\'
         OR EXISTS (SELECT 1 FROM signature_signatories s
                    WHERE s.process_seq = p.seq
                      AND (search_fold(s.full_name) LIKE ?5 ESCAPE '\\'
                           OR search_fold(s.email) LIKE ?5 ESCAPE '\\'
                           OR (CAST(?6 AS TEXT) IS NOT NULL AND rut_key(s.rut) LIKE ?6))))";

/// LIKE pattern characters matched literally.
fn like_escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// `(folded text pattern, RUT pattern)` of a search: the RUT pattern only when the text looks
/// like (part of) a RUT, so that a few digits of a name or e-mail do not match every RUT.
/// Control characters count as spaces: no stored text holds one, and PostgreSQL refuses a NUL
/// in any text.
fn text_patterns(text: Option<&str>) -> (Option<String>, Option<String>) {
    let spaced: Option<String> = text.map(|t| {
        t.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    });
    let Some(text) = spaced.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
        return (None, None);
    };
    let folded = format!("%{}%", like_escape(&search::fold(text)));
    let rut_like = text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | ' ' | 'k' | 'K'));
    let key = search::rut_key(text);
    let rut = (rut_like && key.len() >= 3).then(|| format!("%{key}%"));
    (Some(folded), rut)
}

/// The owned values of [`FILTER_SQL`]'s parameters `?1` to `?6`.
struct FilterValues {
    commerce_id: Option<i64>,
    state: Option<i64>,
    created_from: Option<String>,
    created_to: Option<String>,
    pattern: Option<String>,
    rut: Option<String>,
}

impl FilterValues {
    fn of(filter: &ProcessFilter) -> FilterValues {
        let (pattern, rut) = text_patterns(filter.text.as_deref());
        FilterValues {
            commerce_id: filter.commerce_id,
            state: filter.state.map(ProcessState::id),
            created_from: filter.created_from.clone(),
            created_to: filter.created_to.clone(),
            pattern,
            rut,
        }
    }

    fn params(&self) -> [Param<'_>; 6] {
        params![
            self.commerce_id,
            self.state,
            &self.created_from,
            &self.created_to,
            &self.pattern,
            &self.rut
        ]
    }
}

/// One page of the processes `filter` selects, newest first, with the commerce's code:
/// `limit` rows created before the process `before_seq` (from the newest when `None`).
pub fn list_processes<'c>(
    db: impl Into<Db<'c>>,
    filter: &ProcessFilter,
    before_seq: Option<i64>,
    limit: i64,
) -> Result<Vec<(ProcessRow, String)>> {
    let columns: Vec<String> = PROCESS_COLUMNS
        .split(", ")
        .map(|c| format!("p.{c}"))
        .collect();
    let sql = format!(
        "SELECT {}, c.code FROM signature_processes p JOIN commerces c ON c.id = p.commerce_id
         WHERE {FILTER_SQL} AND (CAST(?7 AS BIGINT) IS NULL OR p.seq < ?7)
         ORDER BY p.seq DESC LIMIT ?8",
        columns.join(", ")
    );
    let values = FilterValues::of(filter);
    let [a, b, c, d, e, f] = values.params();
    let all = params![a, b, c, d, e, f, before_seq, limit];
    Ok(db
        .into()
        .query_map(&sql, &all, |r| Ok((process_from_row(r)?, r.get(14)?)))?)
}

/// How many processes `filter` selects, on every page.
pub fn count_processes<'c>(db: impl Into<Db<'c>>, filter: &ProcessFilter) -> Result<i64> {
    let sql = format!("SELECT count(*) FROM signature_processes p WHERE {FILTER_SQL}");
    let values = FilterValues::of(filter);
    Ok(db.into().query_row(&sql, &values.params(), |r| r.get(0))?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::commerces::tests::commerce;
    use crate::customers::CustomerInput;
    use crate::pg_test::on_both;
    use mandato_core::domain::contact::Email;
    use mandato_core::domain::external_id::ExternalId;
    use mandato_core::domain::rut::Rut;

    fn patterns(text: &str) -> (Option<String>, Option<String>) {
        text_patterns(Some(text))
    }

    #[test]
    fn a_search_is_folded_and_its_wildcards_are_literal() {
        assert_eq!(patterns("José Muñoz"), (Some("%jose munoz%".into()), None));
        assert_eq!(patterns("50%_off"), (Some("%50\\%\\_off%".into()), None));
        assert_eq!(text_patterns(Some("   ")), (None, None));
        assert_eq!(text_patterns(Some("\u{0}\t\u{1b}")), (None, None));
        assert_eq!(
            patterns("ana\u{0}pérez"),
            (Some("%ana perez%".into()), None)
        );
        assert_eq!(text_patterns(None), (None, None));
    }

    #[test]
    fn only_a_rut_looking_search_compares_ruts() {
        assert_eq!(patterns("12.345.678-K").1.as_deref(), Some("%12345678k%"));
        assert_eq!(patterns("345678").1.as_deref(), Some("%345678%"));
        // Too short to mean a RUT, or not one at all.
        assert_eq!(patterns("12").1, None);
        assert_eq!(patterns("ana 123").1, None);
        assert_eq!(patterns("sig_0193").1, None);
    }

    fn customer(db: Db<'_>, commerce_id: i64, user_id: &str, rut: &str, name: &str) -> i64 {
        let input = CustomerInput {
            user_id: ExternalId::parse(user_id).unwrap(),
            rut: Rut::parse(rut).unwrap(),
            first_name: name.to_string(),
            last_name: "Muñoz".to_string(),
            second_last_name: None,
            address: None,
            email: Email::parse("firma@example.cl").unwrap(),
            phone: None,
        };
        crate::customers::tests::customer(db, commerce_id, &input).seq
    }

    /// A process of `commerce_id` with one signatory, its document and a placement.
    pub(crate) fn process(db: Db<'_>, commerce_id: i64, id: &str, name: &str) -> ProcessRow {
        let now = "2026-11-25T10:00:00.000Z";
        let process = insert_process(
            db,
            &NewProcess {
                id,
                commerce_id,
                process_name: name,
                external_process_id: Some("EXT-1"),
                request_user: None,
                url_callback: "https://example.cl/back",
                url_webhook: "https://example.cl/hook",
                expires_at: "2026-12-01T10:00:00",
                now,
            },
        )
        .unwrap();
        let customer_seq = customer(db, commerce_id, "cust-01", "12345678-5", "José");
        let signatory = insert_signatory(
            db,
            &NewSignatoryRow {
                id: &format!("sgn-{id}"),
                process_seq: process.seq,
                position: 0,
                customer_seq,
                order: 1,
                kind: SignatureType::Fes,
                token: &format!("tok-{id}"),
                full_name: "José Muñoz",
                rut: "12345678-5",
                email: "firma@example.cl",
            },
        )
        .unwrap();
        let document = insert_document(
            db,
            &NewDocumentRow {
                id: &format!("doc-{id}"),
                process_seq: process.seq,
                position: 0,
                name: "mandato.pdf",
                page_count: 2,
                bytes: b"%PDF-1.7 \x00\xff",
                sha256: "abc",
            },
        )
        .unwrap();
        let placement = Placement::Manual {
            page: 2,
            x: 10.5,
            y: 20.25,
            width: 100.0,
            height: 40.0,
        };
        insert_placement(db, document, signatory, &placement).unwrap();
        process
    }

    #[test]
    fn a_process_keeps_its_signatories_documents_and_placements() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let created = process(db, shop.id, "sig_1", "Mandato PAC");
            assert_eq!(created.state, ProcessState::Pending);
            let found = process_by_internal_id(db, shop.id, "sig_1")
                .unwrap()
                .unwrap();
            assert_eq!(found.seq, created.seq);
            assert!(
                process_by_internal_id(db, shop.id + 1, "sig_1")
                    .unwrap()
                    .is_none()
            );

            let signatories = signatories_of(db, created.seq).unwrap();
            assert_eq!(signatories.len(), 1);
            assert_eq!(signatories[0].kind, SignatureType::Fes);
            assert_eq!(signatories[0].user_id, "cust-01");
            let by_token = signatory_by_token(db, "tok-sig_1").unwrap().unwrap();
            assert_eq!(by_token.seq, signatories[0].seq);

            let documents = documents_of(db, created.seq).unwrap();
            assert_eq!(documents[0].size_bytes, 11);
            assert_eq!(
                original_bytes(db, documents[0].seq).unwrap(),
                b"%PDF-1.7 \x00\xff"
            );
            assert_eq!(sealed_bytes(db, documents[0].seq).unwrap(), None);
            set_sealed(db, documents[0].seq, b"sealed", "def").unwrap();
            assert_eq!(
                sealed_bytes(db, documents[0].seq).unwrap().unwrap(),
                b"sealed"
            );
            let placements = placements_of(db, documents[0].seq).unwrap();
            assert!(matches!(
                placements[0].placement,
                Placement::Manual { page: 2, x, .. } if x == 10.5
            ));

            let seq = signatories[0].seq;
            add_failure(db, seq, true).unwrap();
            add_failure(db, seq, false).unwrap();
            set_code(db, seq, "hash", None, "2026-11-25T10:10:00.000Z").unwrap();
            set_signed(db, seq, "2026-11-25T10:05:00.000Z").unwrap();
            let signed = signatories_of(db, created.seq).unwrap().remove(0);
            assert_eq!(
                (signed.failures, signed.code_attempts, signed.codes_sent),
                (2, 0, 1)
            );
            assert_eq!(signed.state, SignatoryState::Signed);
            assert!(all_signed(db, created.seq).unwrap());
            assert_eq!(awaiting_seal(db, 10).unwrap(), vec![created.seq]);
            assert_eq!(next_event_sequence(db, created.seq).unwrap(), 1);
            assert_eq!(next_event_sequence(db, created.seq).unwrap(), 2);

            set_process_state(db, created.seq, ProcessState::Completed, None, "t1").unwrap();
            let done = process_by_seq(db, created.seq).unwrap();
            assert_eq!(
                (done.state, done.finished_at.as_deref()),
                (ProcessState::Completed, Some("t1"))
            );
            assert!(awaiting_seal(db, 10).unwrap().is_empty());

            let mut seen = Vec::new();
            for_each_process(db, |seq, id| {
                seen.push((seq, id.to_string()));
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, vec![(created.seq, "sig_1".to_string())]);
        });
    }

    #[test]
    fn the_staff_list_finds_processes_by_folded_text_and_rut() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let first = process(db, shop.id, "sig_1", "Mandato PAC");
            let second = process(db, shop.id, "sig_2", "Contrato Ñuñoa");
            let find = |text: &str| -> Vec<i64> {
                let filter = ProcessFilter {
                    text: Some(text.to_string()),
                    ..Default::default()
                };
                let page = list_processes(db, &filter, None, 10).unwrap();
                assert_eq!(count_processes(db, &filter).unwrap(), page.len() as i64);
                page.into_iter().map(|(p, _)| p.seq).collect()
            };
            assert_eq!(find("nunoa"), vec![second.seq]);
            assert_eq!(find("CONTRATO ñuñoa"), vec![second.seq]);
            assert_eq!(find("jose munoz"), vec![second.seq, first.seq]);
            assert_eq!(find("12.345.678"), vec![second.seq, first.seq]);
            assert_eq!(find("sig_1"), vec![first.seq]);
            assert_eq!(find("50%"), Vec::<i64>::new());
            for hostile in [
                "\u{0}",
                "jos\u{0}e",
                "'; DROP TABLE x; --",
                "\\",
                "_",
                "%%",
                "ñ̃ñ",
            ] {
                find(hostile);
            }

            let all = ProcessFilter::default();
            let page = list_processes(db, &all, None, 1).unwrap();
            assert_eq!(page[0].0.seq, second.seq);
            assert_eq!(page[0].1, "76123456-0");
            let next = list_processes(db, &all, Some(second.seq), 10).unwrap();
            assert_eq!(next.len(), 1);
            let pending = ProcessFilter {
                state: Some(ProcessState::Pending),
                commerce_id: Some(shop.id),
                created_from: Some("2026-11-25T00:00:00.000Z".into()),
                created_to: Some("2026-11-26T00:00:00.000Z".into()),
                ..Default::default()
            };
            assert_eq!(count_processes(db, &pending).unwrap(), 2);
        });
    }
}
