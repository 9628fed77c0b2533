//! Installments of mandates, and the receivables search across a commerce's mandates.

use std::str::FromStr;

use chrono::NaiveDate;
use rusqlite::{Connection, Row, params, params_from_iter, types::Value as SqlValue};
use rust_decimal::Decimal;
use serde_json::Value;

use super::optional;
use crate::domain::date::Date;
use crate::domain::money::{Currency, Money};
use crate::domain::state::InstallmentState;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct InstallmentRow {
    pub seq: i64,
    pub id: String,
    pub mandate_seq: i64,
    pub external_id: String,
    pub amount: Money,
    pub due_date: NaiveDate,
    pub state: InstallmentState,
    pub state_at: String,
    pub attempts: i64,
    pub payment_method_id: Option<i64>,
    pub authorization_code: Option<String>,
    pub rejection_code: Option<String>,
    pub rejection_message: Option<String>,
    pub payment: Option<Value>,
    /// Business date of the latest charge attempt.
    pub last_attempt_date: Option<String>,
    /// REJECTED with a soft decline: the business date of the next attempt.
    pub next_retry_date: Option<String>,
    pub retry_scheduled: bool,
    pub first_rejected_date: Option<String>,
    /// Sandbox: the decided outcome of the next attempt (JSON).
    pub forced_outcome: Option<String>,
    /// UF installments: the CLP amount of the latest charge.
    pub charged_clp: Option<String>,
}

pub struct NewInstallment {
    pub external_id: String,
    pub amount: Money,
    /// A `Date`, so the column only ever receives `YYYY-MM-DD` between 1900 and 9999: the
    /// charging run and every filter compare `due_date` as text, which orders as dates only then.
    pub due_date: Date,
}

const COLUMNS: &str = "seq, id, mandate_seq, external_id, amount, currency, due_date, state, \
    state_at, attempts, payment_method_id, authorization_code, rejection_code, rejection_message, payment, \
    last_attempt_date, next_retry_date, retry_scheduled, first_rejected_date, forced_outcome, charged_clp";
/// How many columns `from_row` reads; joined columns follow them.
const COLUMN_COUNT: usize = 21;

fn conversion(index: usize, message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, message.into())
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<InstallmentRow> {
    let amount: String = row.get(4)?;
    let currency: String = row.get(5)?;
    let due: String = row.get(6)?;
    let state: i64 = row.get(7)?;
    let payment: Option<String> = row.get(14)?;
    let currency =
        Currency::parse(&currency).ok_or_else(|| conversion(5, format!("currency {currency}")))?;
    let amount = Decimal::from_str(&amount)
        .ok()
        .and_then(|d| Money::from_decimal(d, currency).ok())
        .ok_or_else(|| conversion(4, format!("amount {amount}")))?;
    Ok(InstallmentRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        mandate_seq: row.get(2)?,
        external_id: row.get(3)?,
        amount,
        due_date: NaiveDate::from_str(&due).map_err(|e| conversion(6, e.to_string()))?,
        state: InstallmentState::from_id(state)
            .ok_or_else(|| conversion(7, format!("state {state}")))?,
        state_at: row.get(8)?,
        attempts: row.get(9)?,
        payment_method_id: row.get(10)?,
        authorization_code: row.get(11)?,
        rejection_code: row.get(12)?,
        rejection_message: row.get(13)?,
        payment: payment.and_then(|p| serde_json::from_str(&p).ok()),
        last_attempt_date: row.get(15)?,
        next_retry_date: row.get(16)?,
        retry_scheduled: row.get(17)?,
        first_rejected_date: row.get(18)?,
        forced_outcome: row.get(19)?,
        charged_clp: row.get(20)?,
    })
}

/// Adds installments to a mandate. An external id already used in the mandate is refused
/// (the caller's transaction then rolls back, so nothing is added).
pub fn insert_many(
    conn: &Connection,
    mandate_seq: i64,
    commerce_id: i64,
    items: &[NewInstallment],
    path_prefix: &str,
    now: &str,
) -> Result<Vec<InstallmentRow>> {
    // RETURNING hands back the stored row in the same step, rather than a lookup by seq per
    // installment; a conflicting external id inserts and returns nothing.
    let sql = format!(
        "INSERT INTO installments (id, mandate_seq, commerce_id, external_id, amount, currency,
                due_date, state, state_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
         ON CONFLICT (mandate_seq, external_id) DO NOTHING
         RETURNING {COLUMNS}"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let inserted = optional(stmt.query_row(
            params![
                crate::ids::new_id("ins"),
                mandate_seq,
                commerce_id,
                item.external_id,
                item.amount.amount().normalize().to_string(),
                item.amount.currency().code(),
                item.due_date.to_string(),
                InstallmentState::Pending.id(),
                now,
            ],
            from_row,
        ))?;
        let Some(row) = inserted else {
            return Err(Error::refused_at(
                "DUPLICATED_INSTALLMENT_ID",
                format!("{path_prefix}[{index}].id"),
                format!(
                    "installment id {} already exists in this mandate",
                    item.external_id
                ),
            ));
        };
        rows.push(row);
    }
    Ok(rows)
}

