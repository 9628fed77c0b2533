//! What staff read of money not collected: the mandates with REJECTED installments (declined
//! for good or still being retried), the attempts a charging run made, and every charge and
//! payment of one customer's installments.
//!
//! Each list is keyset-paged like the other staff lists (`staff_views`): a page asks for the
//! rows after the last one it showed, never for an offset.

use super::db::{self, Db, Row, params};
use super::staff_views::Keyset;
use mandato_core::domain::state::InstallmentState;

// Past due.

#[derive(Debug, Default)]
pub struct PastDueFilter {
    pub commerce_id: Option<i64>,
    /// The last row shown: its latest rejection time and mandate seq.
    pub after: Option<Keyset>,
    pub limit: i64,
}

/// A mandate with at least one REJECTED installment.
#[derive(Debug, Clone)]
pub struct PastDueMandate {
    pub seq: i64,
    pub id: String,
    pub external_id: String,
    pub name: String,
    pub state: i64,
    pub commerce_code: String,
    pub customer_id: String,
    pub customer_name: String,
    pub customer_rut: String,
    /// When the latest of its installments was rejected (the list's order, newest first).
    pub last_rejected_at: String,
    pub rejected: i64,
}

/// A REJECTED installment of a past-due mandate.
#[derive(Debug, Clone)]
pub struct RejectedInstallment {
    pub mandate_seq: i64,
    pub id: String,
    pub external_id: String,
    pub amount: String,
    pub currency: String,
    pub due_date: String,
    pub rejected_at: String,
    pub attempts: i64,
    pub rejection_code: Option<String>,
    pub rejection_message: Option<String>,
    pub next_retry_date: Option<String>,
    pub retry_scheduled: bool,
}

/// The REJECTED installments of every mandate, one row per mandate, by the latest rejection
/// (the most recent first); `mandato trigger`'s throwaway mandates are left out. The rejected
/// installments are few and read through `installments_due` (state, due date).
const PAST_DUE_FROM: &str = "FROM (SELECT mandate_seq, max(state_at) AS last_at, count(*) AS n
          FROM installments
          WHERE state = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR commerce_id = ?2)
          GROUP BY mandate_seq) AS r
     JOIN mandates m ON m.seq = r.mandate_seq
     JOIN customers c ON c.seq = m.customer_seq
     JOIN commerces co ON co.id = m.commerce_id
     WHERE m.sandbox_trigger = 0";

pub fn past_due_page<'c>(
    db: impl Into<Db<'c>>,
    filter: &PastDueFilter,
) -> db::Result<Vec<PastDueMandate>> {
    let (after_at, after_seq) = match &filter.after {
        Some(k) => (Some(k.key.as_str()), k.seq),
        None => (None, 0),
    };
    db.into().query_map(
        &format!(
            "SELECT m.seq, m.id, m.external_id, m.name, m.state, co.code, c.id,
                    c.first_name || ' ' || c.last_name
                        || coalesce(' ' || c.second_last_name, ''),
                    c.rut, r.last_at, r.n
             {PAST_DUE_FROM}
               AND (CAST(?3 AS TEXT) IS NULL OR r.last_at < ?3
                    OR (r.last_at = ?3 AND m.seq < ?4))
             ORDER BY r.last_at DESC, m.seq DESC LIMIT ?5"
        ),
        &params![
            InstallmentState::Rejected.id(),
            filter.commerce_id,
            after_at,
            after_seq,
            filter.limit
        ],
        |r| {
            Ok(PastDueMandate {
                seq: r.get(0)?,
                id: r.get(1)?,
                external_id: r.get(2)?,
                name: r.get(3)?,
                state: r.get(4)?,
                commerce_code: r.get(5)?,
                customer_id: r.get(6)?,
                customer_name: r.get(7)?,
                customer_rut: r.get(8)?,
                last_rejected_at: r.get(9)?,
                rejected: r.get(10)?,
            })
        },
    )
}

/// How many mandates the past-due list holds, every page together.
pub fn count_past_due<'c>(db: impl Into<Db<'c>>, commerce_id: Option<i64>) -> db::Result<i64> {
    db.into().query_row(
        &format!("SELECT count(*) {PAST_DUE_FROM}"),
        &params![InstallmentState::Rejected.id(), commerce_id],
        |r| r.get(0),
    )
}

