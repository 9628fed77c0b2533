//! Mandates: the commitments of a commerce's customers.

use std::sync::LazyLock;

use serde_json::Value;

use super::StoredJson;
use super::customers::{self, CustomerRow};
use super::db::{self, ANY_KEY, Backend, Db, Row, key_array, params, qualified};
use super::installments::{self, InstallmentRow};
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::state::{MandateState, MandateType};
use mandato_core::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct MandateRow {
    pub seq: i64,
    pub id: String,
    pub commerce_id: i64,
    pub customer_seq: i64,
    pub external_id: String,
    pub mandate_type: MandateType,
    pub state: MandateState,
    pub name: String,
    pub detail: Option<String>,
    pub terminate_when_charged: bool,
    pub charges: StoredJson,
    pub payment_methods: Vec<i64>,
    pub metadata: Option<StoredJson>,
    pub url_callback: Option<String>,
    pub url_activation_webhook: Option<String>,
    pub url_payment_webhook: Option<String>,
    pub magic_link_token: String,
    pub magic_link_expires_at: String,
    pub enrolled_method: Option<StoredJson>,
    pub cancel_description: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Fixed at creation: the request's `mandate.activation`, else the commerce's default.
    pub activation_mode: ActivationMode,
}

pub struct NewMandate<'a> {
    pub commerce_id: i64,
    pub customer_seq: i64,
    pub external_id: &'a str,
    pub mandate_type: MandateType,
    pub name: &'a str,
    pub detail: Option<&'a str>,
    pub terminate_when_charged: bool,
    pub charges: &'a Value,
    pub payment_methods: &'a [i64],
    pub metadata: Option<&'a Value>,
    pub url_callback: Option<&'a str>,
    pub url_activation_webhook: Option<&'a str>,
    pub url_payment_webhook: Option<&'a str>,
    pub magic_link_token: &'a str,
    pub magic_link_expires_at: &'a str,
    pub activation_mode: ActivationMode,
    pub now: &'a str,
}

/// The columns `from_row` reads, as a literal so that each statement's text is a constant
/// (no SQL is formatted per call on the request path).
macro_rules! columns {
    () => {
        "seq, id, commerce_id, customer_seq, external_id, type, state, name, detail, \
         terminate_when_charged, charges, payment_methods, metadata, url_callback, \
         url_activation_webhook, url_payment_webhook, magic_link_token, magic_link_expires_at, \
         enrolled_method, cancel_description, created_at, updated_at, activation_mode"
    };
}

/// A JSON column's stored text, checked to be one JSON value: text that is not JSON fails the
/// read rather than reaching an answer.
fn json_column(row: &Row<'_>, index: usize) -> db::Result<Option<StoredJson>> {
    let text: Option<String> = row.get(index)?;
    text.map(|t| StoredJson::from_text(t).map_err(|e| db::Error::column(index, e)))
        .transpose()
}

/// The allowed methods' ids, parsed straight into numbers: text that is not JSON fails the
/// read, like the other JSON columns; JSON of another shape reads as none.
fn payment_methods(row: &Row<'_>, index: usize) -> db::Result<Vec<i64>> {
    let text: Option<String> = row.get(index)?;
    match text.map(|t| serde_json::from_str::<Vec<i64>>(&t)) {
        None => Ok(Vec::new()),
        Some(Ok(ids)) => Ok(ids),
        Some(Err(e)) if e.is_data() => Ok(Vec::new()),
        Some(Err(e)) => Err(db::Error::column(index, e)),
    }
}

