//! The reconciliation ledger (`ledger_entries`, append-only: triggers refuse UPDATE and every
//! DELETE but the sandbox reset's) and the payout reports imported against it.
//!
//! Amounts are TEXT (exact decimals, as everywhere) and also integers in ten-thousandths of the
//! currency unit (`*_e4`): every currency has at most four decimals, so SQL sums them exactly,
//! never through floating point.

use std::str::FromStr;

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::db::{self, Backend, Db, Row, params};
use super::sandbox_reset::TRIGGER_MANDATE_IDS;
use mandato_core::domain::ledger::EntryKind;
use mandato_core::domain::money::Currency;

/// An entry to append.
pub struct NewEntry<'a> {
    pub commerce_id: i64,
    pub kind: EntryKind,
    /// Signed: negative for reversals.
    pub amount: Decimal,
    pub currency: Currency,
    pub fee: Option<Decimal>,
    /// `CREDIT_CARD` ... `DIRECT_EPAC`, `MANUAL`; none for annulments.
    pub payment_method: Option<&'a str>,
    pub mandate_id: &'a str,
    pub mandate_external_id: &'a str,
    pub installment_id: &'a str,
    pub installment_external_id: &'a str,
    pub acquirer_reference: Option<&'a str>,
    pub business_date: &'a str,
    pub created_at: &'a str,
}

#[derive(Clone, Debug)]
pub struct EntryRow {
    pub seq: i64,
    pub id: String,
    pub kind: EntryKind,
    pub amount: Decimal,
    pub currency: Currency,
    pub fee: Option<Decimal>,
    pub net: Option<Decimal>,
    pub payment_method: Option<String>,
    pub mandate_id: String,
    pub mandate_external_id: String,
    pub installment_id: String,
    pub installment_external_id: String,
    pub acquirer_reference: Option<String>,
    pub business_date: String,
    pub created_at: String,
}

impl EntryRow {
    /// What the acquirer pays out for the entry: net of its fee when it charged one.
    pub fn payout_amount(&self) -> Decimal {
        self.net.unwrap_or(self.amount)
    }
}

fn e4(amount: Decimal) -> mandato_core::error::Result<i64> {
    (amount * Decimal::from(10_000)).to_i64().ok_or_else(|| {
        mandato_core::error::Error::Internal(anyhow::anyhow!("ledger amount {amount} out of range"))
    })
}

/// Appends an entry; returns its id (`led_...`).
pub fn insert<'c>(db: impl Into<Db<'c>>, e: &NewEntry<'_>) -> mandato_core::error::Result<String> {
    let values = EntryValues::of(e)?;
    db.into().execute(
        "INSERT INTO ledger_entries (id, commerce_id, kind, amount, currency, fee, net,
                amount_e4, fee_e4, net_e4, payment_method, mandate_id, mandate_external_id,
                installment_id, installment_external_id, acquirer_reference, business_date,
                created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        &params![
            &values.id,
            e.commerce_id,
            e.kind.as_str(),
            &values.amount,
            e.currency.code(),
            &values.fee,
            &values.net,
            values.amount_e4,
            values.fee_e4,
            values.net_e4,
            e.payment_method,
            e.mandate_id,
            e.mandate_external_id,
            e.installment_id,
            e.installment_external_id,
            e.acquirer_reference,
            e.business_date,
            e.created_at,
        ],
    )?;
    Ok(values.id)
}