/// The REJECTED installments of these mandates, by mandate and due date.
pub fn rejected_installments<'c>(
    db: impl Into<Db<'c>>,
    mandate_seqs: &[i64],
) -> db::Result<Vec<RejectedInstallment>> {
    if mandate_seqs.is_empty() {
        return Ok(Vec::new());
    }
    // The seqs are integers read from the database, so they are written into the text.
    let seqs: Vec<String> = mandate_seqs.iter().map(i64::to_string).collect();
    db.into().query_map(
        &format!(
            "SELECT mandate_seq, id, external_id, amount, currency, due_date, state_at, attempts,
                    rejection_code, rejection_message, next_retry_date, retry_scheduled
             FROM installments
             WHERE state = ?1 AND mandate_seq IN ({})
             ORDER BY mandate_seq, due_date, seq",
            seqs.join(", ")
        ),
        &params![InstallmentState::Rejected.id()],
        |r| {
            Ok(RejectedInstallment {
                mandate_seq: r.get(0)?,
                id: r.get(1)?,
                external_id: r.get(2)?,
                amount: r.get(3)?,
                currency: r.get(4)?,
                due_date: r.get(5)?,
                rejected_at: r.get(6)?,
                attempts: r.get(7)?,
                rejection_code: r.get(8)?,
                rejection_message: r.get(9)?,
                next_retry_date: r.get(10)?,
                retry_scheduled: r.get::<i64>(11)? != 0,
            })
        },
    )
}

// A charging run's attempts.

/// One attempt a run made, with what identifies its installment on a list.
#[derive(Debug, Clone)]
pub struct RunAttempt {
    pub seq: i64,
    pub id: String,
    pub attempt_no: i64,
    pub business_date: String,
    /// What was charged (pesos for a UF installment).
    pub amount: String,
    pub currency: String,
    /// IN_PROCESS, IN_VALIDATION, PAID or REJECTED: where the attempt stands now (a bank
    /// debit IN_VALIDATION at the run is settled on the same row later).
    pub state: String,
    pub authorization_code: Option<String>,
    pub rejection_code: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub installment_id: String,
    pub installment_external_id: String,
    pub installment_amount: String,
    pub installment_currency: String,
    pub installment_state: i64,
    pub next_retry_date: Option<String>,
    pub retry_scheduled: bool,
    pub mandate_id: String,
    pub mandate_external_id: String,
    pub mandate_name: String,
    pub customer_id: String,
    pub customer_name: String,
    pub commerce_code: String,
    /// The UF value of the attempt's date, for a UF installment.
    pub uf_value: Option<String>,
}