fn from_row(row: &Row<'_>) -> db::Result<MandateRow> {
    let type_id: i64 = row.get(5)?;
    let state_id: i64 = row.get(6)?;
    Ok(MandateRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        commerce_id: row.get(2)?,
        customer_seq: row.get(3)?,
        external_id: row.get(4)?,
        mandate_type: MandateType::from_id(type_id)
            .ok_or_else(|| db::Error::unknown(5, "mandate type"))?,
        state: MandateState::from_id(state_id)
            .ok_or_else(|| db::Error::unknown(6, "mandate state"))?,
        name: row.get(7)?,
        detail: row.get(8)?,
        terminate_when_charged: row.get(9)?,
        charges: json_column(row, 10)?.unwrap_or_else(|| StoredJson::from_value(&Value::Null)),
        payment_methods: payment_methods(row, 11)?,
        metadata: json_column(row, 12)?,
        url_callback: row.get(13)?,
        url_activation_webhook: row.get(14)?,
        url_payment_webhook: row.get(15)?,
        magic_link_token: row.get(16)?,
        magic_link_expires_at: row.get(17)?,
        enrolled_method: json_column(row, 18)?,
        cancel_description: row.get(19)?,
        created_at: row.get(20)?,
        updated_at: row.get(21)?,
        activation_mode: {
            let name: String = row.get(22)?;
            ActivationMode::from_name(&name)
                .ok_or_else(|| db::Error::unknown(22, "activation mode"))?
        },
    })
}

/// A new mandate's INSERT, without RETURNING (see `insert`).
macro_rules! insert_mandate {
    () => {
        "INSERT INTO mandates (id, commerce_id, customer_seq, external_id, type, state, name,
            detail, terminate_when_charged, charges, payment_methods, metadata, url_callback,
            url_activation_webhook, url_payment_webhook, magic_link_token,
            magic_link_expires_at, created_at, updated_at, activation_mode)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
            ?18, ?19)
         ON CONFLICT (commerce_id, external_id) DO NOTHING"
    };
}

/// The row `insert` has just written, as `from_row` would read it: the columns it does not
/// set are NULL (a test holds the two equal).
fn inserted_row(
    seq: i64,
    id: String,
    new: &NewMandate<'_>,
    charges: StoredJson,
    metadata: Option<StoredJson>,
) -> MandateRow {
    MandateRow {
        seq,
        id,
        commerce_id: new.commerce_id,
        customer_seq: new.customer_seq,
        external_id: new.external_id.to_string(),
        mandate_type: new.mandate_type,
        state: MandateState::Pending,
        name: new.name.to_string(),
        detail: new.detail.map(str::to_string),
        terminate_when_charged: new.terminate_when_charged,
        charges,
        payment_methods: new.payment_methods.to_vec(),
        metadata,
        url_callback: new.url_callback.map(str::to_string),
        url_activation_webhook: new.url_activation_webhook.map(str::to_string),
        url_payment_webhook: new.url_payment_webhook.map(str::to_string),
        magic_link_token: new.magic_link_token.to_string(),
        magic_link_expires_at: new.magic_link_expires_at.to_string(),
        enrolled_method: None,
        cancel_description: None,
        created_at: new.now.to_string(),
        updated_at: new.now.to_string(),
        activation_mode: new.activation_mode,
    }
}

/// Inserts a PENDING mandate; `DUPLICATED_MANDATE_ID` when its commerce already uses its id.
pub fn insert<'c>(db: impl Into<Db<'c>>, new: &NewMandate<'_>) -> Result<MandateRow> {
    let db = db.into();
    let id = mandato_core::ids::new_id("man");
    let charges = StoredJson::from_value(new.charges);
    let payment_methods = serde_json::to_string(new.payment_methods)?;
    let metadata = new.metadata.map(StoredJson::from_value);
    let values = params![
        &id,
        new.commerce_id,
        new.customer_seq,
        new.external_id,
        new.mandate_type.id(),
        MandateState::Pending.id(),
        new.name,
        new.detail,
        new.terminate_when_charged,
        charges.text(),
        &payment_methods,
        metadata.as_ref().map(StoredJson::text),
        new.url_callback,
        new.url_activation_webhook,
        new.url_payment_webhook,
        new.magic_link_token,
        new.magic_link_expires_at,
        new.now,
        new.activation_mode.name(),
    ];
    let inserted = match db.as_sqlite() {
        // Neither RETURNING nor a trigger on SQLite: either would open a statement journal,
        // which makes FTS5 write a segment per creation (migration 0022). The search terms are
        // written here, and the row is made from what was inserted rather than read back.
        Some(conn) => {
            if db.execute(insert_mandate!(), &values)? == 0 {
                None
            } else {
                let seq = conn.last_insert_rowid();
                // VALUES, not INSERT ... SELECT, which would be a multi-row write. The terms
                // are those of the update trigger (`0020_staff_search.sql`).
                let terms = format!("{} {} {}", new.external_id, id, new.name);
                db.execute(
                    "INSERT INTO mandate_search (rowid, terms) VALUES (?1, ?2)",
                    &params![seq, &terms],
                )?;
                Some(inserted_row(seq, id, new, charges, metadata))
            }
        }
        None => db.query_opt(
            concat!(insert_mandate!(), " RETURNING ", columns!()),
            &values,
            from_row,
        )?,
    };
    inserted.ok_or_else(|| {
        Error::refused_at(
            "DUPLICATED_MANDATE_ID",
            "mandate.id",
            format!(
                "mandate id {} is already used by this commerce",
                new.external_id
            ),
        )
    })
}

