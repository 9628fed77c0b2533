//! The charging engine's tables: attempts (with their idempotency keys), runs, UF values, and
//! the installment columns the engine owns.

use rusqlite::{Connection, params};

use super::optional;
use crate::domain::date::Date;
use crate::domain::state::{InstallmentState, MandateState};

/// What makes an installment due on `?1`: PENDING ones of ACTIVE mandates due by then, and
/// REJECTED ones whose retry falls due; never one already attempted on `?1`. Two branches, each
/// on its own index (`installments_due`, and `installments_retry` for the few retries).
///
/// `horizon` names the parameter holding the last due date the run charges for commerces
/// whose rule is `PREVIOUS` (the weekend and holidays after the run's date, or `?1` itself):
/// the index range ends there, and the few days past `?1` are kept for those commerces only.
///
/// Dates compare as text, which is date order for the `YYYY-MM-DD` form every `Date` writes.
/// A row written before dates were bounded may hold a signed year (`+10000-12-01`), which sorts
/// below every such date; the lower bound `Date::MIN` keeps those out of every run (and it is a
/// bound on the same index, so it costs nothing).
fn due_branches(horizon: &str, pending_keyset: &str, retry_keyset: &str) -> [String; 2] {
    let min = Date::MIN;
    let pending = InstallmentState::Pending.id();
    let rejected = InstallmentState::Rejected.id();
    let active = MandateState::Active.id();
    let not_today = "(i.last_attempt_date IS NULL OR i.last_attempt_date < ?1)";
    [
        format!(
            "SELECT i.seq, i.due_date FROM installments i INDEXED BY installments_due
               JOIN mandates m ON m.seq = i.mandate_seq
             WHERE i.state = {pending} AND i.due_date >= '{min}' AND i.due_date <= {horizon}
               AND (i.due_date <= ?1 OR i.commerce_id IN
                     (SELECT id FROM commerces WHERE charging_rule = 'PREVIOUS'))
               AND m.state = {active} AND {not_today}
               {pending_keyset}"
        ),
        format!(
            "SELECT i.seq, i.due_date FROM installments i INDEXED BY installments_retry
               JOIN mandates m ON m.seq = i.mandate_seq
             WHERE i.state = {rejected} AND i.retry_scheduled = 1
               AND i.next_retry_date >= '{min}' AND i.next_retry_date <= ?1
               AND m.state = {active} AND {not_today} {retry_keyset}"
        ),
    ]
}

/// How many installments are due on `date` (see `due_page`).
pub fn count_due(conn: &Connection, date: &str, horizon: &str) -> rusqlite::Result<i64> {
    let [pending, retry] = due_branches("?2", "", "");
    conn.prepare_cached(&format!(
        "SELECT (SELECT count(*) FROM ({pending})) + (SELECT count(*) FROM ({retry}))"
    ))?
    .query_row([date, horizon], |r| r.get(0))
}

/// The next `limit` installments due on `date` after `after` (a due date and seq), in (due
/// date, seq) order, with their due dates: the run walks them page by page and never holds
/// them all. Every page is a few index seeks, wherever it starts. `horizon`: see `due_branches`.
pub fn due_page(
    conn: &Connection,
    date: &str,
    horizon: &str,
    after: Option<(&str, i64)>,
    limit: usize,
) -> rusqlite::Result<Vec<(i64, String)>> {
    // The keyset (due_date, seq) > (?2, ?3), split so that the index serves both halves: the
    // rest of the cursor's due date by seq, then the later dates.
    let [same_day, _] = due_branches("?5", "AND i.due_date = ?2 AND i.seq > ?3", "");
    let [later_days, retries] = due_branches(
        "?5",
        "AND i.due_date > ?2",
        "AND (i.due_date > ?2 OR (i.due_date = ?2 AND i.seq > ?3))",
    );
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT seq, due_date FROM ({same_day} ORDER BY i.seq LIMIT ?4)
         UNION ALL SELECT seq, due_date FROM ({later_days} ORDER BY i.due_date, i.seq LIMIT ?4)
         UNION ALL SELECT seq, due_date FROM ({retries} ORDER BY i.due_date, i.seq LIMIT ?4)
         ORDER BY 2, 1 LIMIT ?4"
    ))?;
    let (after_date, after_seq) = after.unwrap_or(("", 0));
    stmt.query_map(
        params![date, after_date, after_seq, limit as i64, horizon],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?
    .collect()
}

#[derive(Debug, Clone)]
pub struct OpenAttempt {
    pub seq: i64,
    pub installment_seq: i64,
    pub idempotency_key: String,
    pub business_date: String,
    pub amount: String,
    pub currency: String,
}

