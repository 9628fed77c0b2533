//! The charging engine's tables: attempts (with their idempotency keys), runs, UF values, and
//! the installment columns the engine owns.

use super::db::{self, Backend, Db, Row, params};
use super::installments::{self, InstallmentRow};
use mandato_core::domain::date::Date;
use mandato_core::domain::state::{InstallmentState, MandateState};

/// What makes an installment due on `?1`: PENDING ones of ACTIVE mandates due by then, and
/// REJECTED ones whose retry falls due; never one already attempted on `?1`. Two branches, each
/// on its own index (`installments_due`, and `installments_retry` for the few retries).
///
/// `horizon` names the parameter holding the last due date the run charges for commerces
/// whose rule is `PREVIOUS` (the weekend and holidays after the run's date, or `?1` itself):
/// the index range ends there, and the few days past `?1` are kept for those commerces only.
///
/// On SQLite each branch names its index (`INDEXED BY`), which PostgreSQL has no syntax for:
/// its planner picks the partial and composite indexes of the same names by itself.
///
/// Dates compare as text, which is date order for the `YYYY-MM-DD` form every `Date` writes.
/// A row written before dates were bounded may hold a signed year (`+10000-12-01`), which sorts
/// below every such date; the lower bound `Date::MIN` keeps those out of every run (and it is a
/// bound on the same index, so it costs nothing).
fn due_branches(
    backend: Backend,
    horizon: &str,
    pending_keyset: &str,
    retry_keyset: &str,
) -> [String; 2] {
    let min = Date::MIN;
    let pending = InstallmentState::Pending.id();
    let rejected = InstallmentState::Rejected.id();
    let active = MandateState::Active.id();
    let not_today = "(i.last_attempt_date IS NULL OR i.last_attempt_date < ?1)";
    let (due_index, retry_index) = match backend {
        Backend::Sqlite => (
            " INDEXED BY installments_due",
            " INDEXED BY installments_retry",
        ),
        Backend::Postgres => ("", ""),
    };
    [
        format!(
            "SELECT i.seq, i.due_date FROM installments i{due_index}
               JOIN mandates m ON m.seq = i.mandate_seq
             WHERE i.state = {pending} AND i.due_date >= '{min}' AND i.due_date <= {horizon}
               AND (i.due_date <= ?1 OR i.commerce_id IN
                     (SELECT id FROM commerces WHERE charging_rule = 'PREVIOUS'))
               AND m.state = {active} AND {not_today}
               {pending_keyset}"
        ),
        format!(
            "SELECT i.seq, i.due_date FROM installments i{retry_index}
               JOIN mandates m ON m.seq = i.mandate_seq
             WHERE i.state = {rejected} AND i.retry_scheduled = 1
               AND i.next_retry_date >= '{min}' AND i.next_retry_date <= ?1
               AND m.state = {active} AND {not_today} {retry_keyset}"
        ),
    ]
}

/// How many installments are due on `date` (see `due_page`).
pub fn count_due<'c>(db: impl Into<Db<'c>>, date: &str, horizon: &str) -> db::Result<i64> {
    let db = db.into();
    let [pending, retry] = due_branches(db.backend(), "?2", "", "");
    // PostgreSQL 15 wants every subquery in FROM named.
    let sql = match db.backend() {
        Backend::Sqlite => {
            format!("SELECT (SELECT count(*) FROM ({pending})) + (SELECT count(*) FROM ({retry}))")
        }
        Backend::Postgres => format!(
            "SELECT (SELECT count(*) FROM ({pending}) AS p) + (SELECT count(*) FROM ({retry}) AS r)"
        ),
    };
    db.query_row(&sql, &params![date, horizon], |r| r.get(0))
}

/// The next `limit` installments due on `date` after `after` (a due date and seq), in (due
/// date, seq) order, with their due dates: the run walks them page by page and never holds
/// them all. Every page is a few index seeks, wherever it starts. `horizon`: see `due_branches`.
pub fn due_page<'c>(
    db: impl Into<Db<'c>>,
    date: &str,
    horizon: &str,
    after: Option<(&str, i64)>,
    limit: usize,
) -> db::Result<Vec<(i64, String)>> {
    let db = db.into();
    let backend = db.backend();
    // The keyset (due_date, seq) > (?2, ?3), split so that the index serves both halves: the
    // rest of the cursor's due date by seq, then the later dates.
    let [same_day, _] = due_branches(backend, "?5", "AND i.due_date = ?2 AND i.seq > ?3", "");
    let [later_days, retries] = due_branches(
        backend,
        "?5",
        "AND i.due_date > ?2",
        "AND (i.due_date > ?2 OR (i.due_date = ?2 AND i.seq > ?3))",
    );
    let sql = match backend {
        Backend::Sqlite => format!(
            "SELECT seq, due_date FROM ({same_day} ORDER BY i.seq LIMIT ?4)
         UNION ALL SELECT seq, due_date FROM ({later_days} ORDER BY i.due_date, i.seq LIMIT ?4)
         UNION ALL SELECT seq, due_date FROM ({retries} ORDER BY i.due_date, i.seq LIMIT ?4)
         ORDER BY 2, 1 LIMIT ?4"
        ),
        // The same, with the subqueries named as PostgreSQL 15 wants them.
        Backend::Postgres => format!(
            "SELECT seq, due_date FROM ({same_day} ORDER BY i.seq LIMIT ?4) AS same_day
         UNION ALL SELECT seq, due_date FROM ({later_days} ORDER BY i.due_date, i.seq LIMIT ?4) AS later_days
         UNION ALL SELECT seq, due_date FROM ({retries} ORDER BY i.due_date, i.seq LIMIT ?4) AS retries
         ORDER BY 2, 1 LIMIT ?4"
        ),
    };
    let (after_date, after_seq) = after.unwrap_or(("", 0));
    db.query_map(
        &sql,
        &params![date, after_date, after_seq, limit as i64, horizon],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

#[derive(Debug, Clone)]
pub struct OpenAttempt {
    pub seq: i64,
    pub installment_seq: i64,
    pub idempotency_key: String,
    pub business_date: String,
    pub amount: String,
    pub currency: String,
    /// IN_PROCESS or IN_VALIDATION, as read: settling takes the attempt only from it.
    pub state: String,
    /// When the attempt was recorded (before its first send).
    pub created_at: String,
}

/// Attempts in `state` (IN_PROCESS: unfinished by a crash; IN_VALIDATION: awaiting the bank)
/// begun before `before_date` (or any date when `None`).
pub fn open_attempts<'c>(
    db: impl Into<Db<'c>>,
    state: &str,
    before_date: Option<&str>,
) -> db::Result<Vec<OpenAttempt>> {
    db.into().query_map(
        "SELECT seq, installment_seq, idempotency_key, business_date, amount, currency, state,
                created_at
         FROM charge_attempts WHERE state = ?1 AND (CAST(?2 AS TEXT) IS NULL OR business_date < ?2) ORDER BY seq",
        &params![state, before_date],
        open_attempt,
    )
}

pub(crate) fn open_attempt(r: &db::Row<'_>) -> db::Result<OpenAttempt> {
    Ok(OpenAttempt {
        seq: r.get(0)?,
        installment_seq: r.get(1)?,
        idempotency_key: r.get(2)?,
        business_date: r.get(3)?,
        amount: r.get(4)?,
        currency: r.get(5)?,
        state: r.get(6)?,
        created_at: r.get(7)?,
    })
}

pub struct NewAttempt<'a> {
    pub installment_seq: i64,
    pub run_seq: Option<i64>,
    pub attempt_no: i64,
    pub business_date: &'a str,
    pub idempotency_key: &'a str,
    pub amount: &'a str,
    pub currency: &'a str,
    pub now: &'a str,
}

