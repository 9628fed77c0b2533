//! Installments of mandates, and the receivables search across a commerce's mandates.

use std::str::FromStr;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde_json::Value;

use super::StoredJson;
use super::db::{self, ANY_KEY, Db, Param, Row, key_array, params};
use mandato_core::domain::date::Date;
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::InstallmentState;
use mandato_core::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
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
    pub payment: Option<StoredJson>,
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

#[derive(Clone)]
pub struct NewInstallment {
    pub external_id: String,
    pub amount: Money,
    /// A `Date`, so the column only ever receives `YYYY-MM-DD` between 1900 and 9999: the
    /// charging run and every filter compare `due_date` as text, which orders as dates only then.
    pub due_date: Date,
}

/// The columns `from_row` reads, as a literal so that hot reads are `concat!`ed once, not
/// formatted per call.
macro_rules! columns {
    () => {
        "seq, id, mandate_seq, external_id, amount, currency, due_date, state, state_at, \
         attempts, payment_method_id, authorization_code, rejection_code, rejection_message, \
         payment, last_attempt_date, next_retry_date, retry_scheduled, first_rejected_date, \
         forced_outcome, charged_clp"
    };
}
pub(crate) const COLUMNS: &str = columns!();
/// How many columns `from_row` reads; joined columns follow them.
const COLUMN_COUNT: usize = 21;

pub(crate) fn from_row(row: &Row<'_>) -> db::Result<InstallmentRow> {
    let amount: String = row.get(4)?;
    let currency: String = row.get(5)?;
    let due: String = row.get(6)?;
    let state: i64 = row.get(7)?;
    let payment: Option<String> = row.get(14)?;
    let currency = Currency::parse(&currency)
        .ok_or_else(|| db::Error::column(5, format!("currency {currency}")))?;
    let amount = Decimal::from_str(&amount)
        .ok()
        .and_then(|d| Money::from_decimal(d, currency).ok())
        .ok_or_else(|| db::Error::column(4, format!("amount {amount}")))?;
    Ok(InstallmentRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        mandate_seq: row.get(2)?,
        external_id: row.get(3)?,
        amount,
        due_date: NaiveDate::from_str(&due).map_err(|e| db::Error::column(6, e))?,
        state: InstallmentState::from_id(state)
            .ok_or_else(|| db::Error::column(7, format!("state {state}")))?,
        state_at: row.get(8)?,
        attempts: row.get(9)?,
        payment_method_id: row.get(10)?,
        authorization_code: row.get(11)?,
        rejection_code: row.get(12)?,
        rejection_message: row.get(13)?,
        payment: payment.and_then(|p| StoredJson::from_text(p).ok()),
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
pub fn insert_many<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    commerce_id: i64,
    items: &[NewInstallment],
    path_prefix: &str,
    now: &str,
) -> Result<Vec<InstallmentRow>> {
    let db = db.into();
    let inserted = match db.as_sqlite() {
        Some(conn) => insert_each(conn, mandate_seq, commerce_id, items, now)?,
        None => insert_together(db, mandate_seq, commerce_id, items, now)?,
    };
    // Every item was inserted, in order, up to the first whose external id was taken.
    if let Some(index) = (inserted.len() < items.len()).then_some(inserted.len()) {
        return Err(Error::refused_at(
            "DUPLICATED_INSTALLMENT_ID",
            format!("{path_prefix}[{index}].id"),
            format!(
                "installment id {} already exists in this mandate",
                items[index].external_id
            ),
        ));
    }
    Ok(inserted)
}

/// SQLite: one statement per item, stopping at the first whose external id is taken. No
/// RETURNING: SQLite runs it as a trigger, which would open a statement journal per row and
/// make FTS5 flush a segment (migration 0022); each row is made from what was inserted
/// instead of read back.
fn insert_each(
    conn: &rusqlite::Connection,
    mandate_seq: i64,
    commerce_id: i64,
    items: &[NewInstallment],
    now: &str,
) -> Result<Vec<InstallmentRow>> {
    const INSERT: &str = "INSERT INTO installments (id, mandate_seq, commerce_id, external_id,
            amount, currency, due_date, state, state_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
         ON CONFLICT (mandate_seq, external_id) DO NOTHING";
    let mut rows = Vec::with_capacity(items.len());
    for item in items {
        let id = mandato_core::ids::new_id("ins");
        let amount = item.amount.amount().normalize().to_string();
        let due_date = item.due_date.to_string();
        let values = params![
            &id,
            mandate_seq,
            commerce_id,
            &item.external_id,
            &amount,
            item.amount.currency().code(),
            &due_date,
            InstallmentState::Pending.id(),
            now,
        ];
        // A conflicting external id inserts nothing.
        if Db::Sqlite(conn).execute(INSERT, &values)? != 1 {
            break;
        }
        rows.push(inserted_row(
            conn.last_insert_rowid(),
            id,
            mandate_seq,
            item,
            now,
        ));
    }
    Ok(rows)
}

/// PostgreSQL: every item in one statement (one round trip, where a statement per item cost
/// one each: bench/README.md, "PostgreSQL"), the items passed as one JSON array and inserted
/// in its order, so their keys follow it as they would one by one. The rows are answered in
/// the items' order, up to the first item whose external id was taken (by the mandate or by
/// an earlier item).
fn insert_together(
    db: Db<'_>,
    mandate_seq: i64,
    commerce_id: i64,
    items: &[NewInstallment],
    now: &str,
) -> Result<Vec<InstallmentRow>> {
    let items_json = Value::Array(
        items
            .iter()
            .map(|item| {
                serde_json::json!({
                    "id": mandato_core::ids::new_id("ins"),
                    "externalId": item.external_id,
                    "amount": item.amount.amount().normalize().to_string(),
                    "currency": item.amount.currency().code(),
                    "dueDate": item.due_date.to_string(),
                })
            })
            .collect(),
    )
    .to_string();
    let sql = format!(
        "INSERT INTO installments (id, mandate_seq, commerce_id, external_id,
            amount, currency, due_date, state, state_at, created_at)
         SELECT e.item->>'id', ?2, ?3, e.item->>'externalId', e.item->>'amount',
            e.item->>'currency', e.item->>'dueDate', ?4, ?5, ?5
         FROM jsonb_array_elements(CAST(CAST(?1 AS TEXT) AS JSONB)) WITH ORDINALITY AS e(item, n)
         ORDER BY e.n
         ON CONFLICT (mandate_seq, external_id) DO NOTHING
         RETURNING {COLUMNS}"
    );
    let values = params![
        &items_json,
        mandate_seq,
        commerce_id,
        InstallmentState::Pending.id(),
        now,
    ];
    let mut inserted: std::collections::HashMap<String, InstallmentRow> = db
        .query_map(&sql, &values, from_row)?
        .into_iter()
        .map(|row| (row.external_id.clone(), row))
        .collect();
    Ok(items
        .iter()
        .map_while(|item| inserted.remove(&item.external_id))
        .collect())
}