/// Attempts in `state` (IN_PROCESS: unfinished by a crash; IN_VALIDATION: awaiting the bank)
/// begun before `before_date` (or any date when `None`).
pub fn open_attempts(
    conn: &Connection,
    state: &str,
    before_date: Option<&str>,
) -> rusqlite::Result<Vec<OpenAttempt>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, installment_seq, idempotency_key, business_date, amount, currency FROM charge_attempts
         WHERE state = ?1 AND (?2 IS NULL OR business_date < ?2) ORDER BY seq",
    )?;
    stmt.query_map(params![state, before_date], |r| {
        Ok(OpenAttempt {
            seq: r.get(0)?,
            installment_seq: r.get(1)?,
            idempotency_key: r.get(2)?,
            business_date: r.get(3)?,
            amount: r.get(4)?,
            currency: r.get(5)?,
        })
    })?
    .collect()
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
pub fn insert_attempt(conn: &Connection, a: &NewAttempt<'_>) -> rusqlite::Result<Option<i64>> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO charge_attempts (id, installment_seq, run_seq, attempt_no, business_date,
                    idempotency_key, amount, currency, state, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'IN_PROCESS', ?9)
             ON CONFLICT DO NOTHING",
        )?
        .execute(params![
            crate::ids::new_id("pay"),
            a.installment_seq,
            a.run_seq,
            a.attempt_no,
            a.business_date,
            a.idempotency_key,
            a.amount,
            a.currency,
            a.now
        ])?;
    Ok((inserted == 1).then(|| conn.last_insert_rowid()))
}

pub fn finish_attempt(
    conn: &Connection,
    seq: i64,
    state: &str,
    authorization_code: Option<&str>,
    rejection_code: Option<&str>,
    now: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE charge_attempts SET state = ?2, authorization_code = ?3, rejection_code = ?4,
                finished_at = CASE WHEN ?2 IN ('PAID', 'REJECTED') THEN ?5 ELSE finished_at END
         WHERE seq = ?1",
    )?
    .execute(params![seq, state, authorization_code, rejection_code, now])?;
    Ok(())
}

/// The installment enters IN_PROCESS for an attempt on `date`.
pub fn begin_charge(
    conn: &Connection,
    installment_seq: i64,
    date: &str,
    method_id: i64,
    charged_clp: Option<&str>,
    now: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE installments SET state = ?2, state_at = ?3, attempts = attempts + 1,
                last_attempt_date = ?4, payment_method_id = ?5, charged_clp = ?6,
                retry_scheduled = 0, forced_outcome = NULL
         WHERE seq = ?1",
    )?
    .execute(params![
        installment_seq,
        InstallmentState::InProcess.id(),
        now,
        date,
        method_id,
        charged_clp
    ])?;
    Ok(())
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

pub fn record_outcome(
    conn: &Connection,
    installment_seq: i64,
    outcome: &InstallmentOutcome<'_>,
    now: &str,
) -> rusqlite::Result<()> {
    match outcome {
        InstallmentOutcome::Paid { authorization_code } => conn
            .prepare_cached(
                "UPDATE installments SET state = ?2, state_at = ?3, authorization_code = ?4,
                        rejection_code = NULL, rejection_message = NULL, retry_scheduled = 0,
                        next_retry_date = NULL
                 WHERE seq = ?1",
            )?
            .execute(params![
                installment_seq,
                InstallmentState::Paid.id(),
                now,
                authorization_code
            ])?,
        InstallmentOutcome::InValidation => conn
            .prepare_cached("UPDATE installments SET state = ?2, state_at = ?3 WHERE seq = ?1")?
            .execute(params![
                installment_seq,
                InstallmentState::InValidation.id(),
                now
            ])?,
        InstallmentOutcome::Rejected {
            code,
            message,
            next_retry_date,
            first_rejected_date,
        } => conn
            .prepare_cached(
                "UPDATE installments SET state = ?2, state_at = ?3, rejection_code = ?4,
                        rejection_message = ?5, next_retry_date = ?6, retry_scheduled = ?7,
                        first_rejected_date = ?8
                 WHERE seq = ?1",
            )?
            .execute(params![
                installment_seq,
                InstallmentState::Rejected.id(),
                now,
                code,
                message,
                next_retry_date,
                next_retry_date.is_some(),
                first_rejected_date
            ])?,
    };
    Ok(())
}

/// Sandbox: decides the next attempt's outcome (`None` clears it).
pub fn set_forced_outcome(
    conn: &Connection,
    installment_seq: i64,
    forced: Option<&str>,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE installments SET forced_outcome = ?2 WHERE seq = ?1",
        params![installment_seq, forced],
    )?;
    Ok(())
}

pub fn uf_value(conn: &Connection, date: &str) -> rusqlite::Result<Option<String>> {
    optional(
        conn.prepare_cached("SELECT value FROM uf_values WHERE date = ?1")?
            .query_row([date], |r| r.get(0)),
    )
}

pub fn upsert_uf(conn: &Connection, date: &str, value: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO uf_values (date, value) VALUES (?1, ?2) ON CONFLICT (date) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![date, value])?;
    Ok(())
}