/// `(state, count)` of the attempts a run made, as they stand now.
pub fn run_attempt_counts<'c>(
    db: impl Into<Db<'c>>,
    run_seq: i64,
) -> db::Result<Vec<(String, i64)>> {
    db.into().query_map(
        "SELECT state, count(*) FROM charge_attempts WHERE run_seq = ?1 GROUP BY state
         ORDER BY state",
        &params![run_seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// A page of a run's attempts in the order it made them, after the attempt `after` (a seq),
/// only those in `state` when given.
pub fn run_attempts<'c>(
    db: impl Into<Db<'c>>,
    run_seq: i64,
    state: Option<&str>,
    after: Option<i64>,
    limit: i64,
) -> db::Result<Vec<RunAttempt>> {
    db.into().query_map(
        "SELECT a.seq, a.id, a.attempt_no, a.business_date, a.amount, a.currency, a.state,
                a.authorization_code, a.rejection_code, a.created_at, a.finished_at,
                i.id, i.external_id, i.amount, i.currency, i.state, i.next_retry_date,
                i.retry_scheduled, m.id, m.external_id, m.name, c.id,
                c.first_name || ' ' || c.last_name, co.code,
                (SELECT u.value FROM uf_values u WHERE u.date = a.business_date AND i.currency = 'CLF')
         FROM charge_attempts a
         JOIN installments i ON i.seq = a.installment_seq
         JOIN mandates m ON m.seq = i.mandate_seq
         JOIN customers c ON c.seq = m.customer_seq
         JOIN commerces co ON co.id = m.commerce_id
         WHERE a.run_seq = ?1 AND (CAST(?2 AS TEXT) IS NULL OR a.state = ?2) AND a.seq > ?3
         ORDER BY a.seq LIMIT ?4",
        &params![run_seq, state, after.unwrap_or(0), limit],
        |r| {
            Ok(RunAttempt {
                seq: r.get(0)?,
                id: r.get(1)?,
                attempt_no: r.get(2)?,
                business_date: r.get(3)?,
                amount: r.get(4)?,
                currency: r.get(5)?,
                state: r.get(6)?,
                authorization_code: r.get(7)?,
                rejection_code: r.get(8)?,
                created_at: r.get(9)?,
                finished_at: r.get(10)?,
                installment_id: r.get(11)?,
                installment_external_id: r.get(12)?,
                installment_amount: r.get(13)?,
                installment_currency: r.get(14)?,
                installment_state: r.get(15)?,
                next_retry_date: r.get(16)?,
                retry_scheduled: r.get::<i64>(17)? != 0,
                mandate_id: r.get(18)?,
                mandate_external_id: r.get(19)?,
                mandate_name: r.get(20)?,
                customer_id: r.get(21)?,
                customer_name: r.get(22)?,
                commerce_code: r.get(23)?,
                uf_value: r.get(24)?,
            })
        },
    )
}

// A customer's payments.

/// Where a line of a customer's payment history comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentSource {
    /// A charge attempt of the charging engine (card or bank debit).
    Attempt,
    /// A payment the merchant or staff recorded, or a refund: the ledger's entry.
    Ledger,
    /// A payment on the customer's portal (Webpay).
    Portal,
}

impl PaymentSource {
    /// The letter the query tags its rows with; the history's order breaks ties on it.
    pub fn letter(self) -> &'static str {
        match self {
            PaymentSource::Attempt => "A",
            PaymentSource::Ledger => "L",
            PaymentSource::Portal => "W",
        }
    }

    pub fn from_letter(letter: &str) -> Option<PaymentSource> {
        match letter {
            "A" => Some(PaymentSource::Attempt),
            "L" => Some(PaymentSource::Ledger),
            "W" => Some(PaymentSource::Portal),
            _ => None,
        }
    }
}

/// One charge or payment of an installment of a customer.
#[derive(Debug, Clone)]
pub struct PaymentLine {
    pub at: String,
    pub source: PaymentSource,
    pub seq: i64,
    /// pay_... of an attempt, led_... of a ledger entry, the buy order of a portal payment.
    pub reference: String,
    /// The business date, when the row has one (attempts, ledger entries).
    pub business_date: Option<String>,
    /// What was charged or paid (pesos for a UF installment; negative for a refund).
    pub amount: String,
    pub currency: String,
    /// Attempts: IN_PROCESS, IN_VALIDATION, PAID, REJECTED. Ledger: MANUAL_PAYMENT or
    /// REVERSAL. Portal: STARTED, APPROVED, REFUSED, ABANDONED, REFUNDED.
    pub outcome: String,
    pub rejection_code: Option<String>,
    pub authorization_code: Option<String>,
    /// The payment method's wire id (attempts: the mandate's instrument).
    pub method_id: Option<i64>,
    /// The ledger's payment method name (`MANUAL`, `CREDIT_CARD`, ...).
    pub method: Option<String>,
    pub installment_id: String,
    pub installment_external_id: String,
    pub installment_amount: String,
    pub installment_currency: String,
    pub mandate_id: String,
    pub mandate_external_id: String,
    pub mandate_name: String,
    pub uf_value: Option<String>,
}