/// Appends entries in the order given: on PostgreSQL one statement (a charging page's
/// approvals, one round trip); SQLite inserts each in-process.
pub fn insert_many<'c>(
    db: impl Into<Db<'c>>,
    entries: &[NewEntry<'_>],
) -> mandato_core::error::Result<()> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        return entries.iter().try_for_each(|e| insert(db, e).map(drop));
    }
    let mut rows = Vec::with_capacity(entries.len());
    for (ord, e) in entries.iter().enumerate() {
        let v = EntryValues::of(e)?;
        rows.push(serde_json::json!({
            "ord": ord, "id": v.id, "commerce_id": e.commerce_id, "kind": e.kind.as_str(),
            "amount": v.amount, "currency": e.currency.code(), "fee": v.fee, "net": v.net,
            "amount_e4": v.amount_e4, "fee_e4": v.fee_e4, "net_e4": v.net_e4,
            "payment_method": e.payment_method, "mandate_id": e.mandate_id,
            "mandate_external_id": e.mandate_external_id, "installment_id": e.installment_id,
            "installment_external_id": e.installment_external_id,
            "acquirer_reference": e.acquirer_reference, "business_date": e.business_date,
            "created_at": e.created_at,
        }));
    }
    db.execute(
        &format!(
            "INSERT INTO ledger_entries (id, commerce_id, kind, amount, currency, fee, net,
                    amount_e4, fee_e4, net_e4, payment_method, mandate_id, mandate_external_id,
                    installment_id, installment_external_id, acquirer_reference, business_date,
                    created_at)
             SELECT id, commerce_id, kind, amount, currency, fee, net, amount_e4, fee_e4, net_e4,
                    payment_method, mandate_id, mandate_external_id, installment_id,
                    installment_external_id, acquirer_reference, business_date, created_at
             FROM {} ORDER BY ord",
            db::json_records(
                "ord bigint, id text, commerce_id bigint, kind text, amount text, currency text,
                 fee text, net text, amount_e4 bigint, fee_e4 bigint, net_e4 bigint,
                 payment_method text, mandate_id text, mandate_external_id text,
                 installment_id text, installment_external_id text, acquirer_reference text,
                 business_date text, created_at text"
            )
        ),
        &params![db::json_rows_param(rows).as_str()],
    )?;
    Ok(())
}

/// An entry's stored values: its new id, its decimals as text and in ten-thousandths.
struct EntryValues {
    id: String,
    amount: String,
    fee: Option<String>,
    net: Option<String>,
    amount_e4: i64,
    fee_e4: i64,
    net_e4: i64,
}

impl EntryValues {
    fn of(e: &NewEntry<'_>) -> mandato_core::error::Result<EntryValues> {
        let net = e.fee.map(|fee| e.amount - fee);
        let text = |d: Option<Decimal>| d.map(|d| d.normalize().to_string());
        Ok(EntryValues {
            id: mandato_core::ids::new_id("led"),
            amount: e.amount.normalize().to_string(),
            fee: text(e.fee),
            net: text(net),
            amount_e4: e4(e.amount)?,
            fee_e4: e.fee.map(e4).transpose()?.unwrap_or(0),
            net_e4: e4(net.unwrap_or(e.amount))?,
        })
    }
}

const COLUMNS: &str = "seq, id, kind, amount, currency, fee, net, payment_method, mandate_id, \
    mandate_external_id, installment_id, installment_external_id, acquirer_reference, \
    business_date, created_at";

fn decimal(row: &Row<'_>, index: usize) -> db::Result<Option<Decimal>> {
    row.get::<Option<String>>(index)?
        .map(|text| Decimal::from_str(&text).map_err(|e| db::Error::column(index, e)))
        .transpose()
}

fn from_row(row: &Row<'_>) -> db::Result<EntryRow> {
    let kind: String = row.get(2)?;
    let currency: String = row.get(4)?;
    Ok(EntryRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        kind: EntryKind::parse(&kind).ok_or_else(|| db::Error::column(2, kind))?,
        amount: decimal(row, 3)?.ok_or_else(|| db::Error::column(3, "no amount"))?,
        currency: Currency::parse(&currency).ok_or_else(|| db::Error::column(4, currency))?,
        fee: decimal(row, 5)?,
        net: decimal(row, 6)?,
        payment_method: row.get(7)?,
        mandate_id: row.get(8)?,
        mandate_external_id: row.get(9)?,
        installment_id: row.get(10)?,
        installment_external_id: row.get(11)?,
        acquirer_reference: row.get(12)?,
        business_date: row.get(13)?,
        created_at: row.get(14)?,
    })
}