/// Writes an attempt IN_PROCESS; `Ok(None)` when the installment already has one that date.
///
/// This row is the installment's claim for the date: `charge_attempts` is unique on
/// (installment, business date), so of engines sharing one PostgreSQL database that reach the
/// same installment on the same date exactly one inserts it and goes on to the processor; the
/// other waits for the winner's transaction and, once it commits, gets `None`. (Were the
/// winner's transaction to roll back, the other one inserts instead: the claim is never lost.)
/// The run's engines walk the due installments in the same (due date, seq) order, so they
/// wait on each other in one order and cannot deadlock. A row lock with `SKIP LOCKED` would
/// not do: an installment locked for a moment by anything else (a staff edit) would be skipped
/// by every engine, and so not charged that day.
pub fn insert_attempt<'c>(db: impl Into<Db<'c>>, a: &NewAttempt<'_>) -> db::Result<Option<i64>> {
    db.into().query_opt(
        "INSERT INTO charge_attempts (id, installment_seq, run_seq, attempt_no, business_date,
                    idempotency_key, amount, currency, state, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'IN_PROCESS', ?9)
             ON CONFLICT DO NOTHING RETURNING seq",
        &params![
            mandato_core::ids::new_id("pay").as_str(),
            a.installment_seq,
            a.run_seq,
            a.attempt_no,
            a.business_date,
            a.idempotency_key,
            a.amount,
            a.currency,
            a.now
        ],
        |r| r.get(0),
    )
}

/// Attempts still IN_PROCESS that were recorded before `cutoff`.
pub fn in_process_created_before<'c>(
    db: impl Into<Db<'c>>,
    cutoff: &str,
) -> db::Result<Vec<OpenAttempt>> {
    db.into().query_map(
        "SELECT seq, installment_seq, idempotency_key, business_date, amount, currency, state,
                created_at
         FROM charge_attempts WHERE state = 'IN_PROCESS' AND created_at < ?1 ORDER BY seq",
        &params![cutoff],
        open_attempt,
    )
}

/// Takes an open attempt for settling, in the settling transaction: `false` when it is no
/// longer in `state` (the state it was read in: IN_PROCESS, or IN_VALIDATION awaiting the
/// bank). Engines sharing PostgreSQL may both hold an outcome for one attempt (a starting
/// engine reconciles what another still has in flight; two runs settle the same bank debits);
/// the row lock makes the second wait for the first's commit and then find the attempt moved
/// on, so an outcome is applied once. SQLite's single writer already serialises them.
pub fn take_open_attempt<'c>(db: impl Into<Db<'c>>, seq: i64, state: &str) -> db::Result<bool> {
    let db = db.into();
    let sql = match db.backend() {
        Backend::Sqlite => "SELECT 1 FROM charge_attempts WHERE seq = ?1 AND state = ?2",
        Backend::Postgres => {
            "SELECT 1 FROM charge_attempts WHERE seq = ?1 AND state = ?2 FOR UPDATE"
        }
    };
    Ok(db
        .query_opt(sql, &params![seq, state], |_| Ok(()))?
        .is_some())
}

pub fn finish_attempt<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    state: &str,
    authorization_code: Option<&str>,
    rejection_code: Option<&str>,
    now: &str,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE charge_attempts SET state = ?2, authorization_code = ?3, rejection_code = ?4,
                finished_at = CASE WHEN ?2 IN ('PAID', 'REJECTED') THEN ?5 ELSE finished_at END
         WHERE seq = ?1",
        &params![seq, state, authorization_code, rejection_code, now],
    )?;
    Ok(())
}

/// The installment enters IN_PROCESS for an attempt on `date`: the installment as it now is.
pub fn begin_charge<'c>(
    db: impl Into<Db<'c>>,
    installment_seq: i64,
    date: &str,
    method_id: i64,
    charged_clp: Option<&str>,
    now: &str,
) -> db::Result<InstallmentRow> {
    installments::update_returning(
        db,
        installment_seq,
        "UPDATE installments SET state = ?2, state_at = ?3, attempts = attempts + 1,
                last_attempt_date = ?4, payment_method_id = ?5, charged_clp = ?6,
                retry_scheduled = 0, forced_outcome = NULL
         WHERE seq = ?1",
        &params![
            installment_seq,
            InstallmentState::InProcess.id(),
            now,
            date,
            method_id,
            charged_clp
        ],
    )
}

/// What an attempt's outcome writes on the installment.
pub enum InstallmentOutcome<'a> {
    Paid {
        authorization_code: &'a str,
    },
    InValidation,
    Rejected {
        code: &'a str,
        message: &'a str,
        next_retry_date: Option<&'a str>,
        first_rejected_date: &'a str,
    },
}

