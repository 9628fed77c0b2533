//! The record of staff actions as a hash chain (`mandato_core::chain`'s rule).
//!
//! A record's hash covers `{seq, at, staffEmail, action, target, detail}` and the previous
//! record's hash. Records are appended only here, in the staff change's own transaction on the
//! single writer connection (a group commit runs its requests one after another, and the CLI's
//! writes take SQLite's write lock with `BEGIN IMMEDIATE`), so each append reads the chain's
//! head as the previous append left it. A unique index on `prev_hash` makes a fork impossible
//! even so. `staff_audit_head` keeps the last record's `seq` and hash, which lets [`verify`]
//! notice records removed from the end as well.
//!
//! On PostgreSQL several engines write at once, each change in its own transaction: an append
//! first takes a transaction-level advisory lock, so appends follow one another there too.

use serde_json::{Map, Value, json};

use super::db::{self, Backend, Db, Row, params};
use mandato_core::chain::{self, Fault, GENESIS, Walk};

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
    fn from_row(r: &Row<'_>) -> db::Result<Record> {
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

/// The advisory lock PostgreSQL's appends take, held until their transaction ends: any constant
/// no other lock of the application uses.
const APPEND_LOCK_KEY: i64 = 0x6d61_6e64_6174_6f02;

/// Appends a staff action to the chain, in the caller's transaction.
pub fn append<'c>(
    db: impl Into<Db<'c>>,
    at: &str,
    staff_email: &str,
    action: &str,
    target: Option<&str>,
    detail: Option<&str>,
) -> db::Result<()> {
    let conn = db.into();
    if conn.backend() == Backend::Postgres {
        // SQLite's single writer already orders the appends; here concurrent transactions
        // would read the same head (the unique `prev_hash` would refuse the second).
        conn.execute(
            "SELECT pg_advisory_xact_lock(?1)",
            &params![APPEND_LOCK_KEY],
        )?;
    }
    let prev_hash = match head(conn)? {
        Some((_, hash)) => hash,
        // A database whose head row went missing still chains on its last record rather than
        // refusing every staff action; `verify` reports the gap.
        None => last_hash(conn)?.unwrap_or_else(|| GENESIS.to_string()),
    };
    let seq: i64 = conn.query_row(
        "SELECT coalesce(max(seq), 0) + 1 FROM staff_audit",
        &params![],
        |r| r.get(0),
    )?;
    let record = Record {
        seq,
        at: at.to_string(),
        staff_email: staff_email.to_string(),
        action: action.to_string(),
        target: target.map(str::to_string),
        detail: detail.map(str::to_string),
    };
    let hash = chain::link_hash(record.fields(), &prev_hash);
    conn.execute(
        "INSERT INTO staff_audit (seq, at, staff_email, action, target, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        &params![
            seq,
            &record.at,
            &record.staff_email,
            &record.action,
            &record.target,
            &record.detail,
            &prev_hash,
            &hash
        ],
    )?;
    set_head(conn, seq, &hash)
}

