//! The signature processes a mandate's enrolment started (signature-gated activation).

use serde_json::Value;

use super::db::{self, Db, Row, params};
use mandato_core::domain::activation::ActivationFailure;
use mandato_core::error::Result;
use mandato_core::signature::ProcessState;

/// One process of a mandate, with the state of the process it names.
#[derive(Debug, Clone)]
pub struct MandateSignatureRow {
    pub seq: i64,
    pub mandate_seq: i64,
    pub process_seq: i64,
    /// `sig_...`.
    pub process_id: String,
    pub process_state: ProcessState,
    /// What the mandate shows as its `paymentMethod` once active.
    pub enrolled_method: Value,
    pub created_at: String,
    pub failure: Option<ActivationFailure>,
    pub failed_at: Option<String>,
    /// SHA-256 of the sealed mandate document, once the process completed.
    pub sealed_sha256: Option<String>,
}

const SELECT: &str = "SELECT m.seq, m.mandate_seq, m.process_seq, p.id, p.state, m.enrolled_method,
        m.created_at, m.failure_reason, m.failed_at,
        (SELECT d.sealed_sha256 FROM signature_documents d WHERE d.process_seq = m.process_seq
          ORDER BY d.position LIMIT 1)
    FROM mandate_signatures m JOIN signature_processes p ON p.seq = m.process_seq";

fn from_row(row: &Row<'_>) -> db::Result<MandateSignatureRow> {
    let state: i64 = row.get(4)?;
    let method: String = row.get(5)?;
    let failure: Option<String> = row.get(7)?;
    Ok(MandateSignatureRow {
        seq: row.get(0)?,
        mandate_seq: row.get(1)?,
        process_seq: row.get(2)?,
        process_id: row.get(3)?,
        process_state: ProcessState::from_id(state)
            .ok_or_else(|| db::Error::unknown(4, "process state"))?,
        enrolled_method: serde_json::from_str(&method).map_err(|e| db::Error::column(5, e))?,
        created_at: row.get(6)?,
        failure: failure
            .map(|f| {
                ActivationFailure::from_name(&f)
                    .ok_or_else(|| db::Error::unknown(7, "failure reason"))
            })
            .transpose()?,
        failed_at: row.get(8)?,
        sealed_sha256: row.get(9)?,
    })
}

pub fn insert<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    process_seq: i64,
    enrolled_method: &Value,
    created_at: &str,
) -> Result<()> {
    let method = serde_json::to_string(enrolled_method)?;
    db.into().execute(
        "INSERT INTO mandate_signatures (mandate_seq, process_seq, enrolled_method, created_at)
         VALUES (?1, ?2, ?3, ?4)",
        &params![mandate_seq, process_seq, &method, created_at],
    )?;
    Ok(())
}

/// The mandate's most recent process, if its enrolment ever started one.
pub fn latest_of_mandate<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Option<MandateSignatureRow>> {
    let sql = format!("{SELECT} WHERE m.mandate_seq = ?1 ORDER BY m.seq DESC LIMIT 1");
    db.into().query_opt(&sql, &params![mandate_seq], from_row)
}

/// The row of a process a mandate's enrolment started (`None` for any other process).
pub fn by_process<'c>(
    db: impl Into<Db<'c>>,
    process_seq: i64,
) -> db::Result<Option<MandateSignatureRow>> {
    let sql = format!("{SELECT} WHERE m.process_seq = ?1");
    db.into().query_opt(&sql, &params![process_seq], from_row)
}

/// Records why the process ended without activating its mandate.
pub fn set_failure<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    failure: ActivationFailure,
    at: &str,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE mandate_signatures SET failure_reason = ?2, failed_at = ?3 WHERE seq = ?1",
        &params![seq, failure.name(), at],
    )?;
    Ok(())
}

/// The sealed mandate document of a completed process: its name, bytes and SHA-256.
pub fn sealed_document<'c>(
    db: impl Into<Db<'c>>,
    process_seq: i64,
) -> db::Result<Option<(String, Vec<u8>, String)>> {
    db.into().query_opt(
        "SELECT name, sealed, sealed_sha256 FROM signature_documents
         WHERE process_seq = ?1 AND sealed IS NOT NULL ORDER BY position LIMIT 1",
        &params![process_seq],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mandates::tests::mandate;
    use crate::pg_test::on_both;
    use crate::signatures::{self, tests::process};

    #[test]
    fn a_mandate_knows_its_latest_process_and_why_it_failed() {
        on_both(|db| {
            let mandate = mandate(db, "m-1");
            assert!(latest_of_mandate(db, mandate.seq).unwrap().is_none());
            let first = process(db, mandate.commerce_id, "sig_1", "Mandato");
            let second = process(db, mandate.commerce_id, "sig_2", "Mandato");
            let method = serde_json::json!({"type": "CREDIT_CARD"});
            insert(db, mandate.seq, first.seq, &method, "t1").unwrap();
            insert(db, mandate.seq, second.seq, &method, "t2").unwrap();

            let latest = latest_of_mandate(db, mandate.seq).unwrap().unwrap();
            assert_eq!(
                (latest.process_id.as_str(), latest.process_state),
                ("sig_2", ProcessState::Pending)
            );
            assert_eq!(latest.enrolled_method, method);
            assert_eq!(latest.sealed_sha256, None);

            let of_first = by_process(db, first.seq).unwrap().unwrap();
            set_failure(db, of_first.seq, ActivationFailure::SignatureExpired, "t3").unwrap();
            let failed = by_process(db, first.seq).unwrap().unwrap();
            assert_eq!(failed.failure, Some(ActivationFailure::SignatureExpired));
            assert_eq!(failed.failed_at.as_deref(), Some("t3"));
            assert!(
                by_process(db, first.seq + second.seq + 1)
                    .unwrap()
                    .is_none()
            );

            assert!(sealed_document(db, second.seq).unwrap().is_none());
            let document = signatures::documents_of(db, second.seq).unwrap().remove(0);
            signatures::set_sealed(db, document.seq, b"sealed", "sha").unwrap();
            let (name, bytes, sha) = sealed_document(db, second.seq).unwrap().unwrap();
            assert_eq!(
                (name.as_str(), bytes.as_slice(), sha.as_str()),
                ("mandato.pdf", &b"sealed"[..], "sha")
            );
            let latest = latest_of_mandate(db, mandate.seq).unwrap().unwrap();
            assert_eq!(latest.sealed_sha256.as_deref(), Some("sha"));
        });
    }
}
