//! The record of staff actions as a hash chain (`crate::chain`'s rule).
//!
//! A record's hash covers `{seq, at, staffEmail, action, target, detail}` and the previous
//! record's hash. Records are appended only here, in the staff change's own transaction on the
//! single writer connection (a group commit runs its requests one after another, and the CLI's
//! writes take SQLite's write lock with `BEGIN IMMEDIATE`), so each append reads the chain's
//! head as the previous append left it. A unique index on `prev_hash` makes a fork impossible
//! even so. `staff_audit_head` keeps the last record's `seq` and hash, which lets [`verify`]
//! notice records removed from the end as well.

use rusqlite::{Connection, Row, params};
use serde_json::{Map, Value, json};

use super::optional;
use crate::chain::{self, Fault, GENESIS, Walk};

/// One staff action as stored (without its hashes).
struct Record {
    seq: i64,
    at: String,
    staff_email: String,
    action: String,
    target: Option<String>,
    detail: Option<String>,
}

impl Record {
    /// From `SELECT seq, at, staff_email, action, target, detail`.
    fn from_row(r: &Row<'_>) -> rusqlite::Result<Record> {
        Ok(Record {
            seq: r.get(0)?,
            at: r.get(1)?,
            staff_email: r.get(2)?,
            action: r.get(3)?,
            target: r.get(4)?,
            detail: r.get(5)?,
        })
    }

    /// Every field the hash covers.
    fn fields(&self) -> Map<String, Value> {
        let Value::Object(fields) = json!({
            "seq": self.seq,
            "at": self.at,
            "staffEmail": self.staff_email,
            "action": self.action,
            "target": self.target,
            "detail": self.detail,
        }) else {
            unreachable!("json! of an object literal is an object")
        };
        fields
    }
}

/// Appends a staff action to the chain, in the caller's transaction.
pub fn append(
    conn: &Connection,
    at: &str,
    staff_email: &str,
    action: &str,
    target: Option<&str>,
    detail: Option<&str>,
) -> rusqlite::Result<()> {
    let prev_hash = match head(conn)? {
        Some((_, hash)) => hash,
        // A database whose head row went missing still chains on its last record rather than
        // refusing every staff action; `verify` reports the gap.
        None => last_hash(conn)?.unwrap_or_else(|| GENESIS.to_string()),
    };
    let seq: i64 = conn
        .prepare_cached("SELECT coalesce(max(seq), 0) + 1 FROM staff_audit")?
        .query_row([], |r| r.get(0))?;
    let record = Record {
        seq,
        at: at.to_string(),
        staff_email: staff_email.to_string(),
        action: action.to_string(),
        target: target.map(str::to_string),
        detail: detail.map(str::to_string),
    };
    let hash = chain::link_hash(record.fields(), &prev_hash);
    conn.prepare_cached(
        "INSERT INTO staff_audit (seq, at, staff_email, action, target, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        seq,
        record.at,
        record.staff_email,
        record.action,
        record.target,
        record.detail,
        prev_hash,
        hash
    ])?;
    set_head(conn, seq, &hash)
}

fn head(conn: &Connection) -> rusqlite::Result<Option<(i64, String)>> {
    optional(
        conn.prepare_cached("SELECT seq, hash FROM staff_audit_head WHERE id = 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?))),
    )
}

fn last_hash(conn: &Connection) -> rusqlite::Result<Option<String>> {
    Ok(optional(
        conn.prepare_cached("SELECT hash FROM staff_audit ORDER BY seq DESC LIMIT 1")?
            .query_row([], |r| r.get::<_, Option<String>>(0)),
    )?
    .flatten())
}

fn set_head(conn: &Connection, seq: i64, hash: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO staff_audit_head (id, seq, hash) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
    )?
    .execute(params![seq, hash])?;
    Ok(())
}