/// Which entries of a commerce to list, oldest first.
#[derive(Clone, Copy)]
pub struct EntryFilter<'a> {
    pub commerce_id: i64,
    /// Business dates, inclusive.
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
    pub kind: Option<EntryKind>,
    /// Entries after this one (the previous page's last `seq`).
    pub after_seq: Option<i64>,
    pub limit: i64,
}

pub fn list<'c>(db: impl Into<Db<'c>>, f: &EntryFilter<'_>) -> db::Result<Vec<EntryRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM ledger_entries
         WHERE commerce_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR business_date >= ?2)
           AND (CAST(?3 AS TEXT) IS NULL OR business_date <= ?3)
           AND (CAST(?4 AS TEXT) IS NULL OR kind = ?4)
           AND seq > ?5 AND mandate_id NOT IN ({TRIGGER_MANDATE_IDS})
         ORDER BY seq LIMIT ?6"
    );
    db.into().query_map(
        &sql,
        &params![
            f.commerce_id,
            f.from,
            f.to,
            f.kind.map(EntryKind::as_str),
            f.after_seq.unwrap_or(0),
            f.limit
        ],
        from_row,
    )
}

/// One day's money of one payment method and currency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettlementRow {
    pub business_date: String,
    pub payment_method: String,
    pub currency: Currency,
    pub gross: Decimal,
    pub fees: Decimal,
    pub net: Decimal,
    pub count: i64,
}

/// The commerce's daily settlements between two business dates (inclusive): every cash
/// movement (annulments move none), summed per date, payment method and currency.
pub fn settlements<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    from: Option<&str>,
    to: Option<&str>,
) -> db::Result<Vec<SettlementRow>> {
    let db = db.into();
    // One entry's e4 amount fits an i64, but fifteen of the largest do not: each column is
    // summed as its whole part above 10^8 and the rest, which cannot overflow before about
    // 10^9 entries in one group, and put back together exactly in 128 bits. PostgreSQL's
    // sum of BIGINT is NUMERIC: the parts are cast back. Texts order as bytes, as SQLite's do,
    // whatever the database's collation.
    const SPLIT: &str = "100000000";
    let parts = |column: &str, cast: bool| {
        let (open, close) = if cast {
            ("CAST(", " AS BIGINT)")
        } else {
            ("", "")
        };
        format!("{open}sum({column} / {SPLIT}){close}, {open}sum({column} % {SPLIT}){close}")
    };
    let sql = match db.backend() {
        Backend::Sqlite => format!(
            "SELECT business_date, payment_method, currency, {}, {}, {}, count(*)
         FROM ledger_entries
         WHERE commerce_id = ?1 AND kind <> 'ANNULMENT' AND mandate_id NOT IN ({trigger})
           AND (?2 IS NULL OR business_date >= ?2) AND (?3 IS NULL OR business_date <= ?3)
         GROUP BY business_date, payment_method, currency
         ORDER BY business_date, payment_method, currency",
            parts("amount_e4", false),
            parts("fee_e4", false),
            parts("net_e4", false),
            trigger = TRIGGER_MANDATE_IDS
        ),
        Backend::Postgres => format!(
            "SELECT business_date, payment_method, currency, {}, {}, {}, count(*)
         FROM ledger_entries
         WHERE commerce_id = ?1 AND kind <> 'ANNULMENT' AND mandate_id NOT IN ({trigger})
           AND (CAST(?2 AS TEXT) IS NULL OR business_date >= ?2)
           AND (CAST(?3 AS TEXT) IS NULL OR business_date <= ?3)
         GROUP BY business_date, payment_method, currency
         ORDER BY business_date COLLATE \"C\", payment_method COLLATE \"C\", currency COLLATE \"C\"",
            parts("amount_e4", true),
            parts("fee_e4", true),
            parts("net_e4", true),
            trigger = TRIGGER_MANDATE_IDS
        ),
    };
    let joined = |r: &db::Row<'_>, at: usize| -> db::Result<Decimal> {
        let (high, low): (i64, i64) = (r.get(at)?, r.get(at + 1)?);
        let units = i128::from(high) * 100_000_000 + i128::from(low);
        Ok(Decimal::try_from_i128_with_scale(units, 4)
            .map_err(|_| db::Error::column(at, units.to_string()))?
            .normalize())
    };
    db.query_map(&sql, &params![commerce_id, from, to], |r| {
        let currency: String = r.get(2)?;
        Ok(SettlementRow {
            business_date: r.get(0)?,
            payment_method: r.get(1)?,
            currency: Currency::parse(&currency).ok_or_else(|| db::Error::column(2, currency))?,
            gross: joined(r, 3)?,
            fees: joined(r, 5)?,
            net: joined(r, 7)?,
            count: r.get(9)?,
        })
    })
}