/// Writes the search terms of every mandate, for bulk fills with plain SQL (tests and
/// benchmarks) into an empty index: `insert` writes a new mandate's terms itself. SQLite only.
pub fn index_filled_mandates(conn: &rusqlite::Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO mandate_search (rowid, terms)
         SELECT seq, external_id || ' ' || id || ' ' || name FROM mandates",
        [],
    )
}

pub fn by_seq<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<MandateRow> {
    let sql = concat!("SELECT ", columns!(), " FROM mandates WHERE seq = ?1");
    db.into().query_row(sql, &params![seq], from_row)
}

/// The mandate `seq` with its customer, in one statement.
pub fn by_seq_with_customer<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
) -> db::Result<(MandateRow, CustomerRow)> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {}, {} FROM mandates m JOIN customers c ON c.seq = m.customer_seq
             WHERE m.seq = ?1",
            qualified("m", columns!()),
            qualified("c", customers::COLUMNS)
        )
    });
    db.into().query_row(&SQL, &params![seq], |row| {
        let customer = customers::from_row(&row.columns_from(column_count(columns!())))?;
        Ok((from_row(row)?, customer))
    })
}

/// The mandates `seqs` with their customers, in any order; one missing is left out. One
/// statement on PostgreSQL (a charging page's); SQLite reads each in-process.
pub fn by_seqs_with_customer<'c>(
    db: impl Into<Db<'c>>,
    seqs: &[i64],
) -> db::Result<Vec<(MandateRow, CustomerRow)>> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {}, {} FROM mandates m JOIN customers c ON c.seq = m.customer_seq
             WHERE m.seq = {ANY_KEY}",
            qualified("m", columns!()),
            qualified("c", customers::COLUMNS)
        )
    });
    let db = db.into();
    let read = |row: &Row<'_>| {
        let customer = customers::from_row(&row.columns_from(column_count(columns!())))?;
        Ok((from_row(row)?, customer))
    };
    match db {
        Db::Sqlite(_) => {
            let mut found = Vec::with_capacity(seqs.len());
            for seq in seqs {
                match by_seq_with_customer(db, *seq) {
                    Ok(pair) => found.push(pair),
                    Err(db::Error::NoRows) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(found)
        }
        Db::Postgres(_) => db.query_map(&SQL, &params![key_array(seqs).as_str()], read),
    }
}

pub fn by_external_id<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    external_id: &str,
) -> db::Result<Option<MandateRow>> {
    let sql = concat!(
        "SELECT ",
        columns!(),
        " FROM mandates WHERE commerce_id = ?1 AND external_id = ?2"
    );
    db.into()
        .query_opt(sql, &params![commerce_id, external_id], from_row)
}

pub fn by_internal_id<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    id: &str,
) -> db::Result<Option<MandateRow>> {
    let sql = concat!(
        "SELECT ",
        columns!(),
        " FROM mandates WHERE id = ?1 AND commerce_id = ?2"
    );
    db.into()
        .query_opt(sql, &params![id, commerce_id], from_row)
}