/// Chains the records an installation wrote before the chain existed, in `seq` order, a batch
/// at a time (memory stays flat however many there are). Run once, by the migration that
/// added the chain, in its transaction.
pub(super) fn chain_existing(conn: &Connection) -> rusqlite::Result<()> {
    const BATCH: i64 = 1000;
    let mut prev_hash = GENESIS.to_string();
    let mut last_seq = None;
    loop {
        let batch = conn
            .prepare_cached(
                "SELECT seq, at, staff_email, action, target, detail FROM staff_audit
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?
            .query_map(params![last_seq.unwrap_or(0), BATCH], Record::from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if batch.is_empty() {
            break;
        }
        for record in batch {
            let hash = chain::link_hash(record.fields(), &prev_hash);
            conn.prepare_cached("UPDATE staff_audit SET prev_hash = ?2, hash = ?3 WHERE seq = ?1")?
                .execute(params![record.seq, prev_hash, hash])?;
            prev_hash = hash;
            last_seq = Some(record.seq);
        }
    }
    match last_seq {
        Some(seq) => {
            tracing::info!(records = seq, "chained the staff audit's earlier records");
            set_head(conn, seq, &prev_hash)
        }
        None => Ok(()),
    }
}

/// What is wrong at the first record where the chain does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The record does not follow the record before it (one was removed, inserted or moved).
    BrokenLink,
    /// The record's fields are not the ones its hash was computed over (it was changed).
    HashMismatch,
    /// The last record is not the chain's recorded head (records were added without being
    /// chained, or the head was changed).
    HeadMismatch,
    /// Records are missing from the end of the chain, from this `seq` on.
    RecordsMissing,
}

impl Problem {
    /// A stable name for scripts and the UI.
    pub fn name(self) -> &'static str {
        match self {
            Problem::BrokenLink => "BROKEN_LINK",
            Problem::HashMismatch => "HASH_MISMATCH",
            Problem::HeadMismatch => "HEAD_MISMATCH",
            Problem::RecordsMissing => "RECORDS_MISSING",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Problem::BrokenLink => {
                "its previous hash is not the hash of the record before it: a record was removed, inserted or moved"
            }
            Problem::HashMismatch => "its fields do not match its hash: the record was changed",
            Problem::HeadMismatch => {
                "it is not the chain's recorded last record: records were added outside the chain"
            }
            Problem::RecordsMissing => "records were removed from the end of the chain",
        }
    }
}

impl From<Fault> for Problem {
    fn from(fault: Fault) -> Problem {
        match fault {
            Fault::BrokenLink => Problem::BrokenLink,
            Fault::HashMismatch => Problem::HashMismatch,
        }
    }
}

/// The first record where the chain does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    pub seq: i64,
    /// The record's time; `None` when the record is missing.
    pub at: Option<String>,
    pub problem: Problem,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verification {
    /// The records that held, from the first (all of them when the chain is intact).
    pub records: u64,
    pub broken: Option<Broken>,
}

/// Recomputes the chain in `seq` order, one row at a time (constant memory), and names the
/// first record that does not hold. Run it in one read transaction, so that it sees one state.
pub fn verify(conn: &Connection) -> rusqlite::Result<Verification> {
    let mut walk = Walk::default();
    let mut last: Option<(i64, String)> = None;
    let mut statement = conn.prepare(
        "SELECT seq, at, staff_email, action, target, detail, prev_hash, hash
         FROM staff_audit ORDER BY seq",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let record = Record::from_row(row)?;
        let prev_hash: Option<String> = row.get(6)?;
        let hash: Option<String> = row.get(7)?;
        if let Err(fault) = walk.step(record.fields(), prev_hash.as_deref(), hash.as_deref()) {
            return Ok(broken(
                walk.records(),
                record.seq,
                Some(record.at),
                fault.into(),
            ));
        }
        last = Some((record.seq, record.at));
    }
    let end = match (head(conn)?, last) {
        (None, None) => None,
        (Some((seq, hash)), Some((last_seq, _))) if seq == last_seq && hash == walk.head() => None,
        (Some(_), None) => Some((1, None, Problem::RecordsMissing)),
        (Some((seq, _)), Some((last_seq, _))) if last_seq < seq => {
            Some((last_seq + 1, None, Problem::RecordsMissing))
        }
        (_, Some((last_seq, at))) => Some((last_seq, Some(at), Problem::HeadMismatch)),
    };
    Ok(match end {
        None => Verification {
            records: walk.records(),
            broken: None,
        },
        // The last record held its hash and link but is itself the one in question.
        Some((seq, at, Problem::HeadMismatch)) => broken(
            walk.records().saturating_sub(1),
            seq,
            at,
            Problem::HeadMismatch,
        ),
        Some((seq, at, problem)) => broken(walk.records(), seq, at, problem),
    })
}

