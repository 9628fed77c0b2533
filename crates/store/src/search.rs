//! The SQL functions searches use, registered on every connection the store opens:
//! `search_fold(text)` is `domain::search::fold`, `rut_key(text)` is `domain::search::rut_key`.
//! Both are deterministic, so SQLite may reuse their results within a statement.
//!
//! Also the lookups of the staff's global search that the lists' text searches
//! (`staff_views`) do not cover: an installment or an event (notification) by one of its ids,
//! exactly, each read through an index.

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

use super::db::{self, Db, params};
use mandato_core::domain::search;

/// An installment the global search found, with what its result line shows.
#[derive(Debug, Clone)]
pub struct InstallmentHit {
    pub id: String,
    pub external_id: String,
    pub state_id: i64,
    pub amount: String,
    pub currency: String,
    pub due_date: String,
    pub mandate_id: String,
    pub mandate_external_id: String,
    pub commerce_code: String,
}

/// An event (notification) the global search found.
#[derive(Debug, Clone)]
pub struct EventHit {
    pub id: String,
    pub kind: String,
    pub delivery_state: String,
    pub created_at: String,
    pub mandate_id: Option<String>,
    pub mandate_external_id: Option<String>,
    pub commerce_code: String,
}

/// Installments whose id (ins_...) or merchant's id is `text`, at most `limit`, newest first.
pub fn installments_by_id<'c>(
    db: impl Into<Db<'c>>,
    text: &str,
    limit: i64,
) -> db::Result<Vec<InstallmentHit>> {
    if text.contains('\0') {
        return Ok(Vec::new());
    }
    // Two lookups joined by UNION, each through its own index (`id`'s unique one and
    // `installments_by_external_id`), rather than an OR that may read the table.
    db.into().query_map(
        "SELECT i.id, i.external_id, i.state, i.amount, i.currency, i.due_date, m.id,
                m.external_id, co.code
         FROM installments i
         JOIN mandates m ON m.seq = i.mandate_seq
         JOIN commerces co ON co.id = i.commerce_id
         WHERE i.seq IN (SELECT seq FROM installments WHERE id = ?1
                         UNION SELECT seq FROM installments WHERE external_id = ?1)
         ORDER BY i.seq DESC
         LIMIT ?2",
        &params![text, limit],
        |r| {
            Ok(InstallmentHit {
                id: r.get(0)?,
                external_id: r.get(1)?,
                state_id: r.get(2)?,
                amount: r.get(3)?,
                currency: r.get(4)?,
                due_date: r.get(5)?,
                mandate_id: r.get(6)?,
                mandate_external_id: r.get(7)?,
                commerce_code: r.get(8)?,
            })
        },
    )
}

/// The event whose id (evt_...) is `text`.
pub fn events_by_id<'c>(db: impl Into<Db<'c>>, text: &str) -> db::Result<Vec<EventHit>> {
    if text.contains('\0') {
        return Ok(Vec::new());
    }
    db.into().query_map(
        "SELECT e.id, e.kind, e.delivery_state, e.created_at, m.id, m.external_id, co.code
         FROM events e
         JOIN commerces co ON co.id = e.commerce_id
         LEFT JOIN mandates m ON m.seq = e.mandate_seq
         WHERE e.id = ?1",
        &params![text],
        |r| {
            Ok(EventHit {
                id: r.get(0)?,
                kind: r.get(1)?,
                delivery_state: r.get(2)?,
                created_at: r.get(3)?,
                mandate_id: r.get(4)?,
                mandate_external_id: r.get(5)?,
                commerce_code: r.get(6)?,
            })
        },
    )
}

pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("search_fold", 1, flags, |ctx| {
        Ok(ctx.get::<Option<String>>(0)?.map(|t| search::fold(&t)))
    })?;
    conn.create_scalar_function("rut_key", 1, flags, |ctx| {
        Ok(ctx.get::<Option<String>>(0)?.map(|t| search::rut_key(&t)))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_fold_in_sql() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let (name, rut, none): (String, String, Option<String>) = conn
            .query_row(
                "SELECT search_fold('José Muñoz'), rut_key('12.345.678-K'), search_fold(NULL)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            (name.as_str(), rut.as_str(), none),
            ("jose munoz", "12345678k", None)
        );
    }

    #[test]
    fn installments_and_events_are_found_by_their_ids_on_both_backends() {
        crate::pg_test::on_both(|db| {
            let mandate = crate::mandates::tests::mandate(db, "GYM-1");
            db.execute(
                "INSERT INTO installments (id, mandate_seq, commerce_id, external_id, amount,
                     currency, due_date, state, state_at, created_at)
                 VALUES ('ins_a', ?1, ?2, 'cuota-1', '1000', 'CLP', '2026-12-05', 0,
                     '2026-11-29T00:00:00.000Z', '2026-11-29T00:00:00.000Z')",
                &params![mandate.seq, mandate.commerce_id],
            )
            .unwrap();
            let by_ours = installments_by_id(db, "ins_a", 10).unwrap();
            let by_theirs = installments_by_id(db, "cuota-1", 10).unwrap();
            assert_eq!(by_ours.len(), 1);
            assert_eq!(by_theirs.len(), 1);
            assert_eq!(by_ours[0].mandate_external_id, "GYM-1");
            assert!(installments_by_id(db, "cuota", 10).unwrap().is_empty());
            assert!(installments_by_id(db, "a\0b", 10).unwrap().is_empty());
            assert!(events_by_id(db, "evt_none").unwrap().is_empty());
        });
    }

    #[test]
    fn postgres_functions_fold_as_sqlite_s_do() {
        let database = crate::pg_test::database();
        let pg = database.connect();
        let samples = [
            "José Muñoz",
            "ÑUÑOA",
            "Ágata Güell Çelik",
            "ana@Example.cl",
            "Jose\u{301}",
            "12.345.678-K",
            "",
        ];
        pg.transaction(|db| {
            for sample in samples {
                let (folded, rut) = db.query_row(
                    "SELECT search_fold(?1), rut_key(?1)",
                    &crate::db::params![sample],
                    |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
                )?;
                assert_eq!(folded, search::fold(sample), "{sample}");
                assert_eq!(rut, search::rut_key(sample), "{sample}");
            }
            Ok::<(), crate::db::Error>(())
        })
        .unwrap();
    }
}