/// How a merchant names one of its mandates: by our id or by theirs.
#[derive(Clone, Copy, Debug)]
pub enum MandateKey<'a> {
    Internal(&'a str),
    External(&'a str),
}

/// A mandate with its customer and its installments by due date.
pub struct MandateWithParts {
    pub mandate: MandateRow,
    pub customer: CustomerRow,
    pub installments: Vec<InstallmentRow>,
}

/// `mandate` with its customer and its installments by due date, each read on its own.
pub fn parts_of<'c>(db: impl Into<Db<'c>>, mandate: MandateRow) -> db::Result<MandateWithParts> {
    let db = db.into();
    Ok(MandateWithParts {
        customer: customers::by_seq(db, mandate.customer_seq)?,
        installments: installments::for_mandate(db, mandate.seq)?,
        mandate,
    })
}

/// The statement `with_parts` runs on PostgreSQL for one kind of key: the mandate's columns,
/// its customer's, then its installments by due date as one JSON array of rows
/// (`Row::json_rows`), NULL when it has none. One row and one round trip; a join would
/// repeat the mandate's and the customer's columns on every installment's row.
struct PartsQuery {
    sql: String,
    customer_first: usize,
    installments_column: usize,
}

impl PartsQuery {
    fn new(key_column: &str) -> PartsQuery {
        let mandate_columns = qualified("m", columns!());
        let customer_columns = qualified("c", customers::COLUMNS);
        let installment_columns = qualified("i", installments::COLUMNS);
        let customer_first = column_count(columns!());
        PartsQuery {
            sql: format!(
                "SELECT {mandate_columns}, {customer_columns},
                        (SELECT CAST(json_agg(json_build_array({installment_columns})
                                              ORDER BY i.due_date, i.seq) AS TEXT)
                         FROM installments i WHERE i.mandate_seq = m.seq)
                 FROM mandates m JOIN customers c ON c.seq = m.customer_seq
                 WHERE m.{key_column} = ?1 AND m.commerce_id = ?2"
            ),
            customer_first,
            installments_column: customer_first + column_count(customers::COLUMNS),
        }
    }
}

fn column_count(columns: &str) -> usize {
    columns.split(',').count()
}

static PARTS_BY_INTERNAL_ID: LazyLock<PartsQuery> = LazyLock::new(|| PartsQuery::new("id"));
static PARTS_BY_EXTERNAL_ID: LazyLock<PartsQuery> =
    LazyLock::new(|| PartsQuery::new("external_id"));

/// The commerce's mandate named by `key`, with its customer and its installments by due date.
/// On PostgreSQL one statement (`PartsQuery`): one round trip where a read of each took three.
/// SQLite reads each in-process, where a statement costs no round trip.
pub fn with_parts<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    key: MandateKey<'_>,
) -> db::Result<Option<MandateWithParts>> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        let found = match key {
            MandateKey::Internal(id) => by_internal_id(db, commerce_id, id)?,
            MandateKey::External(id) => by_external_id(db, commerce_id, id)?,
        };
        return found.map(|mandate| parts_of(db, mandate)).transpose();
    }
    let (query, id) = match key {
        MandateKey::Internal(id) => (&*PARTS_BY_INTERNAL_ID, id),
        MandateKey::External(id) => (&*PARTS_BY_EXTERNAL_ID, id),
    };
    db.query_opt(&query.sql, &params![id, commerce_id], |row| {
        let installments: Option<String> = row.get(query.installments_column)?;
        Ok(MandateWithParts {
            mandate: from_row(row)?,
            customer: customers::from_row(&row.columns_from(query.customer_first))?,
            installments: Row::json_rows(installments.as_deref(), installments::from_row)?,
        })
    })
}

/// Moves the mandate to `state`, recording the cancellation reason when there is one.
pub fn set_state<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    state: MandateState,
    cancel_description: Option<&str>,
    now: &str,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE mandates SET state = ?2, cancel_description = COALESCE(?3, cancel_description),
                updated_at = ?4 WHERE seq = ?1",
        &params![seq, state.id(), cancel_description, now],
    )?;
    Ok(())
}