pub fn by_seq(conn: &Connection, seq: i64) -> rusqlite::Result<InstallmentRow> {
    let sql = format!("SELECT {COLUMNS} FROM installments WHERE seq = ?1");
    conn.prepare_cached(&sql)?.query_row([seq], from_row)
}

/// Every installment of a mandate, by due date.
pub fn for_mandate(conn: &Connection, mandate_seq: i64) -> rusqlite::Result<Vec<InstallmentRow>> {
    let sql =
        format!("SELECT {COLUMNS} FROM installments WHERE mandate_seq = ?1 ORDER BY due_date, seq");
    let mut stmt = conn.prepare_cached(&sql)?;
    stmt.query_map([mandate_seq], from_row)?.collect()
}

/// How many installments a mandate has, and how many of them are not settled (PAID,
/// ANNULLED or REVERSED).
pub fn unsettled_count(conn: &Connection, mandate_seq: i64) -> rusqlite::Result<(i64, i64)> {
    let settled: Vec<String> = InstallmentState::ALL
        .iter()
        .filter(|s| s.is_settled())
        .map(|s| s.id().to_string())
        .collect();
    conn.prepare_cached(&format!(
        "SELECT count(*), count(*) FILTER (WHERE state NOT IN ({})) FROM installments
         WHERE mandate_seq = ?1",
        settled.join(", ")
    ))?
    .query_row([mandate_seq], |r| Ok((r.get(0)?, r.get(1)?)))
}

/// Which installments of a mandate a request names: by the merchant's ids or by ours.
pub enum InstallmentRefs<'a> {
    External(&'a [String]),
    Internal(&'a [String]),
}

/// Finds each named installment of the mandate, in the order named; `Err(index)` is the first
/// one that does not exist in this mandate.
pub fn find_in_mandate(
    conn: &Connection,
    mandate_seq: i64,
    refs: &InstallmentRefs<'_>,
) -> Result<std::result::Result<Vec<InstallmentRow>, usize>> {
    let (column, ids) = match refs {
        InstallmentRefs::External(ids) => ("external_id", ids),
        InstallmentRefs::Internal(ids) => ("id", ids),
    };
    let sql =
        format!("SELECT {COLUMNS} FROM installments WHERE mandate_seq = ?1 AND {column} = ?2");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = Vec::with_capacity(ids.len());
    for (index, id) in ids.iter().enumerate() {
        match super::optional(stmt.query_row(params![mandate_seq, id], from_row))? {
            Some(row) => rows.push(row),
            None => return Ok(Err(index)),
        }
    }
    Ok(Ok(rows))
}

/// What a state change writes besides the state itself.
#[derive(Default)]
pub struct StateChange<'a> {
    pub payment: Option<&'a Value>,
    pub authorization_code: Option<&'a str>,
    pub payment_method_id: Option<i64>,
}

pub fn set_state(
    conn: &Connection,
    seq: i64,
    state: InstallmentState,
    at: &str,
    change: &StateChange<'_>,
) -> Result<InstallmentRow> {
    // Only a REJECTED installment can be waiting for a retry: paid, annulled or reversed ones
    // drop the pending retry so that neither the engine nor their events announce one.
    let keeps_retry = state == InstallmentState::Rejected;
    conn.prepare_cached(
        "UPDATE installments SET state = ?2, state_at = ?3,
                payment = COALESCE(?4, payment),
                authorization_code = COALESCE(?5, authorization_code),
                payment_method_id = COALESCE(?6, payment_method_id),
                retry_scheduled = CASE WHEN ?7 THEN retry_scheduled ELSE 0 END,
                next_retry_date = CASE WHEN ?7 THEN next_retry_date ELSE NULL END
         WHERE seq = ?1",
    )?
    .execute(params![
        seq,
        state.id(),
        at,
        change.payment.map(serde_json::to_string).transpose()?,
        change.authorization_code,
        change.payment_method_id,
        keeps_retry,
    ])?;
    Ok(by_seq(conn, seq)?)
}