/// The row `insert_many` has just written, as `from_row` would read it: a PENDING installment
/// whose other columns hold their defaults (a test holds the two equal).
fn inserted_row(
    seq: i64,
    id: String,
    mandate_seq: i64,
    item: &NewInstallment,
    now: &str,
) -> InstallmentRow {
    InstallmentRow {
        seq,
        id,
        mandate_seq,
        external_id: item.external_id.clone(),
        amount: item.amount.clone(),
        due_date: item.due_date.naive(),
        state: InstallmentState::Pending,
        state_at: now.to_string(),
        attempts: 0,
        payment_method_id: None,
        authorization_code: None,
        rejection_code: None,
        rejection_message: None,
        payment: None,
        last_attempt_date: None,
        next_retry_date: None,
        retry_scheduled: false,
        first_rejected_date: None,
        forced_outcome: None,
        charged_clp: None,
    }
}

pub fn by_seq<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<InstallmentRow> {
    let sql = format!("SELECT {COLUMNS} FROM installments WHERE seq = ?1");
    db.into().query_row(&sql, &params![seq], from_row)
}

/// The installments `seqs`, in any order; one missing is left out. One statement on
/// PostgreSQL (a charging page's); SQLite reads each in-process.
pub fn by_seqs<'c>(db: impl Into<Db<'c>>, seqs: &[i64]) -> db::Result<Vec<InstallmentRow>> {
    let db = db.into();
    match db {
        Db::Sqlite(_) => {
            let sql = format!("SELECT {COLUMNS} FROM installments WHERE seq = ?1");
            let mut found = Vec::with_capacity(seqs.len());
            for seq in seqs {
                found.extend(db.query_opt(&sql, &params![*seq], from_row)?);
            }
            Ok(found)
        }
        Db::Postgres(_) => db.query_map(
            &format!("SELECT {COLUMNS} FROM installments WHERE seq = {ANY_KEY}"),
            &params![key_array(seqs).as_str()],
            from_row,
        ),
    }
}

