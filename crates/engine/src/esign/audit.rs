//! The audit trail of a signature process: every act (created, viewed, code sent, identity
//! confirmed, signed, rejected, cancelled, expired, completed) with its time, IP, user agent and
//! the SHA-256 of the documents, as a hash chain.
//!
//! Record `n` stores `hash = SHA-256(JCS({processId, position, at, action, signatoryId, ip,
//! userAgent, documents, detail, prevHash}))` where `prevHash` is the hash of record `n - 1` (64
//! zeros for the first). Changing any field of a record changes its hash; removing, inserting
//! or reordering records breaks the links. [`verify`] recomputes the chain and names the first
//! record that does not hold. The hashing rule is `mandato_core::chain`'s, shared with the staff audit.

use mandato_store::db::Db;
use serde_json::{Value, json};

use mandato_core::chain;
use mandato_core::error::Result;
use mandato_store::signatures::{self, AuditRow, NewAudit};

/// The `prevHash` of a process's first record.
pub use mandato_core::chain::GENESIS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Created,
    Viewed,
    CodeSent,
    CodeFailed,
    CodeVerified,
    IdentityFailed,
    IdentityConfirmed,
    Signed,
    Rejected,
    Cancelled,
    Expired,
    Completed,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Created => "CREATED",
            Action::Viewed => "VIEWED",
            Action::CodeSent => "CODE_SENT",
            Action::CodeFailed => "CODE_FAILED",
            Action::CodeVerified => "CODE_VERIFIED",
            Action::IdentityFailed => "IDENTITY_FAILED",
            Action::IdentityConfirmed => "IDENTITY_CONFIRMED",
            Action::Signed => "SIGNED",
            Action::Rejected => "REJECTED",
            Action::Cancelled => "CANCELLED",
            Action::Expired => "EXPIRED",
            Action::Completed => "COMPLETED",
        }
    }

    /// The Spanish label printed on the completion certificate.
    pub fn spanish(name: &str) -> &'static str {
        match name {
            "CREATED" => "Proceso creado",
            "VIEWED" => "Documentos vistos",
            "CODE_SENT" => "Código enviado",
            "CODE_FAILED" => "Código o RUT incorrecto",
            "CODE_VERIFIED" => "Código verificado",
            "IDENTITY_FAILED" => "Verificación de identidad fallida",
            "IDENTITY_CONFIRMED" => "Identidad confirmada",
            "SIGNED" => "Firmado",
            "REJECTED" => "Rechazado",
            "CANCELLED" => "Proceso cancelado",
            "EXPIRED" => "Proceso expirado",
            "COMPLETED" => "Proceso completado y sellado",
            _ => "Acto",
        }
    }
}

/// One act to append.
pub struct Entry<'a> {
    pub at: &'a str,
    pub action: Action,
    pub signatory_id: Option<&'a str>,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    /// `[{"documentName", "sha256"}]` of the process's documents at the time of the act.
    pub documents: Value,
    /// Anything else worth keeping (a reason, the identity method, the sealed hashes).
    pub detail: Value,
}

#[allow(clippy::too_many_arguments)]
fn hash_of(
    process_id: &str,
    position: i64,
    at: &str,
    action: &str,
    signatory_id: Option<&str>,
    ip: Option<&str>,
    user_agent: Option<&str>,
    documents: &Value,
    detail: &Value,
    prev_hash: &str,
) -> String {
    let record = json!({
        "processId": process_id,
        "position": position,
        "at": at,
        "action": action,
        "signatoryId": signatory_id,
        "ip": ip,
        "userAgent": user_agent,
        "documents": documents,
        "detail": detail,
    });
    let Value::Object(fields) = record else {
        unreachable!("json! of an object literal is an object")
    };
    chain::link_hash(fields, prev_hash)
}

/// Appends an act to the process's chain, in the caller's transaction.
pub fn append(
    conn: Db<'_>,
    process_seq: i64,
    process_id: &str,
    entry: Entry<'_>,
) -> Result<AuditRow> {
    let (position, prev_hash) = match signatures::last_audit(conn, process_seq)? {
        Some((position, hash)) => (position + 1, hash),
        None => (1, GENESIS.to_string()),
    };
    let hash = hash_of(
        process_id,
        position,
        entry.at,
        entry.action.name(),
        entry.signatory_id,
        entry.ip,
        entry.user_agent,
        &entry.documents,
        &entry.detail,
        &prev_hash,
    );
    let row = AuditRow {
        position,
        at: entry.at.to_string(),
        action: entry.action.name().to_string(),
        signatory_id: entry.signatory_id.map(str::to_string),
        ip: entry.ip.map(str::to_string),
        user_agent: entry.user_agent.map(str::to_string),
        documents: entry.documents,
        detail: entry.detail,
        prev_hash,
        hash,
    };
    signatures::insert_audit(
        conn,
        &NewAudit {
            process_seq,
            row: &row,
        },
    )?;
    Ok(row)
}