/// The filters of `GET /receivables`, already validated.
#[derive(Debug, Default)]
pub struct ReceivablesFilter {
    pub states: Vec<InstallmentState>,
    pub mandate_external_id: Option<String>,
    pub mandate_internal_id: Option<String>,
    pub user_id: Option<String>,
    pub internal_user_id: Option<String>,
    /// `Date`s, so they bind as `YYYY-MM-DD` text and compare with `due_date` as dates.
    pub due_from: Option<Date>,
    pub due_to: Option<Date>,
    pub updated_from: Option<String>,
    pub updated_to: Option<String>,
    /// Only installments created after this one (the cursor).
    pub after_seq: i64,
    pub limit: i64,
}

pub struct Receivable {
    pub installment: InstallmentRow,
    pub mandate_id: String,
    pub mandate_external_id: String,
    pub mandate_type_id: i64,
    pub customer_id: String,
    pub customer_user_id: String,
}

/// Installments across the commerce's mandates in creation order. Ordering by the row's
/// creation sequence is what makes the keyset cursor safe: rows added while a client pages
/// land after every cursor already handed out, so nothing is skipped or repeated.
pub fn receivables(
    conn: &Connection,
    commerce_id: i64,
    filter: &ReceivablesFilter,
) -> rusqlite::Result<Vec<Receivable>> {
    let prefixed: String = COLUMNS
        .split(", ")
        .map(|c| format!("i.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut sql = format!(
        "SELECT {prefixed}, m.id, m.external_id, m.type, c.id, c.user_id
         FROM installments i
         JOIN mandates m ON m.seq = i.mandate_seq
         JOIN customers c ON c.seq = m.customer_seq
         WHERE i.commerce_id = ? AND i.seq > ?"
    );
    let mut args: Vec<SqlValue> = vec![commerce_id.into(), filter.after_seq.into()];
    let mut push = |clause: &str, value: SqlValue| {
        sql.push_str(clause);
        args.push(value);
    };
    if let Some(v) = &filter.mandate_external_id {
        push(" AND m.external_id = ?", v.clone().into());
    }
    if let Some(v) = &filter.mandate_internal_id {
        push(" AND m.id = ?", v.clone().into());
    }
    if let Some(v) = &filter.user_id {
        push(" AND c.user_id = ?", v.clone().into());
    }
    if let Some(v) = &filter.internal_user_id {
        push(" AND c.id = ?", v.clone().into());
    }
    if let Some(v) = filter.due_from {
        push(" AND i.due_date >= ?", v.to_string().into());
    }
    if let Some(v) = filter.due_to {
        push(" AND i.due_date <= ?", v.to_string().into());
    }
    if let Some(v) = &filter.updated_from {
        push(" AND i.state_at >= ?", v.clone().into());
    }
    if let Some(v) = &filter.updated_to {
        push(" AND i.state_at < ?", v.clone().into());
    }
    if !filter.states.is_empty() {
        let marks = vec!["?"; filter.states.len()].join(", ");
        sql.push_str(&format!(" AND i.state IN ({marks})"));
        args.extend(filter.states.iter().map(|s| SqlValue::from(s.id())));
    }
    sql.push_str(" ORDER BY i.seq LIMIT ?");
    args.push(filter.limit.into());
    let mut stmt = conn.prepare_cached(&sql)?;
    stmt.query_map(params_from_iter(args), |row| {
        Ok(Receivable {
            installment: from_row(row)?,
            mandate_id: row.get(COLUMN_COUNT)?,
            mandate_external_id: row.get(COLUMN_COUNT + 1)?,
            mandate_type_id: row.get(COLUMN_COUNT + 2)?,
            customer_id: row.get(COLUMN_COUNT + 3)?,
            customer_user_id: row.get(COLUMN_COUNT + 4)?,
        })
    })?
    .collect()
}

/// An installment of the commerce by our id.
pub fn by_internal_id(
    conn: &Connection,
    commerce_id: i64,
    id: &str,
) -> rusqlite::Result<Option<InstallmentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM installments WHERE id = ?1 AND commerce_id = ?2");
    super::optional(
        conn.prepare_cached(&sql)?
            .query_row(params![id, commerce_id], from_row),
    )
}