/// Entries the acquirer settles (charges and reversals) that a payout report may name: those
/// of the business dates `from..=to`, and any carrying one of `references`.
pub fn acquirer_entries<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    from: &str,
    to: &str,
    references: &[&str],
) -> mandato_core::error::Result<Vec<EntryRow>> {
    let db = db.into();
    let references = serde_json::to_string(references)?;
    // The references travel as one JSON array, read back as rows by each dialect's function.
    let each_reference = match db.backend() {
        Backend::Sqlite => "SELECT value FROM json_each(?4)",
        Backend::Postgres => "SELECT json_array_elements_text(CAST(?4 AS JSON))",
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM ledger_entries
         WHERE commerce_id = ?1 AND kind IN ('CHARGE', 'REVERSAL')
           AND acquirer_reference IS NOT NULL AND business_date BETWEEN ?2 AND ?3
           AND mandate_id NOT IN ({TRIGGER_MANDATE_IDS})
         UNION
         SELECT {COLUMNS} FROM ledger_entries
         WHERE commerce_id = ?1 AND kind IN ('CHARGE', 'REVERSAL')
           AND acquirer_reference IN ({each_reference})
           AND mandate_id NOT IN ({TRIGGER_MANDATE_IDS})
         ORDER BY seq"
    );
    Ok(db.query_map(&sql, &params![commerce_id, from, to, &references], from_row)?)
}

/// The latest payment entry (charge or manual payment) of an installment: what a reversal
/// takes back.
pub fn last_charge_of<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    installment_id: &str,
) -> db::Result<Option<EntryRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM ledger_entries
             WHERE commerce_id = ?1 AND installment_id = ?2 AND kind IN ('CHARGE', 'MANUAL_PAYMENT')
             ORDER BY seq DESC LIMIT 1"
    );
    db.into()
        .query_opt(&sql, &params![commerce_id, installment_id], from_row)
}

/// A stored reconciliation (the result as answered, JSON).
#[derive(Clone, Debug)]
pub struct ReconciliationRow {
    pub id: String,
    pub result: String,
    pub created_by: String,
    pub created_at: String,
}

pub struct NewReconciliation<'a> {
    pub id: &'a str,
    pub commerce_id: i64,
    pub lines: i64,
    pub matched: i64,
    pub unpaid: i64,
    pub unknown: i64,
    pub result: &'a str,
    pub created_by: &'a str,
    pub created_at: &'a str,
}

pub fn insert_reconciliation<'c>(
    db: impl Into<Db<'c>>,
    r: &NewReconciliation<'_>,
) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO reconciliations (id, commerce_id, lines, matched, unpaid, unknown, result,
                created_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        &params![
            r.id,
            r.commerce_id,
            r.lines,
            r.matched,
            r.unpaid,
            r.unknown,
            r.result,
            r.created_by,
            r.created_at
        ],
    )?;
    Ok(())
}

/// The commerce's imports, newest first.
pub fn reconciliations<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    limit: i64,
) -> db::Result<Vec<ReconciliationRow>> {
    db.into().query_map(
        "SELECT id, result, created_by, created_at FROM reconciliations
         WHERE commerce_id = ?1 ORDER BY seq DESC LIMIT ?2",
        &params![commerce_id, limit],
        |r| {
            Ok(ReconciliationRow {
                id: r.get(0)?,
                result: r.get(1)?,
                created_by: r.get(2)?,
                created_at: r.get(3)?,
            })
        },
    )
}