/// The outcome of recomputing a chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verification {
    pub valid: bool,
    /// The position of the first record whose hash or link does not hold.
    pub broken_at: Option<i64>,
    /// The hash of the last record: it commits to the whole trail.
    pub head: Option<String>,
}

/// Recomputes every record's hash and link, in position order.
pub fn verify(process_id: &str, records: &[AuditRow]) -> Verification {
    let mut prev = GENESIS.to_string();
    for (i, r) in records.iter().enumerate() {
        let expected = hash_of(
            process_id,
            r.position,
            &r.at,
            &r.action,
            r.signatory_id.as_deref(),
            r.ip.as_deref(),
            r.user_agent.as_deref(),
            &r.documents,
            &r.detail,
            &r.prev_hash,
        );
        if r.position != i as i64 + 1 || r.prev_hash != prev || r.hash != expected {
            return Verification {
                valid: false,
                broken_at: Some(r.position),
                head: records.last().map(|r| r.hash.clone()),
            };
        }
        prev = r.hash.clone();
    }
    Verification {
        valid: true,
        broken_at: None,
        head: records.last().map(|r| r.hash.clone()),
    }
}

/// A signature process whose trail does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokenTrail {
    pub process_id: String,
    /// The position of its first record that does not hold (1 when it has none at all).
    pub position: i64,
}

/// The outcome of verifying every process's trail.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trails {
    pub processes: u64,
    pub broken: Vec<BrokenTrail>,
}

/// Verifies the trail of every signature process, one process in memory at a time. Every
/// process has at least its `CREATED` act, so an empty trail is a broken one.
pub fn verify_all(conn: Db<'_>) -> Result<Trails> {
    let mut trails = Trails::default();
    signatures::for_each_process(conn, |process_seq, process_id| {
        let records = signatures::audit_of(conn, process_seq)?;
        trails.processes += 1;
        let broken_at = if records.is_empty() {
            Some(1)
        } else {
            verify(process_id, &records).broken_at
        };
        if let Some(position) = broken_at {
            trails.broken.push(BrokenTrail {
                process_id: process_id.to_string(),
                position,
            });
        }
        Ok(())
    })?;
    Ok(trails)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize) -> Vec<AuditRow> {
        let mut rows: Vec<AuditRow> = Vec::new();
        for i in 0..n {
            let prev = rows
                .last()
                .map_or(GENESIS.to_string(), |r: &AuditRow| r.hash.clone());
            let documents = json!([{"documentName": "a.pdf", "sha256": "00"}]);
            let detail = json!({"i": i});
            let at = format!("2026-11-22T10:00:0{i}.000Z");
            let hash = hash_of(
                "sig_1",
                i as i64 + 1,
                &at,
                "VIEWED",
                Some("sgn_1"),
                Some("127.0.0.1"),
                Some("ua"),
                &documents,
                &detail,
                &prev,
            );
            rows.push(AuditRow {
                position: i as i64 + 1,
                at,
                action: "VIEWED".into(),
                signatory_id: Some("sgn_1".into()),
                ip: Some("127.0.0.1".into()),
                user_agent: Some("ua".into()),
                documents,
                detail,
                prev_hash: prev,
                hash,
            });
        }
        rows
    }

    #[test]
    fn the_hash_is_the_canonical_json_of_the_act_with_its_previous_hash() {
        // Trails already stored were hashed this way: the shared rule must keep it.
        let documents = json!([{"documentName": "a.pdf", "sha256": "00"}]);
        let record = json!({
            "processId": "sig_1", "position": 1, "at": "2026-11-22T10:00:00.000Z",
            "action": "CREATED", "signatoryId": null, "ip": null, "userAgent": null,
            "documents": documents, "detail": {}, "prevHash": GENESIS,
        });
        let expected =
            crate::esign::sha256_hex(mandato_core::jcs::canonicalize(&record).as_bytes());
        let actual = hash_of(
            "sig_1",
            1,
            "2026-11-22T10:00:00.000Z",
            "CREATED",
            None,
            None,
            None,
            &documents,
            &json!({}),
            GENESIS,
        );
        assert_eq!(actual, expected);
    }

    #[test]
    fn an_intact_chain_verifies() {
        let rows = chain(4);
        let v = verify("sig_1", &rows);
        assert!(v.valid);
        assert_eq!(v.head.as_deref(), Some(rows[3].hash.as_str()));
    }

    #[test]
    fn a_changed_field_removed_or_reordered_record_is_detected() {
        let mut changed = chain(4);
        changed[1].ip = Some("10.0.0.1".into());
        assert_eq!(verify("sig_1", &changed).broken_at, Some(2));

        let mut removed = chain(4);
        removed.remove(1);
        assert!(!verify("sig_1", &removed).valid);

        let mut swapped = chain(4);
        swapped.swap(1, 2);
        assert!(!verify("sig_1", &swapped).valid);

        // Another process's id does not verify the same records.
        assert!(!verify("sig_2", &chain(2)).valid);
    }
}