fn head(db: Db<'_>) -> db::Result<Option<(i64, String)>> {
    db.query_opt(
        "SELECT seq, hash FROM staff_audit_head WHERE id = 1",
        &params![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

fn last_hash(db: Db<'_>) -> db::Result<Option<String>> {
    Ok(db
        .query_opt(
            "SELECT hash FROM staff_audit ORDER BY seq DESC LIMIT 1",
            &params![],
            |r| r.get::<Option<String>>(0),
        )?
        .flatten())
}

fn set_head(db: Db<'_>, seq: i64, hash: &str) -> db::Result<()> {
    db.execute(
        "INSERT INTO staff_audit_head (id, seq, hash) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
        &params![seq, hash],
    )?;
    Ok(())
}

/// Chains the records an installation wrote before the chain existed, in `seq` order, a batch
/// at a time (memory stays flat however many there are). Run once, by the migration that
/// added the chain, in its transaction.
pub(super) fn chain_existing<'c>(db: impl Into<Db<'c>>) -> db::Result<()> {
    const BATCH: i64 = 1000;
    let conn = db.into();
    let mut prev_hash = GENESIS.to_string();
    let mut last_seq = None;
    loop {
        let batch = conn.query_map(
            "SELECT seq, at, staff_email, action, target, detail FROM staff_audit
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            &params![last_seq.unwrap_or(0), BATCH],
            Record::from_row,
        )?;
        if batch.is_empty() {
            break;
        }
        for record in batch {
            let hash = chain::link_hash(record.fields(), &prev_hash);
            conn.execute(
                "UPDATE staff_audit SET prev_hash = ?2, hash = ?3 WHERE seq = ?1",
                &params![record.seq, &prev_hash, &hash],
            )?;
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

/// Recomputes the chain in `seq` order, a batch of rows at a time (constant memory), and names
/// the first record that does not hold. Run it in one read transaction, so that it sees one
/// state.
pub fn verify<'c>(db: impl Into<Db<'c>>) -> db::Result<Verification> {
    const BATCH: i64 = 1000;
    let conn = db.into();
    let mut walk = Walk::default();
    let mut last: Option<(i64, String)> = None;
    loop {
        let after = last.as_ref().map_or(i64::MIN, |(seq, _)| *seq);
        let batch = conn.query_map(
            "SELECT seq, at, staff_email, action, target, detail, prev_hash, hash
             FROM staff_audit WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            &params![after, BATCH],
            |row| {
                let prev_hash: Option<String> = row.get(6)?;
                let hash: Option<String> = row.get(7)?;
                Ok((Record::from_row(row)?, prev_hash, hash))
            },
        )?;
        if batch.is_empty() {
            break;
        }
        for (record, prev_hash, hash) in batch {
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
    use crate::pg_test::on_both;

    fn append_n(db: Db<'_>, n: usize) {
        for i in 0..n {
            let at = format!("2026-11-25T10:00:0{i}.000Z");
            append(
                db,
                &at,
                "ana@example.cl",
                "mandate.cancel",
                Some("man_1"),
                None,
            )
            .unwrap();
        }
    }

    fn broken_at(db: Db<'_>) -> Option<(i64, Problem)> {
        verify(db).unwrap().broken.map(|b| (b.seq, b.problem))
    }

    fn run(db: Db<'_>, sql: &str) {
        db.execute_batch(sql).unwrap();
    }

    #[test]
    fn appended_records_verify() {
        on_both(|db| {
            assert_eq!(verify(db).unwrap().records, 0);
            append_n(db, 4);
            let v = verify(db).unwrap();
            assert_eq!(
                v,
                Verification {
                    records: 4,
                    broken: None
                }
            );
        });
    }

    #[test]
    fn a_long_chain_verifies_across_batches() {
        on_both(|db| {
            for i in 0..1100 {
                append(
                    db,
                    "2026-11-25T10:00:00.000Z",
                    "ana@example.cl",
                    "x",
                    None,
                    Some(&i.to_string()),
                )
                .unwrap();
            }
            assert_eq!(verify(db).unwrap().records, 1100);
            run(
                db,
                "UPDATE staff_audit SET detail = 'changed' WHERE seq = 1050",
            );
            assert_eq!(broken_at(db), Some((1050, Problem::HashMismatch)));
        });
    }

    #[test]
    fn a_changed_field_is_a_hash_mismatch_at_that_record() {
        on_both(|db| {
            append_n(db, 4);
            run(db, "UPDATE staff_audit SET target = 'man_2' WHERE seq = 2");
            assert_eq!(broken_at(db), Some((2, Problem::HashMismatch)));
            assert_eq!(verify(db).unwrap().records, 1);
        });
    }

    #[test]
    fn a_removed_record_breaks_the_link_of_the_next() {
        on_both(|db| {
            append_n(db, 4);
            run(db, "DELETE FROM staff_audit WHERE seq = 2");
            assert_eq!(broken_at(db), Some((3, Problem::BrokenLink)));
        });
    }

    #[test]
    fn records_removed_from_the_end_are_missing() {
        on_both(|db| {
            append_n(db, 4);
            run(db, "DELETE FROM staff_audit WHERE seq >= 3");
            assert_eq!(broken_at(db), Some((3, Problem::RecordsMissing)));
            run(db, "DELETE FROM staff_audit");
            assert_eq!(broken_at(db), Some((1, Problem::RecordsMissing)));
        });
    }

    #[test]
    fn a_record_added_outside_the_chain_is_not_the_head() {
        on_both(|db| {
            append_n(db, 2);
            run(
                db,
                "INSERT INTO staff_audit (seq, at, staff_email, action) VALUES (3, 'x', 'y', 'z')",
            );
            assert_eq!(broken_at(db), Some((3, Problem::BrokenLink)));
        });
    }

    #[test]
    fn a_last_record_that_is_not_the_recorded_head_is_named() {
        on_both(|db| {
            append_n(db, 3);
            db.execute("UPDATE staff_audit_head SET hash = ?1", &params![GENESIS])
                .unwrap();
            let v = verify(db).unwrap();
            assert_eq!(v.records, 2);
            assert_eq!(
                v.broken.map(|b| (b.seq, b.problem)),
                Some((3, Problem::HeadMismatch))
            );
        });
    }

    #[test]
    fn swapped_contents_break_the_chain() {
        on_both(|db| {
            append_n(db, 3);
            run(
                db,
                "UPDATE staff_audit SET seq = -1 WHERE seq = 1;
                 UPDATE staff_audit SET seq = 1 WHERE seq = 2;
                 UPDATE staff_audit SET seq = 2 WHERE seq = -1;",
            );
            assert_eq!(broken_at(db), Some((1, Problem::BrokenLink)));
        });
    }

    #[test]
    fn a_new_record_after_removed_ones_still_shows_the_gap() {
        on_both(|db| {
            append_n(db, 4);
            run(db, "DELETE FROM staff_audit WHERE seq >= 3");
            append_n(db, 1);
            assert_eq!(broken_at(db), Some((3, Problem::BrokenLink)));
        });
    }

    #[test]
    fn rows_of_an_older_installation_are_chained_by_the_migration() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::migrations::run_before(&mut conn, "0016_staff_audit_chain").unwrap();
        for i in 0..2500 {
            conn.execute(
                "INSERT INTO staff_audit (at, staff_email, action, target, detail)
                 VALUES (?1, 'ana@example.cl', 'settings.retention', NULL, ?2)",
                rusqlite::params![
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
        append_n(Db::Sqlite(&conn), 1);
        assert_eq!(verify(&conn).unwrap().records, 2501);
    }

    #[test]
    fn concurrent_postgres_appends_follow_one_another() {
        let database = crate::pg_test::database();
        let appended = std::sync::Barrier::new(2);
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                database.connect().transaction(|db| {
                    append(
                        db,
                        "2026-11-25T10:00:00.000Z",
                        "ana@example.cl",
                        "a",
                        None,
                        None,
                    )?;
                    appended.wait();
                    // The second append is waiting for this transaction's lock meanwhile.
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    Ok::<(), db::Error>(())
                })
            });
            let second = scope.spawn(|| {
                let conn = database.connect();
                appended.wait();
                conn.transaction(|db| {
                    append(
                        db,
                        "2026-11-25T10:00:01.000Z",
                        "eva@example.cl",
                        "b",
                        None,
                        None,
                    )
                })
            });
            first.join().unwrap().unwrap();
            second.join().unwrap().unwrap();
        });
        let verified = database.connect().transaction(|db| verify(db)).unwrap();
        assert_eq!(
            verified,
            Verification {
                records: 2,
                broken: None
            }
        );
    }
}