/// Writes an attempt's outcome on the installment: the installment as it now is.
pub fn record_outcome<'c>(
    db: impl Into<Db<'c>>,
    installment_seq: i64,
    outcome: &InstallmentOutcome<'_>,
    now: &str,
) -> db::Result<InstallmentRow> {
    let db = db.into();
    match outcome {
        InstallmentOutcome::Paid { authorization_code } => installments::update_returning(
            db,
            installment_seq,
            "UPDATE installments SET state = ?2, state_at = ?3, authorization_code = ?4,
                        rejection_code = NULL, rejection_message = NULL, retry_scheduled = 0,
                        next_retry_date = NULL
                 WHERE seq = ?1",
            &params![
                installment_seq,
                InstallmentState::Paid.id(),
                now,
                *authorization_code
            ],
        ),
        InstallmentOutcome::InValidation => installments::update_returning(
            db,
            installment_seq,
            "UPDATE installments SET state = ?2, state_at = ?3 WHERE seq = ?1",
            &params![installment_seq, InstallmentState::InValidation.id(), now],
        ),
        InstallmentOutcome::Rejected {
            code,
            message,
            next_retry_date,
            first_rejected_date,
        } => installments::update_returning(
            db,
            installment_seq,
            "UPDATE installments SET state = ?2, state_at = ?3, rejection_code = ?4,
                        rejection_message = ?5, next_retry_date = ?6, retry_scheduled = ?7,
                        first_rejected_date = ?8
                 WHERE seq = ?1",
            &params![
                installment_seq,
                InstallmentState::Rejected.id(),
                now,
                *code,
                *message,
                *next_retry_date,
                next_retry_date.is_some(),
                *first_rejected_date
            ],
        ),
    }
}

/// `insert_attempt` for a page: answers, in the order given, each attempt's seq, or `None`
/// where its installment already has one that date. On PostgreSQL one statement that inserts
/// the rows in the order given (the page's order, which is every engine's order: see
/// `insert_attempt`); SQLite inserts each in-process.
pub fn insert_attempts<'c>(
    db: impl Into<Db<'c>>,
    attempts: &[NewAttempt<'_>],
) -> db::Result<Vec<Option<i64>>> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        return attempts.iter().map(|a| insert_attempt(db, a)).collect();
    }
    let rows = attempts
        .iter()
        .enumerate()
        .map(|(ord, a)| {
            serde_json::json!({
                "ord": ord,
                "id": mandato_core::ids::new_id("pay"),
                "installment_seq": a.installment_seq,
                "run_seq": a.run_seq,
                "attempt_no": a.attempt_no,
                "business_date": a.business_date,
                "idempotency_key": a.idempotency_key,
                "amount": a.amount,
                "currency": a.currency,
                "created_at": a.now,
            })
        })
        .collect();
    let inserted: std::collections::HashMap<i64, i64> = db
        .query_map(
            &format!(
                "INSERT INTO charge_attempts (id, installment_seq, run_seq, attempt_no,
                        business_date, idempotency_key, amount, currency, state, created_at)
                 SELECT id, installment_seq, run_seq, attempt_no, business_date,
                        idempotency_key, amount, currency, 'IN_PROCESS', created_at
                 FROM {} ORDER BY ord
                 ON CONFLICT DO NOTHING RETURNING installment_seq, seq",
                db::json_records(
                    "ord bigint, id text, installment_seq bigint, run_seq bigint,
                     attempt_no bigint, business_date text, idempotency_key text, amount text,
                     currency text, created_at text"
                )
            ),
            &params![db::json_rows_param(rows).as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .into_iter()
        .collect();
    Ok(attempts
        .iter()
        .map(|a| inserted.get(&a.installment_seq).copied())
        .collect())
}

/// An installment entering IN_PROCESS for an attempt (`begin_charge`).
pub struct BeginCharge<'a> {
    pub installment_seq: i64,
    pub date: &'a str,
    pub method_id: i64,
    pub charged_clp: Option<&'a str>,
}

/// `begin_charge` for a page: the installments as they now are, in any order. One statement
/// on PostgreSQL; SQLite updates each in-process.
pub fn begin_charges<'c>(
    db: impl Into<Db<'c>>,
    charges: &[BeginCharge<'_>],
    now: &str,
) -> db::Result<Vec<InstallmentRow>> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        return charges
            .iter()
            .map(|c| {
                begin_charge(
                    db,
                    c.installment_seq,
                    c.date,
                    c.method_id,
                    c.charged_clp,
                    now,
                )
            })
            .collect();
    }
    let rows = charges
        .iter()
        .map(|c| {
            serde_json::json!({
                "seq": c.installment_seq,
                "date": c.date,
                "method_id": c.method_id,
                "charged_clp": c.charged_clp,
            })
        })
        .collect();
    installments::update_many_returning(
        db,
        &format!(
            "UPDATE installments i SET state = ?2, state_at = ?3, attempts = i.attempts + 1,
                    last_attempt_date = x.date, payment_method_id = x.method_id,
                    charged_clp = x.charged_clp, retry_scheduled = 0, forced_outcome = NULL
             FROM {} WHERE i.seq = x.seq",
            db::json_records("seq bigint, date text, method_id bigint, charged_clp text")
        ),
        &params![
            db::json_rows_param(rows).as_str(),
            InstallmentState::InProcess.id(),
            now
        ],
    )
}

/// `take_open_attempt` for a page: which of the attempts `seqs` are still in `state`, each
/// now locked for this transaction (on PostgreSQL, in `seq` order, in one statement).
pub fn take_open_attempts<'c>(
    db: impl Into<Db<'c>>,
    seqs: &[i64],
    state: &str,
) -> db::Result<std::collections::HashSet<i64>> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        let mut taken = std::collections::HashSet::new();
        for seq in seqs {
            if take_open_attempt(db, *seq, state)? {
                taken.insert(*seq);
            }
        }
        return Ok(taken);
    }
    Ok(db
        .query_map(
            &format!(
                "SELECT seq FROM charge_attempts WHERE seq = {} AND state = ?2
                 ORDER BY seq FOR UPDATE",
                db::ANY_KEY
            ),
            &params![db::key_array(seqs).as_str(), state],
            |r| r.get(0),
        )?
        .into_iter()
        .collect())
}