/// Every charge attempt, portal payment, recorded payment and refund of the customer's
/// installments, as one list with the columns they share. Attempts and portal payments are
/// found through the customer's mandates (`mandates_by_customer`, then each table's index by
/// installment or mandate); ledger entries through the commerce's recorded payments and
/// refunds (`ledger_entries_by_kind`), which are few. Charge entries of the ledger are the
/// paid attempts and portal payments already listed, so they are left out.
fn payments_union(customer: &str, commerce: &str) -> String {
    format!(
        "SELECT a.created_at AS at, 'A' AS src, a.seq AS seq, a.id AS ref,
                a.business_date AS day, a.amount AS amount, a.currency AS currency,
                a.state AS outcome, a.rejection_code AS rejection_code,
                a.authorization_code AS authorization_code,
                (SELECT n.method_id FROM instruments n WHERE n.mandate_seq = i.mandate_seq) AS method_id,
                CAST(NULL AS TEXT) AS method, a.installment_seq AS installment_seq
         FROM mandates m
         JOIN installments i ON i.mandate_seq = m.seq
         JOIN charge_attempts a ON a.installment_seq = i.seq
         WHERE m.customer_seq = {customer}
         UNION ALL
         SELECT w.created_at, 'W', w.seq, w.buy_order, CAST(NULL AS TEXT),
                CAST(w.amount AS TEXT), 'CLP', w.state, CAST(NULL AS TEXT),
                w.authorization_code, CAST(NULL AS BIGINT), 'WEBPAY', w.installment_seq
         FROM mandates m
         JOIN webpay_payments w ON w.mandate_seq = m.seq
         WHERE m.customer_seq = {customer}
         UNION ALL
         SELECT l.created_at, 'L', l.seq, l.id, l.business_date, l.amount, l.currency, l.kind,
                CAST(NULL AS TEXT), l.acquirer_reference, CAST(NULL AS BIGINT),
                l.payment_method, i.seq
         FROM ledger_entries l
         JOIN installments i ON i.id = l.installment_id
         WHERE l.commerce_id = {commerce} AND l.kind IN ('MANUAL_PAYMENT', 'REVERSAL')
           AND l.mandate_id IN (SELECT id FROM mandates WHERE customer_seq = {customer})"
    )
}

/// A page of a customer's payment history, newest first (by the time each was recorded),
/// after `after` (its time, source letter and seq).
pub fn customer_payments<'c>(
    db: impl Into<Db<'c>>,
    customer_seq: i64,
    commerce_id: i64,
    after: Option<(&str, PaymentSource, i64)>,
    limit: i64,
) -> db::Result<Vec<PaymentLine>> {
    let (after_at, after_src, after_seq) = match after {
        Some((at, src, seq)) => (Some(at), src.letter(), seq),
        None => (None, "", 0),
    };
    let union = payments_union("?1", "?2");
    db.into().query_map(
        &format!(
            "SELECT p.at, p.src, p.seq, p.ref, p.day, p.amount, p.currency, p.outcome,
                    p.rejection_code, p.authorization_code, p.method_id, p.method,
                    i.id, i.external_id, i.amount, i.currency, m.id, m.external_id, m.name,
                    (SELECT u.value FROM uf_values u WHERE u.date = p.day AND i.currency = 'CLF')
             FROM ({union}) AS p
             JOIN installments i ON i.seq = p.installment_seq
             JOIN mandates m ON m.seq = i.mandate_seq
             WHERE CAST(?3 AS TEXT) IS NULL OR p.at < ?3
                OR (p.at = ?3 AND (p.src < ?4 OR (p.src = ?4 AND p.seq < ?5)))
             ORDER BY p.at DESC, p.src DESC, p.seq DESC LIMIT ?6"
        ),
        &params![
            customer_seq,
            commerce_id,
            after_at,
            after_src,
            after_seq,
            limit
        ],
        payment_line,
    )
}

/// How many lines a customer's payment history has.
pub fn count_customer_payments<'c>(
    db: impl Into<Db<'c>>,
    customer_seq: i64,
    commerce_id: i64,
) -> db::Result<i64> {
    let union = payments_union("?1", "?2");
    db.into().query_row(
        &format!("SELECT count(*) FROM ({union}) AS p"),
        &params![customer_seq, commerce_id],
        |r| r.get(0),
    )
}

fn payment_line(r: &Row<'_>) -> db::Result<PaymentLine> {
    let letter: String = r.get(1)?;
    Ok(PaymentLine {
        at: r.get(0)?,
        source: PaymentSource::from_letter(&letter).unwrap_or(PaymentSource::Attempt),
        seq: r.get(2)?,
        reference: r.get(3)?,
        business_date: r.get(4)?,
        amount: r.get(5)?,
        currency: r.get(6)?,
        outcome: r.get(7)?,
        rejection_code: r.get(8)?,
        authorization_code: r.get(9)?,
        method_id: r.get(10)?,
        method: r.get(11)?,
        installment_id: r.get(12)?,
        installment_external_id: r.get(13)?,
        installment_amount: r.get(14)?,
        installment_currency: r.get(15)?,
        mandate_id: r.get(16)?,
        mandate_external_id: r.get(17)?,
        mandate_name: r.get(18)?,
        uf_value: r.get(19)?,
    })
}