/// The installments of `update` (an `UPDATE installments i .. FROM .. WHERE i.seq = ..`
/// without `RETURNING`) as they now are: PostgreSQL only, where it is the update's own round
/// trip.
pub(crate) fn update_many_returning<'c>(
    db: impl Into<Db<'c>>,
    update: &str,
    params: &[Param<'_>],
) -> db::Result<Vec<InstallmentRow>> {
    db.into().query_map(
        &format!("{update} RETURNING {}", db::qualified("i", COLUMNS)),
        params,
        from_row,
    )
}

/// Runs `update` (an `UPDATE installments .. WHERE seq = ?1` without `RETURNING`) and answers
/// the installment `seq` as it then is: on PostgreSQL in the update's own round trip
/// (`RETURNING`), on SQLite by reading it after, in-process (no `RETURNING` there, see
/// `insert_each`).
pub(crate) fn update_returning<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    update: &str,
    params: &[Param<'_>],
) -> db::Result<InstallmentRow> {
    let db = db.into();
    match db {
        Db::Sqlite(_) => {
            db.execute(update, params)?;
            by_seq(db, seq)
        }
        Db::Postgres(_) => db.query_row(&format!("{update} RETURNING {COLUMNS}"), params, from_row),
    }
}

/// Every installment of a mandate, by due date.
pub fn for_mandate<'c>(db: impl Into<Db<'c>>, mandate_seq: i64) -> db::Result<Vec<InstallmentRow>> {
    let sql = concat!(
        "SELECT ",
        columns!(),
        " FROM installments WHERE mandate_seq = ?1 ORDER BY due_date, seq"
    );
    db.into().query_map(sql, &params![mandate_seq], from_row)
}

/// How many installments a mandate has, and how many of them are not settled (PAID,
/// ANNULLED or REVERSED).
pub fn unsettled_count<'c>(db: impl Into<Db<'c>>, mandate_seq: i64) -> db::Result<(i64, i64)> {
    db.into().query_row(
        &format!(
            "SELECT count(*), count(*) FILTER (WHERE state NOT IN ({})) FROM installments
             WHERE mandate_seq = ?1",
            settled_state_ids()
        ),
        &params![mandate_seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// `unsettled_count` of many mandates, by mandate seq (a mandate without installments may be
/// left out): one statement on PostgreSQL (a charging page's), each in-process on SQLite.
pub fn unsettled_counts<'c>(
    db: impl Into<Db<'c>>,
    mandate_seqs: &[i64],
) -> db::Result<std::collections::HashMap<i64, (i64, i64)>> {
    let db = db.into();
    if let Db::Sqlite(_) = db {
        return mandate_seqs
            .iter()
            .map(|seq| Ok((*seq, unsettled_count(db, *seq)?)))
            .collect();
    }
    Ok(db
        .query_map(
            &format!(
                "SELECT mandate_seq, count(*), count(*) FILTER (WHERE state NOT IN ({}))
                 FROM installments WHERE mandate_seq = {ANY_KEY} GROUP BY mandate_seq",
                settled_state_ids()
            ),
            &params![key_array(mandate_seqs).as_str()],
            |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))),
        )?
        .into_iter()
        .collect())
}