/// `record_outcome` for a page: the installments as they now are, in any order. One statement
/// on PostgreSQL, which writes each outcome's columns as `record_outcome` does (the `CASE`s
/// keep what an outcome does not write); SQLite updates each in-process.
pub fn record_outcomes<'c>(
    db: impl Into<Db<'c>>,
    outcomes: &[(i64, InstallmentOutcome<'_>)],
    now: &str,
) -> db::Result<Vec<InstallmentRow>> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        return outcomes
            .iter()
            .map(|(seq, outcome)| record_outcome(db, *seq, outcome, now))
            .collect();
    }
    let rows = outcomes
        .iter()
        .map(|(seq, outcome)| match outcome {
            InstallmentOutcome::Paid { authorization_code } => serde_json::json!({
                "seq": seq, "kind": "PAID", "state": InstallmentState::Paid.id(),
                "authorization_code": authorization_code,
            }),
            InstallmentOutcome::InValidation => serde_json::json!({
                "seq": seq, "kind": "IN_VALIDATION", "state": InstallmentState::InValidation.id(),
            }),
            InstallmentOutcome::Rejected {
                code,
                message,
                next_retry_date,
                first_rejected_date,
            } => serde_json::json!({
                "seq": seq, "kind": "REJECTED", "state": InstallmentState::Rejected.id(),
                "rejection_code": code, "rejection_message": message,
                "next_retry_date": next_retry_date,
                "retry_scheduled": i64::from(next_retry_date.is_some()),
                "first_rejected_date": first_rejected_date,
            }),
        })
        .collect();
    installments::update_many_returning(
        db,
        &format!(
            "UPDATE installments i SET state = x.state, state_at = ?2,
                authorization_code = CASE x.kind WHEN 'PAID' THEN x.authorization_code
                                     ELSE i.authorization_code END,
                rejection_code = CASE x.kind WHEN 'PAID' THEN NULL
                                 WHEN 'REJECTED' THEN x.rejection_code ELSE i.rejection_code END,
                rejection_message = CASE x.kind WHEN 'PAID' THEN NULL
                                    WHEN 'REJECTED' THEN x.rejection_message
                                    ELSE i.rejection_message END,
                retry_scheduled = CASE x.kind WHEN 'PAID' THEN 0
                                  WHEN 'REJECTED' THEN x.retry_scheduled
                                  ELSE i.retry_scheduled END,
                next_retry_date = CASE x.kind WHEN 'PAID' THEN NULL
                                  WHEN 'REJECTED' THEN x.next_retry_date
                                  ELSE i.next_retry_date END,
                first_rejected_date = CASE x.kind WHEN 'REJECTED' THEN x.first_rejected_date
                                      ELSE i.first_rejected_date END
             FROM {} WHERE i.seq = x.seq",
            db::json_records(
                "seq bigint, kind text, state bigint, authorization_code text,
                 rejection_code text, rejection_message text, next_retry_date text,
                 retry_scheduled bigint, first_rejected_date text"
            )
        ),
        &params![db::json_rows_param(rows).as_str(), now],
    )
}

/// An attempt's outcome (`finish_attempt`).
pub struct FinishedAttempt<'a> {
    pub seq: i64,
    pub state: &'a str,
    pub authorization_code: Option<&'a str>,
    pub rejection_code: Option<&'a str>,
}

/// `finish_attempt` for a page: one statement on PostgreSQL; SQLite updates each in-process.
pub fn finish_attempts<'c>(
    db: impl Into<Db<'c>>,
    finished: &[FinishedAttempt<'_>],
    now: &str,
) -> db::Result<()> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        for f in finished {
            finish_attempt(
                db,
                f.seq,
                f.state,
                f.authorization_code,
                f.rejection_code,
                now,
            )?;
        }
        return Ok(());
    }
    let rows = finished
        .iter()
        .map(|f| {
            serde_json::json!({
                "seq": f.seq, "state": f.state,
                "authorization_code": f.authorization_code, "rejection_code": f.rejection_code,
            })
        })
        .collect();
    db.execute(
        &format!(
            "UPDATE charge_attempts a SET state = x.state,
                    authorization_code = x.authorization_code, rejection_code = x.rejection_code,
                    finished_at = CASE WHEN x.state IN ('PAID', 'REJECTED') THEN ?2
                                  ELSE a.finished_at END
             FROM {} WHERE a.seq = x.seq",
            db::json_records(
                "seq bigint, state text, authorization_code text, rejection_code text"
            )
        ),
        &params![db::json_rows_param(rows).as_str(), now],
    )?;
    Ok(())
}

/// Sandbox: decides the next attempt's outcome (`None` clears it).
pub fn set_forced_outcome<'c>(
    db: impl Into<Db<'c>>,
    installment_seq: i64,
    forced: Option<&str>,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE installments SET forced_outcome = ?2 WHERE seq = ?1",
        &params![installment_seq, forced],
    )?;
    Ok(())
}

pub fn uf_value<'c>(db: impl Into<Db<'c>>, date: &str) -> db::Result<Option<String>> {
    db.into().query_opt(
        "SELECT value FROM uf_values WHERE date = ?1",
        &params![date],
        |r| r.get(0),
    )
}

pub fn upsert_uf<'c>(db: impl Into<Db<'c>>, date: &str, value: &str) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO uf_values (date, value) VALUES (?1, ?2) ON CONFLICT (date) DO UPDATE SET value = excluded.value",
        &params![date, value],
    )?;
    Ok(())
}

/// Whether the charging engine made the payment with this authorization code using the
/// instrument the mandate holds now (not a portal card, a payment the merchant recorded, or a
/// card replaced since): one of its attempts, started after that instrument's enrolment, was
/// approved with it.
pub fn paid_with_current_instrument<'c>(
    db: impl Into<Db<'c>>,
    installment_seq: i64,
    authorization_code: &str,
) -> db::Result<bool> {
    db.into().query_row(
        "SELECT EXISTS (
           SELECT 1 FROM charge_attempts a
             JOIN installments i ON i.seq = a.installment_seq
             JOIN instruments n ON n.mandate_seq = i.mandate_seq
           WHERE a.installment_seq = ?1 AND a.authorization_code = ?2
             AND a.created_at >= n.created_at)",
        &params![installment_seq, authorization_code],
        |r| r.get(0),
    )
}