/// Reads again what of a mandate can change while it is ACTIVE (its state, with what
/// `set_state` writes beside it), keeping the rest of `mandate` as it was read.
pub fn refresh_state<'c>(db: impl Into<Db<'c>>, mandate: &mut MandateRow) -> db::Result<()> {
    let (state_id, cancel_description, updated_at): (i64, Option<String>, String) =
        db.into().query_row(
            "SELECT state, cancel_description, updated_at FROM mandates WHERE seq = ?1",
            &params![mandate.seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
    mandate.state =
        MandateState::from_id(state_id).ok_or_else(|| db::Error::unknown(0, "mandate state"))?;
    mandate.cancel_description = cancel_description;
    mandate.updated_at = updated_at;
    Ok(())
}

/// `refresh_state` for many mandates: one statement on PostgreSQL; SQLite reads each
/// in-process. A mandate no longer there keeps what was read.
pub fn refresh_states<'c>(db: impl Into<Db<'c>>, mandates: &mut [MandateRow]) -> db::Result<()> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        return mandates.iter_mut().try_for_each(|m| refresh_state(db, m));
    }
    let seqs: Vec<i64> = mandates.iter().map(|m| m.seq).collect();
    let fresh: std::collections::HashMap<i64, (i64, Option<String>, String)> = db
        .query_map(
            &format!(
                "SELECT seq, state, cancel_description, updated_at FROM mandates
                 WHERE seq = {ANY_KEY}"
            ),
            &params![key_array(&seqs).as_str()],
            |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))),
        )?
        .into_iter()
        .collect();
    for mandate in mandates {
        if let Some((state_id, cancel_description, updated_at)) = fresh.get(&mandate.seq) {
            mandate.state = MandateState::from_id(*state_id)
                .ok_or_else(|| db::Error::unknown(1, "mandate state"))?;
            mandate.cancel_description.clone_from(cancel_description);
            mandate.updated_at.clone_from(updated_at);
        }
    }
    Ok(())
}

/// The next number of the mandate's event sequence (1, 2, 3, ...), taken inside the
/// transaction that writes the event, so numbers have no gaps and no repeats.
pub fn next_event_sequence<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<i64> {
    db.into().query_row(
        "UPDATE mandates SET event_sequence = event_sequence + 1 WHERE seq = ?1 RETURNING event_sequence",
        &params![seq],
        |r| r.get(0),
    )
}

/// Takes `count` numbers of each mandate's event sequence at once (`next_event_sequence` for
/// many events): answers each mandate's last number taken, so its events are numbered
/// `last - count + 1 ..= last`. One statement on PostgreSQL, which locks the mandates in `seq`
/// order first: two engines numbering events of the same mandates wait for each other in one
/// order and cannot deadlock.
pub fn next_event_sequences<'c>(
    db: impl Into<Db<'c>>,
    counts: &[(i64, i64)],
) -> db::Result<Vec<(i64, i64)>> {
    let db = db.into();
    match db {
        Db::Sqlite(_) => counts
            .iter()
            .map(|&(seq, count)| {
                let last: i64 = db.query_row(
                    "UPDATE mandates SET event_sequence = event_sequence + ?2 WHERE seq = ?1
                     RETURNING event_sequence",
                    &params![seq, count],
                    |r| r.get(0),
                )?;
                Ok((seq, last))
            })
            .collect(),
        Db::Postgres(_) => {
            let rows: Vec<Value> = counts
                .iter()
                .map(|(seq, count)| serde_json::json!({"seq": seq, "n": count}))
                .collect();
            db.query_map(
                &format!(
                    "WITH wanted AS (SELECT * FROM {}),
                          locked AS MATERIALIZED (
                              SELECT seq FROM mandates WHERE seq IN (SELECT seq FROM wanted)
                              ORDER BY seq FOR UPDATE)
                     UPDATE mandates m SET event_sequence = m.event_sequence + wanted.n
                     FROM wanted, locked
                     WHERE m.seq = wanted.seq AND locked.seq = wanted.seq
                     RETURNING m.seq, m.event_sequence",
                    db::json_records("seq bigint, n bigint")
                ),
                &params![db::json_rows_param(rows).as_str()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        }
    }
}

/// The mandate a Magic Link token opens, of any commerce.
pub fn by_magic_token<'c>(db: impl Into<Db<'c>>, token: &str) -> db::Result<Option<MandateRow>> {
    let sql = concat!(
        "SELECT ",
        columns!(),
        " FROM mandates WHERE magic_link_token = ?1"
    );
    db.into().query_opt(sql, &params![token], from_row)
}

/// Makes a PENDING mandate ACTIVE with its enrolled method; `Ok(false)` if it was not PENDING
/// any more (another activation won).
pub fn activate<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    enrolled_method: &Value,
    now: &str,
) -> Result<bool> {
    let changed = db.into().execute(
        "UPDATE mandates SET state = ?2, enrolled_method = ?3, activated_at = ?4, updated_at = ?4
         WHERE seq = ?1 AND state = ?5",
        &params![
            seq,
            MandateState::Active.id(),
            &serde_json::to_string(enrolled_method)?,
            now,
            MandateState::Pending.id()
        ],
    )?;
    Ok(changed == 1)
}

