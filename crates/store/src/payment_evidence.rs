//! The files staff attach to payments they record by hand (`0031_payment_evidence_files.sql`):
//! the bytes once per upload, and which paid installments each file stands for.

use super::db::{self, Db, Row, params};

/// What is known of an evidence file without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceFileMeta {
    pub seq: i64,
    pub id: String,
    pub commerce_id: i64,
    pub mandate_seq: i64,
    pub name: String,
    pub content_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub uploaded_by: String,
    pub created_at: String,
}

pub struct NewEvidenceFile<'a> {
    pub id: &'a str,
    pub commerce_id: i64,
    pub mandate_seq: i64,
    pub name: &'a str,
    pub content_type: &'a str,
    pub sha256: &'a str,
    pub bytes: &'a [u8],
    pub uploaded_by: &'a str,
    pub created_at: &'a str,
}

const META_COLUMNS: &str = "f.seq, f.id, f.commerce_id, f.mandate_seq, f.name, f.content_type, \
    f.size_bytes, f.sha256, f.uploaded_by, f.created_at";

fn meta_from_row(r: &Row<'_>) -> db::Result<EvidenceFileMeta> {
    Ok(EvidenceFileMeta {
        seq: r.get(0)?,
        id: r.get(1)?,
        commerce_id: r.get(2)?,
        mandate_seq: r.get(3)?,
        name: r.get(4)?,
        content_type: r.get(5)?,
        size_bytes: r.get(6)?,
        sha256: r.get(7)?,
        uploaded_by: r.get(8)?,
        created_at: r.get(9)?,
    })
}

/// Keeps a file; answers its sequence number.
pub fn insert<'c>(db: impl Into<Db<'c>>, new: &NewEvidenceFile<'_>) -> db::Result<i64> {
    db.into().query_row(
        "INSERT INTO payment_evidence_files (id, commerce_id, mandate_seq, name, content_type,
                size_bytes, sha256, bytes, uploaded_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         RETURNING seq",
        &params![
            new.id,
            new.commerce_id,
            new.mandate_seq,
            new.name,
            new.content_type,
            new.bytes.len() as i64,
            new.sha256,
            new.bytes,
            new.uploaded_by,
            new.created_at,
        ],
        |r| r.get(0),
    )
}

/// The file stands for the payment of this installment.
pub fn attach<'c>(db: impl Into<Db<'c>>, file_seq: i64, installment_seq: i64) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO installment_evidence_files (installment_seq, file_seq) VALUES (?1, ?2)
         ON CONFLICT DO NOTHING",
        &params![installment_seq, file_seq],
    )?;
    Ok(())
}

/// `(installment seq, file)` of every file attached to the mandate's installments, oldest
/// first (so that a later file of an installment comes after an earlier one).
pub fn of_mandate<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Vec<(i64, EvidenceFileMeta)>> {
    let sql = format!(
        "SELECT a.installment_seq, {META_COLUMNS}
         FROM payment_evidence_files f
         JOIN installment_evidence_files a ON a.file_seq = f.seq
         WHERE f.mandate_seq = ?1
         ORDER BY f.seq, a.installment_seq"
    );
    db.into().query_map(&sql, &params![mandate_seq], |r| {
        let installment_seq: i64 = r.get(0)?;
        let meta = EvidenceFileMeta {
            seq: r.get(1)?,
            id: r.get(2)?,
            commerce_id: r.get(3)?,
            mandate_seq: r.get(4)?,
            name: r.get(5)?,
            content_type: r.get(6)?,
            size_bytes: r.get(7)?,
            sha256: r.get(8)?,
            uploaded_by: r.get(9)?,
            created_at: r.get(10)?,
        };
        Ok((installment_seq, meta))
    })
}

/// The latest file attached to an installment's payment, if any.
pub fn of_installment<'c>(
    db: impl Into<Db<'c>>,
    installment_seq: i64,
) -> db::Result<Option<EvidenceFileMeta>> {
    let sql = format!(
        "SELECT {META_COLUMNS}
         FROM payment_evidence_files f
         JOIN installment_evidence_files a ON a.file_seq = f.seq
         WHERE a.installment_seq = ?1
         ORDER BY f.seq DESC
         LIMIT 1"
    );
    db.into()
        .query_opt(&sql, &params![installment_seq], meta_from_row)
}

/// A file of any commerce by our id, with its bytes.
pub fn by_id<'c>(
    db: impl Into<Db<'c>>,
    id: &str,
) -> db::Result<Option<(EvidenceFileMeta, Vec<u8>)>> {
    let sql =
        format!("SELECT {META_COLUMNS}, f.bytes FROM payment_evidence_files f WHERE f.id = ?1");
    db.into()
        .query_opt(&sql, &params![id], |r| Ok((meta_from_row(r)?, r.get(10)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    #[test]
    fn a_file_is_kept_once_for_every_installment_it_pays() {
        on_both(|db| {
            let mandate = crate::mandates::tests::mandate(db, "GYM-1");
            let (mandate_seq, commerce_id) = (mandate.seq, mandate.commerce_id);
            let bytes = b"%PDF-1.4 evidence".to_vec();
            let seq = insert(
                db,
                &NewEvidenceFile {
                    id: "pef_1",
                    commerce_id,
                    mandate_seq,
                    name: "voucher.pdf",
                    content_type: "application/pdf",
                    sha256: "abc",
                    bytes: &bytes,
                    uploaded_by: "ops@example.cl",
                    created_at: "2026-11-29T12:00:00.000Z",
                },
            )
            .unwrap();
            let (meta, stored) = by_id(db, "pef_1").unwrap().unwrap();
            assert_eq!(stored, bytes);
            assert_eq!((meta.seq, meta.size_bytes), (seq, bytes.len() as i64));
            assert!(by_id(db, "pef_2").unwrap().is_none());
            assert!(of_mandate(db, mandate_seq).unwrap().is_empty());
            db.execute(
                "INSERT INTO installments (id, mandate_seq, commerce_id, external_id, amount,
                     currency, due_date, state, state_at, created_at)
                 VALUES ('ins_a', ?1, ?2, 'c1', '1000', 'CLP', '2026-12-05', 0,
                     '2026-11-29T00:00:00.000Z', '2026-11-29T00:00:00.000Z')",
                &params![mandate_seq, commerce_id],
            )
            .unwrap();
            let installment: i64 = db
                .query_row(
                    "SELECT seq FROM installments WHERE id = 'ins_a'",
                    &params![],
                    |r| r.get(0),
                )
                .unwrap();
            assert!(of_installment(db, installment).unwrap().is_none());
            attach(db, seq, installment).unwrap();
            attach(db, seq, installment).unwrap();
            assert_eq!(of_installment(db, installment).unwrap(), Some(meta.clone()));
            assert_eq!(
                of_mandate(db, mandate_seq).unwrap(),
                vec![(installment, meta)]
            );
        });
    }
}