/// Whether the charging engine made the payment with this authorization code using the
/// instrument the mandate holds now (not a portal card, a payment the merchant recorded, or a
/// card replaced since): one of its attempts, started after that instrument's enrolment, was
/// approved with it.
pub fn paid_with_current_instrument(
    conn: &Connection,
    installment_seq: i64,
    authorization_code: &str,
) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (
           SELECT 1 FROM charge_attempts a
             JOIN installments i ON i.seq = a.installment_seq
             JOIN instruments n ON n.mandate_seq = i.mandate_seq
           WHERE a.installment_seq = ?1 AND a.authorization_code = ?2
             AND a.created_at >= n.created_at)",
        params![installment_seq, authorization_code],
        |r| r.get(0),
    )
}

/// Schedules every REJECTED installment of a mandate for a retry on `date` (the customer gave
/// a new instrument, so even a hard decline of the old one is worth another attempt); their
/// first rejection date stays, so the retry policy counts from it afterwards. Returns how many.
pub fn retry_rejected_on(
    conn: &Connection,
    mandate_seq: i64,
    date: &str,
) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE installments SET retry_scheduled = 1, next_retry_date = ?2
         WHERE mandate_seq = ?1 AND state = ?3",
        params![mandate_seq, date, InstallmentState::Rejected.id()],
    )
}

/// UF values, newest date first, before `before` (exclusive) when given: `(date, value)`.
pub fn uf_values(
    conn: &Connection,
    before: Option<&str>,
    limit: i64,
) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT date, value FROM uf_values WHERE ?1 IS NULL OR date < ?1 ORDER BY date DESC LIMIT ?2",
    )?;
    stmt.query_map(params![before, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

/// How many UF values are known, and the first and last of their dates.
pub fn uf_coverage(conn: &Connection) -> rusqlite::Result<(i64, Option<String>, Option<String>)> {
    conn.query_row(
        "SELECT count(*), min(date), max(date) FROM uf_values",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// ACTIVE PERMANENT mandates, to keep their upcoming installments topped up.
pub fn active_permanent_mandates(conn: &Connection) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached("SELECT seq FROM mandates WHERE type = 2 AND state = ?1")?;
    stmt.query_map([MandateState::Active.id()], |r| r.get(0))?
        .collect()
}

/// How many installments a mandate has, and how many of them are due after `date`.
pub fn installment_counts(
    conn: &Connection,
    mandate_seq: i64,
    date: &str,
) -> rusqlite::Result<(i64, i64)> {
    conn.prepare_cached(
        "SELECT count(*), count(*) FILTER (WHERE due_date > ?2) FROM installments WHERE mandate_seq = ?1",
    )?
    .query_row(params![mandate_seq, date], |r| Ok((r.get(0)?, r.get(1)?)))
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

pub fn insert_run(
    conn: &Connection,
    date: &str,
    trigger: &str,
    now: &str,
) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO charge_runs (business_date, trigger, state, started_at) VALUES (?1, ?2, 'RUNNING', ?3)",
        params![date, trigger, now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn update_run(
    conn: &Connection,
    seq: i64,
    c: &RunCounts,
    finished_at: Option<&str>,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE charge_runs SET total = ?2, done = ?3, attempted = ?4, paid = ?5, rejected = ?6,
                in_validation = ?7, in_process = ?8, settled = ?9, waiting_uf = ?10,
                finished_at = ?11, state = CASE WHEN ?11 IS NULL THEN state ELSE 'FINISHED' END
         WHERE seq = ?1",
    )?
    .execute(params![
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
        finished_at
    ])?;
    Ok(())
}

/// Runs left RUNNING by a crash.
pub fn interrupt_running(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE charge_runs SET state = 'INTERRUPTED' WHERE state = 'RUNNING'",
        [],
    )
}

/// The latest business date with a finished run.
pub fn last_run_date(conn: &Connection) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT max(business_date) FROM charge_runs WHERE state = 'FINISHED'",
        [],
        |r| r.get(0),
    )
}

pub fn runs(conn: &Connection, limit: i64) -> rusqlite::Result<Vec<RunRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, business_date, trigger, state, started_at, finished_at, total, done, attempted, paid,
                rejected, in_validation, in_process, settled, waiting_uf
         FROM charge_runs ORDER BY seq DESC LIMIT ?1",
    )?;
    stmt.query_map([limit], |r| {
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
            },
        })
    })?
    .collect()
}

/// The retry policy of a commerce: days after the first rejection.
pub fn retry_policy(conn: &Connection, commerce_id: i64) -> rusqlite::Result<Option<String>> {
    Ok(optional(
        conn.prepare_cached("SELECT retry_policy FROM commerces WHERE id = ?1")?
            .query_row([commerce_id], |r| r.get::<_, Option<String>>(0)),
    )?
    .flatten())
}