/// The ids of the settled states (PAID, ANNULLED, REVERSED), for `IN (..)`.
fn settled_state_ids() -> String {
    InstallmentState::ALL
        .iter()
        .filter(|s| s.is_settled())
        .map(|s| s.id().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which installments of a mandate a request names: by the merchant's ids or by ours.
pub enum InstallmentRefs<'a> {
    External(&'a [String]),
    Internal(&'a [String]),
}

/// Finds each named installment of the mandate, in the order named; `Err(index)` is the first
/// one that does not exist in this mandate.
pub fn find_in_mandate<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    refs: &InstallmentRefs<'_>,
) -> Result<std::result::Result<Vec<InstallmentRow>, usize>> {
    let (column, ids) = match refs {
        InstallmentRefs::External(ids) => ("external_id", ids),
        InstallmentRefs::Internal(ids) => ("id", ids),
    };
    let sql =
        format!("SELECT {COLUMNS} FROM installments WHERE mandate_seq = ?1 AND {column} = ?2");
    let db = db.into();
    let mut rows = Vec::with_capacity(ids.len());
    for (index, id) in ids.iter().enumerate() {
        match db.query_opt(&sql, &params![mandate_seq, id], from_row)? {
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

pub fn set_state<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    state: InstallmentState,
    at: &str,
    change: &StateChange<'_>,
) -> Result<InstallmentRow> {
    // Only a REJECTED installment can be waiting for a retry: paid, annulled or reversed ones
    // drop the pending retry so that neither the engine nor their events announce one.
    let keeps_retry = state == InstallmentState::Rejected;
    let db = db.into();
    let payment = change.payment.map(serde_json::to_string).transpose()?;
    db.execute(
        "UPDATE installments SET state = ?2, state_at = ?3,
                payment = COALESCE(?4, payment),
                authorization_code = COALESCE(?5, authorization_code),
                payment_method_id = COALESCE(?6, payment_method_id),
                retry_scheduled = CASE WHEN ?7 THEN retry_scheduled ELSE 0 END,
                next_retry_date = CASE WHEN ?7 THEN next_retry_date ELSE NULL END
         WHERE seq = ?1",
        &params![
            seq,
            state.id(),
            at,
            &payment,
            change.authorization_code,
            change.payment_method_id,
            keeps_retry,
        ],
    )?;
    Ok(by_seq(db, seq)?)
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
pub fn receivables<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    filter: &ReceivablesFilter,
) -> db::Result<Vec<Receivable>> {
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
         WHERE i.commerce_id = ? AND i.seq > ? AND m.sandbox_trigger = 0"
    );
    let due_from = filter.due_from.map(|d| d.to_string());
    let due_to = filter.due_to.map(|d| d.to_string());
    let mut args: Vec<Param<'_>> = vec![commerce_id.into(), filter.after_seq.into()];
    let optional_filters = [
        (" AND m.external_id = ?", &filter.mandate_external_id),
        (" AND m.id = ?", &filter.mandate_internal_id),
        (" AND c.user_id = ?", &filter.user_id),
        (" AND c.id = ?", &filter.internal_user_id),
        (" AND i.due_date >= ?", &due_from),
        (" AND i.due_date <= ?", &due_to),
        (" AND i.state_at >= ?", &filter.updated_from),
        (" AND i.state_at < ?", &filter.updated_to),
    ];
    for (clause, value) in optional_filters {
        if let Some(value) = value {
            sql.push_str(clause);
            args.push(value.into());
        }
    }
    if !filter.states.is_empty() {
        let marks = vec!["?"; filter.states.len()].join(", ");
        sql.push_str(&format!(" AND i.state IN ({marks})"));
        args.extend(filter.states.iter().map(|s| Param::Int(s.id())));
    }
    sql.push_str(" ORDER BY i.seq LIMIT ?");
    args.push(filter.limit.into());
    db.into().query_map(&sql, &args, |row| {
        Ok(Receivable {
            installment: from_row(row)?,
            mandate_id: row.get(COLUMN_COUNT)?,
            mandate_external_id: row.get(COLUMN_COUNT + 1)?,
            mandate_type_id: row.get(COLUMN_COUNT + 2)?,
            customer_id: row.get(COLUMN_COUNT + 3)?,
            customer_user_id: row.get(COLUMN_COUNT + 4)?,
        })
    })
}

/// An installment of the commerce by our id.
pub fn by_internal_id<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    id: &str,
) -> db::Result<Option<InstallmentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM installments WHERE id = ?1 AND commerce_id = ?2");
    db.into()
        .query_opt(&sql, &params![id, commerce_id], from_row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mandates::tests::mandate;
    use crate::pg_test::on_both;
    use mandato_core::domain::money::Currency;

    fn item(external_id: &str, amount: &str, due: &str) -> NewInstallment {
        NewInstallment {
            external_id: external_id.to_string(),
            amount: Money::from_decimal(
                Decimal::from_str(amount).unwrap(),
                Currency::parse("CLP").unwrap(),
            )
            .unwrap(),
            due_date: Date::parse(due).unwrap(),
        }
    }

    fn three(db: Db<'_>) -> (crate::mandates::MandateRow, Vec<InstallmentRow>) {
        let m = mandate(db, "m-1");
        let rows = insert_many(
            db,
            m.seq,
            m.commerce_id,
            &[
                item("i-2", "2000", "2026-12-10"),
                item("i-1", "1000", "2026-11-10"),
                item("i-3", "3000", "2027-01-10"),
            ],
            "installments",
            "t0",
        )
        .unwrap();
        (m, rows)
    }

    #[test]
    fn the_rows_an_insert_answers_are_the_rows_stored() {
        on_both(|db| {
            let (_, rows) = three(db);
            assert_eq!(rows.len(), 3);
            for row in rows {
                assert_eq!(row, by_seq(db, row.seq).unwrap());
            }
        });
    }

    #[test]
    fn installments_are_added_once_per_external_id_and_listed_by_due_date() {
        on_both(|db| {
            let (m, rows) = three(db);
            assert_eq!(rows[0].amount.amount(), Decimal::from(2000));
            assert_eq!(rows[0].state, InstallmentState::Pending);
            assert!(!rows[0].retry_scheduled);
            let listed: Vec<_> = for_mandate(db, m.seq)
                .unwrap()
                .into_iter()
                .map(|r| r.external_id)
                .collect();
            assert_eq!(listed, vec!["i-1", "i-2", "i-3"]);

            let again = insert_many(
                db,
                m.seq,
                m.commerce_id,
                &[
                    item("i-4", "1", "2027-02-10"),
                    item("i-1", "1", "2027-02-10"),
                ],
                "installments",
                "t1",
            );
            match again.unwrap_err() {
                Error::Refused { name, field, .. } => {
                    assert_eq!(name, "DUPLICATED_INSTALLMENT_ID");
                    assert_eq!(field.as_deref(), Some("installments[1].id"));
                }
                other => panic!("expected a refusal, got {other}"),
            }
        });
    }

    #[test]
    fn a_mandate_is_read_with_its_customer_and_installments_in_one_statement() {
        use crate::mandates::{MandateKey, with_parts};
        on_both(|db| {
            let (m, rows) = three(db);
            let by_ours = with_parts(db, m.commerce_id, MandateKey::Internal(&m.id))
                .unwrap()
                .unwrap();
            assert_eq!(by_ours.mandate, m);
            assert_eq!(
                by_ours.customer,
                crate::customers::by_seq(db, m.customer_seq).unwrap()
            );
            assert_eq!(by_ours.installments, for_mandate(db, m.seq).unwrap());
            let (mandate, customer) = crate::mandates::by_seq_with_customer(db, m.seq).unwrap();
            assert_eq!(
                (mandate, customer),
                (by_ours.mandate.clone(), by_ours.customer.clone())
            );
            assert_eq!(
                by_ours
                    .installments
                    .iter()
                    .map(|r| r.seq)
                    .collect::<Vec<_>>(),
                vec![rows[1].seq, rows[0].seq, rows[2].seq]
            );
            let by_theirs = with_parts(db, m.commerce_id, MandateKey::External("m-1"))
                .unwrap()
                .unwrap();
            assert_eq!(by_theirs.mandate, m);
            assert_eq!(by_theirs.installments.len(), 3);

            let bare = crate::mandates::tests::mandate(db, "m-2");
            let alone = with_parts(db, bare.commerce_id, MandateKey::Internal(&bare.id))
                .unwrap()
                .unwrap();
            assert_eq!(alone.mandate, bare);
            assert!(alone.installments.is_empty());

            assert!(
                with_parts(db, m.commerce_id + 1, MandateKey::Internal(&m.id))
                    .unwrap()
                    .is_none()
            );
            assert!(
                with_parts(db, m.commerce_id, MandateKey::External("m-9"))
                    .unwrap()
                    .is_none()
            );
        });
    }

    #[test]
    fn named_installments_are_found_in_order_or_the_first_missing_is_told() {
        on_both(|db| {
            let (m, rows) = three(db);
            let external = ["i-3".to_string(), "i-1".to_string()];
            let found = find_in_mandate(db, m.seq, &InstallmentRefs::External(&external))
                .unwrap()
                .unwrap();
            assert_eq!(found[0].seq, rows[2].seq);
            assert_eq!(found[1].seq, rows[1].seq);
            let internal = [rows[0].id.clone(), "ins_missing".to_string()];
            let missing = find_in_mandate(db, m.seq, &InstallmentRefs::Internal(&internal));
            assert_eq!(missing.unwrap().unwrap_err(), 1);
            let by_id = by_internal_id(db, m.commerce_id, &rows[0].id)
                .unwrap()
                .unwrap();
            assert_eq!(by_id.external_id, "i-2");
            assert!(
                by_internal_id(db, m.commerce_id + 1, &rows[0].id)
                    .unwrap()
                    .is_none()
            );
        });
    }

    #[test]
    fn a_state_change_writes_what_comes_with_it() {
        on_both(|db| {
            let (m, rows) = three(db);
            assert_eq!(unsettled_count(db, m.seq).unwrap(), (3, 3));
            let payment = serde_json::json!({"reference": "deposit 42"});
            let paid = set_state(
                db,
                rows[0].seq,
                InstallmentState::Paid,
                "t1",
                &StateChange {
                    payment: Some(&payment),
                    authorization_code: Some("AUTH1"),
                    payment_method_id: Some(3),
                },
            )
            .unwrap();
            assert_eq!(paid.state, InstallmentState::Paid);
            assert_eq!(paid.state_at, "t1");
            assert_eq!(paid.payment, Some(StoredJson::from_value(&payment)));
            assert_eq!(paid.authorization_code.as_deref(), Some("AUTH1"));
            assert_eq!(paid.payment_method_id, Some(3));
            assert_eq!(unsettled_count(db, m.seq).unwrap(), (3, 2));
            let counted = unsettled_counts(db, &[m.seq, m.seq + 1_000]).unwrap();
            assert_eq!(counted.get(&m.seq), Some(&(3, 2)));
            assert_eq!(
                by_seqs(db, &[rows[2].seq, rows[0].seq, -1]).unwrap().len(),
                2,
                "a missing installment is left out"
            );

            // What the change does not say is kept.
            let again = set_state(
                db,
                rows[0].seq,
                InstallmentState::Reversed,
                "t2",
                &StateChange::default(),
            )
            .unwrap();
            assert_eq!(again.authorization_code.as_deref(), Some("AUTH1"));
            assert_eq!(again.next_retry_date, None);
        });
    }

    #[test]
    fn receivables_filter_and_page_in_creation_order() {
        on_both(|db| {
            let (m, rows) = three(db);
            let all = receivables(
                db,
                m.commerce_id,
                &ReceivablesFilter {
                    limit: 10,
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(all.len(), 3);
            assert_eq!(all[0].installment.seq, rows[0].seq);
            assert_eq!(all[0].mandate_external_id, "m-1");
            assert_eq!(all[0].customer_user_id, "cust-01");

            let filtered = receivables(
                db,
                m.commerce_id,
                &ReceivablesFilter {
                    states: vec![InstallmentState::Pending],
                    mandate_external_id: Some("m-1".to_string()),
                    user_id: Some("cust-01".to_string()),
                    due_from: Some(Date::parse("2026-12-01").unwrap()),
                    due_to: Some(Date::parse("2027-01-10").unwrap()),
                    updated_from: Some("t0".to_string()),
                    after_seq: rows[0].seq,
                    limit: 10,
                    ..Default::default()
                },
            )
            .unwrap();
            let ids: Vec<_> = filtered
                .iter()
                .map(|r| r.installment.external_id.as_str())
                .collect();
            assert_eq!(ids, vec!["i-3"]);

            let page = receivables(
                db,
                m.commerce_id,
                &ReceivablesFilter {
                    limit: 1,
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(page.len(), 1);
        });
    }
}