/// Schedules every REJECTED installment of a mandate for a retry on `date` (the customer gave
/// a new instrument, so even a hard decline of the old one is worth another attempt); their
/// first rejection date stays, so the retry policy counts from it afterwards. Returns how many.
pub fn retry_rejected_on<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    date: &str,
) -> db::Result<usize> {
    let changed = db.into().execute(
        "UPDATE installments SET retry_scheduled = 1, next_retry_date = ?2
         WHERE mandate_seq = ?1 AND state = ?3",
        &params![mandate_seq, date, InstallmentState::Rejected.id()],
    )?;
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

/// UF values, newest date first, before `before` (exclusive) when given: `(date, value)`.
pub fn uf_values<'c>(
    db: impl Into<Db<'c>>,
    before: Option<&str>,
    limit: i64,
) -> db::Result<Vec<(String, String)>> {
    db.into().query_map(
        "SELECT date, value FROM uf_values WHERE CAST(?1 AS TEXT) IS NULL OR date < ?1 ORDER BY date DESC LIMIT ?2",
        &params![before, limit],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// How many UF values are known, and the first and last of their dates.
pub fn uf_coverage<'c>(db: impl Into<Db<'c>>) -> db::Result<(i64, Option<String>, Option<String>)> {
    db.into().query_row(
        "SELECT count(*), min(date), max(date) FROM uf_values",
        &params![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// ACTIVE PERMANENT mandates, to keep their upcoming installments topped up.
pub fn active_permanent_mandates<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<i64>> {
    db.into().query_map(
        "SELECT seq FROM mandates WHERE type = 2 AND state = ?1",
        &params![MandateState::Active.id()],
        |r| r.get(0),
    )
}

/// How many installments a mandate has, and how many of them are due after `date`.
pub fn installment_counts<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    date: &str,
) -> db::Result<(i64, i64)> {
    db.into().query_row(
        "SELECT count(*), count(*) FILTER (WHERE due_date > ?2) FROM installments WHERE mandate_seq = ?1",
        &params![mandate_seq, date],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// A run's counts (CONTRACT 11).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCounts {
    pub total: i64,
    pub done: i64,
    pub attempted: i64,
    pub paid: i64,
    pub rejected: i64,
    pub in_validation: i64,
    pub in_process: i64,
    pub settled: i64,
    pub waiting_uf: i64,
    /// Due installments left alone: their commerce has no acquirer for the rail.
    pub acquirer_not_configured: i64,
}

#[derive(Debug, Clone)]
pub struct RunRow {
    pub seq: i64,
    pub business_date: String,
    pub trigger: String,
    pub state: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub counts: RunCounts,
}

/// A PAID installment the charging engine charged: what a refund needs.
#[derive(Debug, Clone)]
pub struct ChargedInstallment {
    pub installment_seq: i64,
    pub mandate_seq: i64,
    pub commerce_id: i64,
    pub state: i64,
    /// The PAID attempt's key, amount and currency (CLP for UF installments); `None` when the
    /// installment was paid otherwise (marked paid, paid on the portal).
    pub charge: Option<(String, String, String)>,
}

/// An installment by its internal id, with the charge attempt that paid it, if any.
pub fn charged_installment<'c>(
    db: impl Into<Db<'c>>,
    internal_id: &str,
) -> db::Result<Option<ChargedInstallment>> {
    db.into().query_opt(
        "SELECT i.seq, i.mandate_seq, i.commerce_id, i.state,
                a.idempotency_key, a.amount, a.currency
         FROM installments i
         LEFT JOIN charge_attempts a ON a.installment_seq = i.seq AND a.state = 'PAID'
         WHERE i.id = ?1
         ORDER BY a.seq DESC LIMIT 1",
        &params![internal_id],
        |r| {
            let key: Option<String> = r.get(4)?;
            let amount: Option<String> = r.get(5)?;
            let currency: Option<String> = r.get(6)?;
            Ok(ChargedInstallment {
                installment_seq: r.get(0)?,
                mandate_seq: r.get(1)?,
                commerce_id: r.get(2)?,
                state: r.get(3)?,
                charge: match (key, amount, currency) {
                    (Some(k), Some(a), Some(c)) => Some((k, a, c)),
                    _ => None,
                },
            })
        },
    )
}

pub fn insert_run<'c>(
    db: impl Into<Db<'c>>,
    date: &str,
    trigger: &str,
    now: &str,
) -> db::Result<i64> {
    db.into().query_row(
        "INSERT INTO charge_runs (business_date, trigger, state, started_at) VALUES (?1, ?2, 'RUNNING', ?3)
         RETURNING seq",
        &params![date, trigger, now],
        |r| r.get(0),
    )
}

pub fn update_run<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    c: &RunCounts,
    finished_at: Option<&str>,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE charge_runs SET total = ?2, done = ?3, attempted = ?4, paid = ?5, rejected = ?6,
                in_validation = ?7, in_process = ?8, settled = ?9, waiting_uf = ?10,
                acquirer_not_configured = ?12,
                finished_at = ?11, state = CASE WHEN CAST(?11 AS TEXT) IS NULL THEN state ELSE 'FINISHED' END
         WHERE seq = ?1",
        &params![
            seq,
            c.total,
            c.done,
            c.attempted,
            c.paid,
            c.rejected,
            c.in_validation,
            c.in_process,
            c.settled,
            c.waiting_uf,
            finished_at,
            c.acquirer_not_configured
        ],
    )?;
    Ok(())
}

/// Runs left RUNNING by a crash.
pub fn interrupt_running<'c>(db: impl Into<Db<'c>>) -> db::Result<usize> {
    let changed = db.into().execute(
        "UPDATE charge_runs SET state = 'INTERRUPTED' WHERE state = 'RUNNING'",
        &params![],
    )?;
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

/// The latest business date with a finished run.
pub fn last_run_date<'c>(db: impl Into<Db<'c>>) -> db::Result<Option<String>> {
    db.into().query_row(
        "SELECT max(business_date) FROM charge_runs WHERE state = 'FINISHED'",
        &params![],
        |r| r.get(0),
    )
}