/// Replaces the enrolled method of an ACTIVE mandate (the customer changed their card);
/// `Ok(false)` if it is not ACTIVE any more.
pub fn set_enrolled_method<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    enrolled_method: &Value,
    now: &str,
) -> Result<bool> {
    let changed = db.into().execute(
        "UPDATE mandates SET enrolled_method = ?2, updated_at = ?3 WHERE seq = ?1 AND state = ?4",
        &params![
            seq,
            &serde_json::to_string(enrolled_method)?,
            now,
            MandateState::Active.id()
        ],
    )?;
    Ok(changed == 1)
}

/// Claims a portal payment attempt of the mandate's link at `now`, unless `limit` attempts
/// (declines, or attempts still with the processor) fall at or after `since`. Answers the
/// claim, or the time of the oldest attempt that keeps the link at its limit: the link opens
/// again when that one leaves the window. Check and claim are one statement of the caller's
/// write transaction, so concurrent submissions cannot all pass the check.
pub fn claim_portal_attempt<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    now: &str,
    since: &str,
    limit: i64,
) -> db::Result<std::result::Result<i64, String>> {
    let db = db.into();
    // SQLite's planner is told the index (its statistics may be missing); PostgreSQL's picks it.
    let blocking_sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT at FROM portal_attempts INDEXED BY portal_attempts_by_link
             WHERE mandate_seq = ?1 AND at >= ?2 ORDER BY at DESC LIMIT 1 OFFSET ?3"
        }
        Backend::Postgres => {
            "SELECT at FROM portal_attempts
             WHERE mandate_seq = ?1 AND at >= ?2 ORDER BY at DESC LIMIT 1 OFFSET ?3"
        }
    };
    let blocking: Option<String> =
        db.query_opt(blocking_sql, &params![mandate_seq, since, limit - 1], |r| {
            r.get(0)
        })?;
    if let Some(at) = blocking {
        return Ok(Err(at));
    }
    // Attempts that left the window count for nothing any more.
    db.execute(
        "DELETE FROM portal_attempts WHERE mandate_seq = ?1 AND at < ?2",
        &params![mandate_seq, since],
    )?;
    let claim = db.query_row(
        "INSERT INTO portal_attempts (mandate_seq, at) VALUES (?1, ?2) RETURNING seq",
        &params![mandate_seq, now],
        |r| r.get(0),
    )?;
    Ok(Ok(claim))
}