/// Removes the commerce's entries and imports, for the sandbox reset only.
pub fn erase_for_sandbox_reset<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<u64> {
    let db = db.into();
    let removed = with_erasure_permit(db, commerce_id, "")?;
    db.execute(
        "DELETE FROM reconciliations WHERE commerce_id = ?1",
        &params![commerce_id],
    )?;
    Ok(removed)
}

/// Removes the commerce's entries of the mandates `mandate_ids` picks (SQL taking the
/// commerce as `?1`), for the sandbox reset of `mandato trigger`'s records only; the
/// commerce's imports stay.
pub fn erase_entries_of_mandates<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    mandate_ids: &str,
) -> db::Result<u64> {
    let picked = format!(" AND mandate_id IN ({mandate_ids})");
    with_erasure_permit(db.into(), commerce_id, &picked)
}

/// Deletes the commerce's entries (those `condition` also picks): the permit row lets the
/// delete trigger through and is gone again before the caller's transaction commits.
fn with_erasure_permit(db: Db<'_>, commerce_id: i64, condition: &str) -> db::Result<u64> {
    db.execute(
        "INSERT INTO ledger_erasure_permits (commerce_id) VALUES (?1)",
        &params![commerce_id],
    )?;
    let removed = db.execute(
        &format!("DELETE FROM ledger_entries WHERE commerce_id = ?1{condition}"),
        &params![commerce_id],
    )?;
    db.execute(
        "DELETE FROM ledger_erasure_permits WHERE commerce_id = ?1",
        &params![commerce_id],
    )?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    fn entry(commerce_id: i64, amount: i64, fee: Option<i64>) -> NewEntry<'static> {
        NewEntry {
            commerce_id,
            kind: EntryKind::Charge,
            amount: Decimal::from(amount),
            currency: Currency::Clp,
            fee: fee.map(Decimal::from),
            payment_method: Some("CREDIT_CARD"),
            mandate_id: "man_1",
            mandate_external_id: "m1",
            installment_id: "ins_1",
            installment_external_id: "1",
            acquirer_reference: Some("AUT-1"),
            business_date: "2026-12-01",
            created_at: "2026-12-01T12:00:00Z",
        }
    }

    fn two_commerces(db: Db<'_>) {
        db.execute_batch(
            "INSERT INTO commerces (id, code, name, password_hash, payment_methods, webhook_secret, created_at)
             VALUES (1, 'a', 'A', 'x', '[]', 'whsec_a', '2026-01-01T00:00:00Z'),
                    (2, 'b', 'B', 'x', '[]', 'whsec_b', '2026-01-01T00:00:00Z')",
        )
        .unwrap();
    }

    /// The statement's error, with the transaction still usable afterwards: a PostgreSQL
    /// transaction is aborted by a failed statement unless it ran inside a savepoint.
    fn refused(db: Db<'_>, sql: &str) -> String {
        db.execute_batch("SAVEPOINT refused").unwrap();
        let error = format!("{:?}", db.execute(sql, &params![]).unwrap_err());
        db.execute_batch("ROLLBACK TO SAVEPOINT refused; RELEASE SAVEPOINT refused")
            .unwrap();
        error
    }

    #[test]
    fn entries_appended_together_are_those_appended_one_at_a_time() {
        on_both(|db| {
            two_commerces(db);
            insert(db, &entry(1, 10_000, Some(351))).unwrap();
            insert_many(db, &[entry(1, 10_000, Some(351)), entry(2, 5_000, None)]).unwrap();
            let stored = db
                .query_map(
                    "SELECT commerce_id, amount, fee, net, amount_e4, fee_e4, net_e4,
                            acquirer_reference
                     FROM ledger_entries ORDER BY seq",
                    &params![],
                    |r| {
                        Ok((
                            r.get::<i64>(0)?,
                            r.get::<String>(1)?,
                            r.get::<Option<String>>(2)?,
                            r.get::<Option<String>>(3)?,
                            (r.get::<i64>(4)?, r.get::<i64>(5)?, r.get::<i64>(6)?),
                            r.get::<Option<String>>(7)?,
                        ))
                    },
                )
                .unwrap();
            assert_eq!(stored.len(), 3);
            assert_eq!(stored[0], stored[1], "one entry, however it was appended");
            assert_eq!(
                stored[2],
                (
                    2,
                    "5000".into(),
                    None,
                    None,
                    (50_000_000, 0, 50_000_000),
                    Some("AUT-1".into())
                )
            );
        });
    }

    #[test]
    fn entries_refuse_update_and_delete_except_the_sandbox_reset() {
        on_both(|db| {
            two_commerces(db);
            insert(db, &entry(1, 10_000, Some(351))).unwrap();
            insert(db, &entry(2, 5_000, None)).unwrap();
            let update = refused(db, "UPDATE ledger_entries SET amount = '1'");
            assert!(update.contains("append-only"), "{update}");
            let delete = refused(db, "DELETE FROM ledger_entries WHERE commerce_id = 1");
            assert!(delete.contains("append-only"), "{delete}");
            assert_eq!(erase_for_sandbox_reset(db, 1).unwrap(), 1);
            let left = db
                .query_row("SELECT count(*) FROM ledger_entries", &params![], |r| {
                    r.get::<i64>(0)
                })
                .unwrap();
            assert_eq!(left, 1);
            let delete = refused(db, "DELETE FROM ledger_entries");
            assert!(
                delete.contains("append-only"),
                "the permit does not outlive the reset"
            );
        });
    }

    #[test]
    fn settlements_sum_exactly_per_day_and_method() {
        on_both(|db| {
            two_commerces(db);
            insert(db, &entry(1, 10_000, Some(351))).unwrap();
            insert(db, &entry(1, 2_990, Some(105))).unwrap();
            let rows = settlements(db, 1, None, None).unwrap();
            assert_eq!(rows.len(), 1);
            let row = &rows[0];
            assert_eq!(
                (row.gross, row.fees, row.net, row.count),
                (
                    Decimal::from(12_990),
                    Decimal::from(456),
                    Decimal::from(12_534),
                    2
                )
            );
            let later = settlements(db, 1, Some("2026-12-02"), None).unwrap();
            assert!(later.is_empty());
        });
    }

    #[test]
    fn entries_are_listed_and_named_by_acquirer_reference() {
        on_both(|db| {
            two_commerces(db);
            let first = insert(db, &entry(1, 10_000, Some(351))).unwrap();
            let mut other_day = entry(1, 2_990, None);
            other_day.business_date = "2026-12-05";
            other_day.acquirer_reference = Some("AUT-9");
            let second = insert(db, &other_day).unwrap();
            insert(db, &entry(2, 5_000, None)).unwrap();

            let ids = |rows: Vec<EntryRow>| rows.into_iter().map(|e| e.id).collect::<Vec<_>>();
            let day = acquirer_entries(db, 1, "2026-12-01", "2026-12-01", &[]).unwrap();
            assert_eq!(ids(day), vec![first.clone()]);
            let named = acquirer_entries(db, 1, "2026-12-01", "2026-12-01", &["AUT-9"]).unwrap();
            assert_eq!(ids(named), vec![first.clone(), second.clone()]);

            let page = list(
                db,
                &EntryFilter {
                    commerce_id: 1,
                    from: None,
                    to: None,
                    kind: Some(EntryKind::Charge),
                    after_seq: None,
                    limit: 1,
                },
            )
            .unwrap();
            assert_eq!(ids(page.clone()), vec![first.clone()]);
            assert_eq!(page[0].net, Some(Decimal::from(9_649)));
            let last = last_charge_of(db, 1, "ins_1").unwrap().unwrap();
            assert_eq!(last.id, second);
        });
    }
}