/// A run's columns, in the order `run_row` reads them.
const RUN_COLUMNS: &str =
    "seq, business_date, trigger, state, started_at, finished_at, total, done,
     attempted, paid, rejected, in_validation, in_process, settled, waiting_uf,
     acquirer_not_configured";

fn run_row(r: &Row<'_>) -> db::Result<RunRow> {
    Ok(RunRow {
        seq: r.get(0)?,
        business_date: r.get(1)?,
        trigger: r.get(2)?,
        state: r.get(3)?,
        started_at: r.get(4)?,
        finished_at: r.get(5)?,
        counts: RunCounts {
            total: r.get(6)?,
            done: r.get(7)?,
            attempted: r.get(8)?,
            paid: r.get(9)?,
            rejected: r.get(10)?,
            in_validation: r.get(11)?,
            in_process: r.get(12)?,
            settled: r.get(13)?,
            waiting_uf: r.get(14)?,
            acquirer_not_configured: r.get(15)?,
        },
    })
}

/// The latest runs, newest first.
pub fn runs<'c>(db: impl Into<Db<'c>>, limit: i64) -> db::Result<Vec<RunRow>> {
    db.into().query_map(
        &format!("SELECT {RUN_COLUMNS} FROM charge_runs ORDER BY seq DESC LIMIT ?1"),
        &params![limit],
        run_row,
    )
}

/// The run `seq` with its counts, or `None`.
pub fn run_by_seq<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<Option<RunRow>> {
    db.into().query_opt(
        &format!("SELECT {RUN_COLUMNS} FROM charge_runs WHERE seq = ?1"),
        &params![seq],
        run_row,
    )
}