/// Forgets a claimed portal attempt that did not end in a decline (approved, pending, or the
/// processor unreachable): only declines count against the link.
pub fn release_portal_attempt<'c>(db: impl Into<Db<'c>>, claim: i64) -> db::Result<()> {
    db.into().execute(
        "DELETE FROM portal_attempts WHERE seq = ?1",
        &params![claim],
    )?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::commerces::tests::commerce;
    use crate::customers::CustomerInput;
    use crate::pg_test::on_both;
    use mandato_core::domain::contact::Email;
    use mandato_core::domain::external_id::ExternalId;
    use mandato_core::domain::rut::Rut;

    /// A PENDING mandate of a new commerce and customer, for the store tests of any aggregate.
    pub(crate) fn mandate(db: Db<'_>, external_id: &str) -> MandateRow {
        let shop = match crate::commerces::by_code(db, "76123456-0").unwrap() {
            Some(shop) => shop,
            None => commerce(db, "76123456-0"),
        };
        let customer = crate::customers::tests::customer(
            db,
            shop.id,
            &CustomerInput {
                user_id: ExternalId::parse("cust-01").unwrap(),
                rut: Rut::parse("12345678-5").unwrap(),
                first_name: "Ana".to_string(),
                last_name: "Muñoz".to_string(),
                second_last_name: None,
                address: None,
                email: Email::parse("ana@example.cl").unwrap(),
                phone: None,
            },
        );
        insert(db, &new_mandate(shop.id, customer.seq, external_id)).unwrap()
    }

    fn new_mandate(commerce_id: i64, customer_seq: i64, external_id: &str) -> NewMandate<'_> {
        static CHARGES: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| serde_json::json!({"count": 3, "amount": "1000"}));
        NewMandate {
            commerce_id,
            customer_seq,
            external_id,
            mandate_type: MandateType::Dynamic,
            name: "Plan mensual",
            detail: None,
            terminate_when_charged: true,
            charges: &CHARGES,
            payment_methods: &[3, 14],
            metadata: None,
            url_callback: Some("https://tienda.cl/back"),
            url_activation_webhook: None,
            url_payment_webhook: Some("https://tienda.cl/hooks"),
            magic_link_token: external_id,
            magic_link_expires_at: "2026-12-01T00:00:00.000Z",
            activation_mode: ActivationMode::Direct,
            now: "t0",
        }
    }

    #[test]
    fn many_mandates_take_their_event_numbers_together_without_gaps() {
        on_both(|db| {
            let (one, two) = (mandate(db, "m-1"), mandate(db, "m-2"));
            assert_eq!(next_event_sequence(db, one.seq).unwrap(), 1);
            let mut taken = next_event_sequences(db, &[(one.seq, 2), (two.seq, 3)]).unwrap();
            taken.sort();
            assert_eq!(taken, [(one.seq, 3), (two.seq, 3)]);
            assert_eq!(next_event_sequence(db, two.seq).unwrap(), 4);

            set_state(db, two.seq, MandateState::Active, None, "t1").unwrap();
            let mut read = vec![one.clone(), two.clone()];
            refresh_states(db, &mut read).unwrap();
            assert_eq!(read[0].state, one.state);
            assert_eq!(read[1].state, MandateState::Active);
            let mut pairs = by_seqs_with_customer(db, &[two.seq, one.seq, -1]).unwrap();
            pairs.sort_by_key(|(m, _)| m.seq);
            assert_eq!(pairs.len(), 2, "a missing mandate is left out");
            assert_eq!(pairs[1].0.state, MandateState::Active);
            assert_eq!(pairs[0].1.seq, one.customer_seq);
        });
    }

    #[test]
    fn the_row_an_insert_answers_is_the_row_stored() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let first = mandate(db, "m-1");
            let metadata = serde_json::json!({"plan": "oro", "n": 1.50, "list": [1, "a"]});
            let charges = serde_json::json!({"amount": 12345.6789, "currency": "CLF", "count": 12});
            let full = NewMandate {
                detail: Some("detalle ñ"),
                metadata: Some(&metadata),
                charges: &charges,
                url_activation_webhook: Some("https://tienda.cl/act"),
                activation_mode: ActivationMode::Signature,
                mandate_type: MandateType::Subscription,
                terminate_when_charged: false,
                ..new_mandate(shop.id, first.customer_seq, "m-2")
            };
            for created in [first, insert(db, &full).unwrap()] {
                assert_eq!(created, by_seq(db, created.seq).unwrap());
            }
        });
    }

    #[test]
    fn a_damaged_json_column_fails_the_read_and_a_misshapen_one_reads_as_empty() {
        on_both(|db| {
            let created = mandate(db, "m-1");
            let set = |column: &str, text: &str| {
                let sql = format!("UPDATE mandates SET {column} = ?1 WHERE seq = ?2");
                db.execute(&sql, &params![text, created.seq]).unwrap();
            };
            set("payment_methods", r#"[3, "x"]"#);
            assert_eq!(
                by_seq(db, created.seq).unwrap().payment_methods,
                Vec::<i64>::new()
            );
            set("payment_methods", "[3, 14");
            assert!(by_seq(db, created.seq).is_err());
            set("payment_methods", "[3]");
            set("charges", r#"{"amount": 1"#);
            assert!(by_seq(db, created.seq).is_err());
        });
    }

    #[test]
    fn a_mandate_is_stored_once_per_external_id_and_read_back_whole() {
        on_both(|db| {
            let created = mandate(db, "m-1");
            assert_eq!(created.state, MandateState::Pending);
            assert_eq!(created.mandate_type, MandateType::Dynamic);
            assert!(created.terminate_when_charged);
            assert_eq!(created.payment_methods, vec![3, 14]);
            assert_eq!(created.charges.value()["count"], 3);
            assert_eq!(created.metadata, None);

            let again = insert(
                db,
                &new_mandate(created.commerce_id, created.customer_seq, "m-1"),
            );
            match again.unwrap_err() {
                Error::Refused { name, .. } => assert_eq!(name, "DUPLICATED_MANDATE_ID"),
                other => panic!("expected a refusal, got {other}"),
            }

            let by_external = by_external_id(db, created.commerce_id, "m-1")
                .unwrap()
                .unwrap();
            assert_eq!(by_external.seq, created.seq);
            let by_internal = by_internal_id(db, created.commerce_id, &created.id).unwrap();
            assert_eq!(by_internal.unwrap().seq, created.seq);
            assert_eq!(by_magic_token(db, "m-1").unwrap().unwrap().seq, created.seq);
            assert!(by_magic_token(db, "nope").unwrap().is_none());
        });
    }

    #[test]
    fn activation_happens_once_and_states_move() {
        on_both(|db| {
            let mut row = mandate(db, "m-1");
            let method = serde_json::json!({"id": 3, "name": "CREDIT_CARD"});
            assert!(activate(db, row.seq, &method, "t1").unwrap());
            assert!(!activate(db, row.seq, &method, "t2").unwrap());
            assert!(set_enrolled_method(db, row.seq, &method, "t3").unwrap());
            assert_eq!(
                by_seq(db, row.seq).unwrap().enrolled_method,
                Some(StoredJson::from_value(&method))
            );

            set_state(
                db,
                row.seq,
                MandateState::Cancelled,
                Some("customer asked"),
                "t4",
            )
            .unwrap();
            set_state(db, row.seq, MandateState::Cancelled, None, "t5").unwrap();
            refresh_state(db, &mut row).unwrap();
            assert_eq!(row.state, MandateState::Cancelled);
            assert_eq!(row.cancel_description.as_deref(), Some("customer asked"));
            assert_eq!(row.updated_at, "t5");
            let method = serde_json::json!({"id": 14});
            assert!(!set_enrolled_method(db, row.seq, &method, "t6").unwrap());
        });
    }

    #[test]
    fn event_numbers_follow_each_other() {
        on_both(|db| {
            let row = mandate(db, "m-1");
            let numbers: Vec<i64> = (0..3)
                .map(|_| next_event_sequence(db, row.seq).unwrap())
                .collect();
            assert_eq!(numbers, vec![1, 2, 3]);
        });
    }

    #[test]
    fn portal_attempts_stop_at_the_limit_within_the_window() {
        on_both(|db| {
            let row = mandate(db, "m-1");
            let first = claim_portal_attempt(db, row.seq, "t1", "t0", 2)
                .unwrap()
                .unwrap();
            claim_portal_attempt(db, row.seq, "t2", "t0", 2)
                .unwrap()
                .unwrap();
            // Two in the window: the third waits for the oldest to leave it.
            assert_eq!(
                claim_portal_attempt(db, row.seq, "t3", "t0", 2).unwrap(),
                Err("t1".to_string())
            );
            release_portal_attempt(db, first).unwrap();
            claim_portal_attempt(db, row.seq, "t3", "t0", 2)
                .unwrap()
                .unwrap();
            // Once the window moves past them, old attempts count for nothing.
            claim_portal_attempt(db, row.seq, "t5", "t4", 2)
                .unwrap()
                .unwrap();
        });
    }
}