fn broken(records: u64, seq: i64, at: Option<String>, problem: Problem) -> Verification {
    Verification {
        records,
        broken: Some(Broken { seq, at, problem }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::run(&mut conn).unwrap();
        conn
    }

    fn append_n(conn: &Connection, n: usize) {
        for i in 0..n {
            let at = format!("2026-11-25T10:00:0{i}.000Z");
            append(
                conn,
                &at,
                "ana@example.cl",
                "mandate.cancel",
                Some("man_1"),
                None,
            )
            .unwrap();
        }
    }

    fn broken_at(conn: &Connection) -> Option<(i64, Problem)> {
        verify(conn).unwrap().broken.map(|b| (b.seq, b.problem))
    }

    #[test]
    fn appended_records_verify() {
        let conn = database();
        assert_eq!(verify(&conn).unwrap().records, 0);
        append_n(&conn, 4);
        let v = verify(&conn).unwrap();
        assert_eq!(
            v,
            Verification {
                records: 4,
                broken: None
            }
        );
    }

    #[test]
    fn a_changed_field_is_a_hash_mismatch_at_that_record() {
        let conn = database();
        append_n(&conn, 4);
        conn.execute("UPDATE staff_audit SET target = 'man_2' WHERE seq = 2", [])
            .unwrap();
        assert_eq!(broken_at(&conn), Some((2, Problem::HashMismatch)));
        assert_eq!(verify(&conn).unwrap().records, 1);
    }

    #[test]
    fn a_removed_record_breaks_the_link_of_the_next() {
        let conn = database();
        append_n(&conn, 4);
        conn.execute("DELETE FROM staff_audit WHERE seq = 2", [])
            .unwrap();
        assert_eq!(broken_at(&conn), Some((3, Problem::BrokenLink)));
    }

    #[test]
    fn records_removed_from_the_end_are_missing() {
        let conn = database();
        append_n(&conn, 4);
        conn.execute("DELETE FROM staff_audit WHERE seq >= 3", [])
            .unwrap();
        assert_eq!(broken_at(&conn), Some((3, Problem::RecordsMissing)));
        conn.execute("DELETE FROM staff_audit", []).unwrap();
        assert_eq!(broken_at(&conn), Some((1, Problem::RecordsMissing)));
    }

    #[test]
    fn a_record_added_outside_the_chain_is_not_the_head() {
        let conn = database();
        append_n(&conn, 2);
        conn.execute(
            "INSERT INTO staff_audit (at, staff_email, action) VALUES ('x', 'y', 'z')",
            [],
        )
        .unwrap();
        assert_eq!(broken_at(&conn), Some((3, Problem::BrokenLink)));
    }

    #[test]
    fn a_last_record_that_is_not_the_recorded_head_is_named() {
        let conn = database();
        append_n(&conn, 3);
        conn.execute("UPDATE staff_audit_head SET hash = ?1", [GENESIS])
            .unwrap();
        let v = verify(&conn).unwrap();
        assert_eq!(v.records, 2);
        assert_eq!(
            v.broken.map(|b| (b.seq, b.problem)),
            Some((3, Problem::HeadMismatch))
        );
    }

    #[test]
    fn swapped_contents_break_the_chain() {
        let conn = database();
        append_n(&conn, 3);
        conn.execute_batch(
            "UPDATE staff_audit SET seq = -1 WHERE seq = 1;
             UPDATE staff_audit SET seq = 1 WHERE seq = 2;
             UPDATE staff_audit SET seq = 2 WHERE seq = -1;",
        )
        .unwrap();
        assert_eq!(broken_at(&conn), Some((1, Problem::BrokenLink)));
    }

    #[test]
    fn a_new_record_after_removed_ones_still_shows_the_gap() {
        let conn = database();
        append_n(&conn, 4);
        conn.execute("DELETE FROM staff_audit WHERE seq >= 3", [])
            .unwrap();
        append_n(&conn, 1);
        assert_eq!(broken_at(&conn), Some((3, Problem::BrokenLink)));
    }

    #[test]
    fn rows_of_an_older_installation_are_chained_by_the_migration() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::run_before(&mut conn, "0016_staff_audit_chain").unwrap();
        for i in 0..2500 {
            conn.execute(
                "INSERT INTO staff_audit (at, staff_email, action, target, detail)
                 VALUES (?1, 'ana@example.cl', 'settings.retention', NULL, ?2)",
                params![
                    format!("2026-01-01T00:00:00.{:03}Z", i % 1000),
                    i.to_string()
                ],
            )
            .unwrap();
        }
        super::super::migrations::run(&mut conn).unwrap();
        assert_eq!(
            verify(&conn).unwrap(),
            Verification {
                records: 2500,
                broken: None
            }
        );
        append_n(&conn, 1);
        assert_eq!(verify(&conn).unwrap().records, 2501);
    }
}