/// The retry policy of a commerce: days after the first rejection.
pub fn retry_policy<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<Option<String>> {
    Ok(db
        .into()
        .query_opt(
            "SELECT retry_policy FROM commerces WHERE id = ?1",
            &params![commerce_id],
            |r| r.get::<Option<String>>(0),
        )?
        .flatten())
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;
    use std::sync::{Arc, Barrier};

    use rust_decimal::Decimal;

    use super::*;
    use crate::installments::{self, NewInstallment};
    use crate::mandates::{self, tests::mandate};
    use crate::pg_test::{self, on_both};
    use mandato_core::domain::money::{Currency, Money};

    const DAY: &str = "2026-12-01";

    /// An ACTIVE mandate with installments due on each of `due_dates`; their seqs, in order.
    fn due_installments(db: Db<'_>, due_dates: &[&str]) -> Vec<i64> {
        let m = mandate(db, "m-1");
        mandates::set_state(db, m.seq, MandateState::Active, None, "t0").unwrap();
        let items: Vec<NewInstallment> = due_dates
            .iter()
            .enumerate()
            .map(|(n, due)| NewInstallment {
                external_id: format!("i-{n}"),
                amount: Money::from_decimal(Decimal::from_str("1000").unwrap(), Currency::Clp)
                    .unwrap(),
                due_date: Date::parse(due).unwrap(),
            })
            .collect();
        installments::insert_many(db, m.seq, m.commerce_id, &items, "installments", "t0")
            .unwrap()
            .iter()
            .map(|i| i.seq)
            .collect()
    }

    fn attempt<'a>(installment_seq: i64, key: &'a str) -> NewAttempt<'a> {
        NewAttempt {
            installment_seq,
            run_seq: None,
            attempt_no: 1,
            business_date: DAY,
            idempotency_key: key,
            amount: "1000",
            currency: "CLP",
            now: "2026-12-01T12:00:00.000Z",
        }
    }

    #[test]
    fn a_page_s_writes_are_those_of_one_installment_at_a_time() {
        on_both(|db| {
            let seqs = due_installments(db, &[DAY, DAY, DAY]);
            // The second is attempted already that date (by another engine).
            assert!(
                insert_attempt(db, &attempt(seqs[1], "first"))
                    .unwrap()
                    .is_some()
            );
            let page: Vec<NewAttempt<'_>> = seqs
                .iter()
                .zip(["k-0", "k-1", "k-2"])
                .map(|(seq, key)| attempt(*seq, key))
                .collect();
            let inserted = insert_attempts(db, &page).unwrap();
            assert!(inserted[0].is_some() && inserted[2].is_some());
            assert_eq!(inserted[1], None);
            let (paid_attempt, rejected_attempt) = (inserted[0].unwrap(), inserted[2].unwrap());

            let charges = [
                BeginCharge {
                    installment_seq: seqs[0],
                    date: DAY,
                    method_id: 3,
                    charged_clp: None,
                },
                BeginCharge {
                    installment_seq: seqs[2],
                    date: DAY,
                    method_id: 3,
                    charged_clp: Some("39123"),
                },
            ];
            let mut begun = begin_charges(db, &charges, "t1").unwrap();
            begun.sort_by_key(|i| i.seq);
            assert_eq!(begun.len(), 2);
            for row in &begun {
                assert_eq!(row.state, InstallmentState::InProcess);
                assert_eq!((row.attempts, row.state_at.as_str()), (1, "t1"));
                assert_eq!(row.last_attempt_date.as_deref(), Some(DAY));
                assert_eq!(row.payment_method_id, Some(3));
            }
            assert_eq!(begun[1].charged_clp.as_deref(), Some("39123"));
            let mut stored = installments::by_seqs(db, &[seqs[0], seqs[2]]).unwrap();
            stored.sort_by_key(|i| i.seq);
            assert_eq!(begun, stored, "the rows answered are the rows stored");

            let outcomes = [
                (
                    seqs[0],
                    InstallmentOutcome::Paid {
                        authorization_code: "A-1",
                    },
                ),
                (
                    seqs[2],
                    InstallmentOutcome::Rejected {
                        code: "INSUFFICIENT_FUNDS",
                        message: "fondos insuficientes",
                        next_retry_date: Some("2026-12-02"),
                        first_rejected_date: DAY,
                    },
                ),
            ];
            let mut decided = record_outcomes(db, &outcomes, "t2").unwrap();
            decided.sort_by_key(|i| i.seq);
            let (paid, rejected) = (&decided[0], &decided[1]);
            assert_eq!(paid.state, InstallmentState::Paid);
            assert_eq!(paid.authorization_code.as_deref(), Some("A-1"));
            assert_eq!(paid.rejection_code, None);
            assert_eq!(rejected.state, InstallmentState::Rejected);
            assert_eq!(
                rejected.rejection_code.as_deref(),
                Some("INSUFFICIENT_FUNDS")
            );
            assert_eq!(rejected.next_retry_date.as_deref(), Some("2026-12-02"));
            assert!(rejected.retry_scheduled);
            assert_eq!(rejected.first_rejected_date.as_deref(), Some(DAY));
            assert_eq!(rejected.authorization_code, None);
            assert_eq!(&installments::by_seq(db, seqs[2]).unwrap(), rejected);

            // Only the attempt still IN_PROCESS is taken.
            finish_attempts(
                db,
                &[FinishedAttempt {
                    seq: paid_attempt,
                    state: "PAID",
                    authorization_code: Some("A-1"),
                    rejection_code: None,
                }],
                "t3",
            )
            .unwrap();
            let taken =
                take_open_attempts(db, &[paid_attempt, rejected_attempt], "IN_PROCESS").unwrap();
            assert_eq!(taken, [rejected_attempt].into_iter().collect());
            let finished: (String, Option<String>, Option<String>) = db
                .query_row(
                    "SELECT state, authorization_code, finished_at FROM charge_attempts
                     WHERE seq = ?1",
                    &params![paid_attempt],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            assert_eq!(
                finished,
                ("PAID".into(), Some("A-1".into()), Some("t3".into()))
            );
        });
    }

    #[test]
    fn due_installments_are_paged_in_due_date_order_until_attempted() {
        on_both(|db| {
            let seqs = due_installments(db, &["2026-11-30", DAY, DAY, "2026-12-02"]);
            assert_eq!(count_due(db, DAY, DAY).unwrap(), 3);
            // The horizon reaches the 2nd only for commerces that charge on the day before.
            assert_eq!(count_due(db, DAY, "2026-12-02").unwrap(), 3);
            let first = due_page(db, DAY, DAY, None, 2).unwrap();
            assert_eq!(
                first,
                [
                    (seqs[0], "2026-11-30".to_string()),
                    (seqs[1], DAY.to_string())
                ]
            );
            let rest = due_page(db, DAY, DAY, Some((DAY, seqs[1])), 2).unwrap();
            assert_eq!(rest, [(seqs[2], DAY.to_string())]);

            let key = "ins-0-2026-12-01";
            let claimed = insert_attempt(db, &attempt(seqs[0], key)).unwrap();
            assert!(claimed.is_some());
            // The installment's claim for the date is taken: a second attempt is refused.
            assert_eq!(
                insert_attempt(db, &attempt(seqs[0], "other-key")).unwrap(),
                None
            );
            begin_charge(db, seqs[0], DAY, 3, None, "t1").unwrap();
            assert_eq!(count_due(db, DAY, DAY).unwrap(), 2);

            let open = open_attempts(db, "IN_PROCESS", None).unwrap();
            assert_eq!(open.len(), 1);
            assert_eq!(
                (open[0].seq, open[0].idempotency_key.as_str()),
                (claimed.unwrap(), key)
            );
            assert!(
                open_attempts(db, "IN_PROCESS", Some(DAY))
                    .unwrap()
                    .is_empty()
            );
            assert_eq!(
                open_attempts(db, "IN_PROCESS", Some("2026-12-02"))
                    .unwrap()
                    .len(),
                1
            );

            finish_attempt(db, open[0].seq, "REJECTED", None, Some("51"), "t2").unwrap();
            record_outcome(
                db,
                seqs[0],
                &InstallmentOutcome::Rejected {
                    code: "51",
                    message: "Fondos insuficientes",
                    next_retry_date: Some("2026-12-03"),
                    first_rejected_date: DAY,
                },
                "t2",
            )
            .unwrap();
            assert!(open_attempts(db, "IN_PROCESS", None).unwrap().is_empty());
            let rejected = installments::by_seq(db, seqs[0]).unwrap();
            assert_eq!(rejected.state, InstallmentState::Rejected);
            assert!(rejected.retry_scheduled);
            // The retry falls due on its date, in the retry branch.
            let on_retry = due_page(db, "2026-12-03", "2026-12-03", None, 10).unwrap();
            assert_eq!(on_retry.first(), Some(&(seqs[0], "2026-11-30".to_string())));
            assert_eq!(
                retry_rejected_on(db, rejected.mandate_seq, "2026-12-02").unwrap(),
                1
            );
            assert_eq!(
                installments::by_seq(db, seqs[0])
                    .unwrap()
                    .next_retry_date
                    .as_deref(),
                Some("2026-12-02")
            );

            set_forced_outcome(db, seqs[1], Some("PAID")).unwrap();
            record_outcome(
                db,
                seqs[1],
                &InstallmentOutcome::Paid {
                    authorization_code: "AUT-1",
                },
                "t3",
            )
            .unwrap();
            assert_eq!(
                installments::by_seq(db, seqs[1]).unwrap().state,
                InstallmentState::Paid
            );
            assert!(!paid_with_current_instrument(db, seqs[1], "AUT-1").unwrap());
            assert_eq!(
                installment_counts(db, rejected.mandate_seq, DAY).unwrap(),
                (4, 1)
            );
        });
    }

    #[test]
    fn a_previous_rule_commerce_is_charged_up_to_the_horizon() {
        on_both(|db| {
            let seqs = due_installments(db, &[DAY, "2026-12-02", "2026-12-03"]);
            let commerce_id: i64 = db
                .query_row(
                    "SELECT commerce_id FROM installments WHERE seq = ?1",
                    &params![seqs[0]],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(count_due(db, DAY, "2026-12-02").unwrap(), 1);
            crate::calendar::set_charging_rule(
                db,
                commerce_id,
                mandato_core::domain::holidays::ChargingRule::Previous,
            )
            .unwrap();
            assert_eq!(count_due(db, DAY, "2026-12-02").unwrap(), 2);
            let page = due_page(db, DAY, "2026-12-02", None, 10).unwrap();
            assert_eq!(
                page.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
                &seqs[..2]
            );
        });
    }

    #[test]
    fn runs_uf_values_and_policies_are_kept() {
        on_both(|db| {
            let run = insert_run(db, DAY, "MANUAL", "t0").unwrap();
            let counts = RunCounts {
                total: 3,
                done: 3,
                paid: 2,
                rejected: 1,
                ..RunCounts::default()
            };
            update_run(db, run, &counts, None).unwrap();
            assert_eq!(runs(db, 5).unwrap()[0].state, "RUNNING");
            assert_eq!(last_run_date(db).unwrap(), None);
            let second = insert_run(db, "2026-12-02", "SCHEDULE", "t1").unwrap();
            assert_eq!(interrupt_running(db).unwrap(), 2);
            update_run(db, second, &counts, Some("t2")).unwrap();
            let listed = runs(db, 5).unwrap();
            assert_eq!(
                (listed[0].seq, listed[0].state.as_str()),
                (second, "FINISHED")
            );
            assert_eq!(listed[0].counts, counts);
            assert_eq!(listed[1].state, "INTERRUPTED");
            assert_eq!(last_run_date(db).unwrap().as_deref(), Some("2026-12-02"));

            assert_eq!(uf_coverage(db).unwrap(), (0, None, None));
            upsert_uf(db, DAY, "39000.10").unwrap();
            upsert_uf(db, "2026-12-02", "39001.00").unwrap();
            upsert_uf(db, DAY, "39000.50").unwrap();
            assert_eq!(uf_value(db, DAY).unwrap().as_deref(), Some("39000.50"));
            assert_eq!(uf_value(db, "2026-12-03").unwrap(), None);
            assert_eq!(uf_values(db, None, 10).unwrap().len(), 2);
            assert_eq!(
                uf_values(db, Some("2026-12-02"), 10).unwrap(),
                [(DAY.to_string(), "39000.50".to_string())]
            );
            assert_eq!(
                uf_coverage(db).unwrap(),
                (2, Some(DAY.to_string()), Some("2026-12-02".to_string()))
            );

            let m = mandate(db, "m-1");
            assert_eq!(retry_policy(db, m.commerce_id).unwrap(), None);
            assert_eq!(retry_policy(db, m.commerce_id + 1).unwrap(), None);
            assert!(active_permanent_mandates(db).unwrap().is_empty());
        });
    }

    /// What one engine's run does with a page: the attempt rows it wins, in its transaction.
    fn claim_page(url: &str, ready: &Barrier) -> Vec<i64> {
        let pg = crate::db::PgConn::connect(url).unwrap();
        pg.transaction(|db| {
            let page = due_page(db, DAY, DAY, None, 100)?;
            // Both engines have read the same due installments before either claims one.
            ready.wait();
            let mut won = Vec::new();
            for (seq, _) in page {
                let key = format!("ins-{seq}-{DAY}");
                if insert_attempt(db, &attempt(seq, &key))?.is_some() {
                    begin_charge(db, seq, DAY, 3, None, "t1")?;
                    won.push(seq);
                }
            }
            Ok::<_, db::Error>(won)
        })
        .unwrap()
    }

    #[test]
    fn two_engines_charging_the_same_date_never_claim_the_same_installment() {
        let database = pg_test::database();
        let seqs = database
            .connect()
            .transaction(|db| Ok::<_, db::Error>(due_installments(db, &[DAY; 6])))
            .unwrap();
        let ready = Arc::new(Barrier::new(2));
        let engines: Vec<_> = (0..2)
            .map(|_| {
                let (url, ready) = (database.url().to_string(), Arc::clone(&ready));
                std::thread::spawn(move || claim_page(&url, &ready))
            })
            .collect();
        let claims: Vec<Vec<i64>> = engines.into_iter().map(|e| e.join().unwrap()).collect();
        let mut all: Vec<i64> = claims.concat();
        all.sort_unstable();
        assert_eq!(
            all, seqs,
            "each installment claimed exactly once: {claims:?}"
        );
        let attempts = database
            .connect()
            .transaction(|db| {
                db.query_row("SELECT count(*) FROM charge_attempts", &params![], |r| {
                    r.get::<i64>(0)
                })
            })
            .unwrap();
        assert_eq!(attempts, 6);
    }

    #[test]
    fn an_attempt_two_engines_settle_at_once_is_settled_once() {
        let database = pg_test::database();
        let attempt_seq = database
            .connect()
            .transaction(|db| {
                let seqs = due_installments(db, &[DAY]);
                let seq = insert_attempt(db, &attempt(seqs[0], "ins-0-2026-12-01"))?.unwrap();
                Ok::<_, db::Error>(seq)
            })
            .unwrap();
        // The first engine takes it and, before committing its outcome, the second tries.
        let first = database.connect();
        let second = first
            .transaction(|db| {
                assert!(take_open_attempt(db, attempt_seq, "IN_PROCESS")?);
                let url = database.url().to_string();
                let second = std::thread::spawn(move || {
                    db::PgConn::connect(&url)
                        .unwrap()
                        .transaction(|db| take_open_attempt(db, attempt_seq, "IN_PROCESS"))
                        .unwrap()
                });
                // The second waits on the row until the first commits.
                std::thread::sleep(std::time::Duration::from_millis(300));
                assert!(!second.is_finished());
                finish_attempt(db, attempt_seq, "PAID", Some("AUTH-1"), None, "t2")?;
                Ok::<_, db::Error>(second)
            })
            .unwrap();
        assert!(!second.join().unwrap(), "the outcome is applied once");
        on_both(|db| {
            let seqs = due_installments(db, &[DAY]);
            let seq = insert_attempt(db, &attempt(seqs[0], "k")).unwrap().unwrap();
            assert!(take_open_attempt(db, seq, "IN_PROCESS").unwrap());
            assert_eq!(
                in_process_created_before(db, "2026-12-01T12:00:00.001Z")
                    .unwrap()
                    .iter()
                    .map(|a| a.seq)
                    .collect::<Vec<_>>(),
                [seq]
            );
            assert!(
                in_process_created_before(db, "2026-12-01T12:00:00.000Z")
                    .unwrap()
                    .is_empty()
            );
            finish_attempt(db, seq, "REJECTED", None, Some("CARD_DECLINED"), "t2").unwrap();
            assert!(!take_open_attempt(db, seq, "IN_PROCESS").unwrap());
            assert!(
                in_process_created_before(db, "2026-12-02T00:00:00.000Z")
                    .unwrap()
                    .is_empty()
            );
        });
    }
}
