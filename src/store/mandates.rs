//! Mandates: the commitments of a commerce's customers.

use rusqlite::{Connection, Row, params};
use serde_json::Value;

use super::optional;
use crate::domain::activation::ActivationMode;
use crate::domain::state::{MandateState, MandateType};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
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
    pub charges: Value,
    pub payment_methods: Vec<i64>,
    pub metadata: Option<Value>,
    pub url_callback: Option<String>,
    pub url_activation_webhook: Option<String>,
    pub url_payment_webhook: Option<String>,
    pub magic_link_token: String,
    pub magic_link_expires_at: String,
    pub enrolled_method: Option<Value>,
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

const COLUMNS: &str = "seq, id, commerce_id, customer_seq, external_id, type, state, name, detail, \
    terminate_when_charged, charges, payment_methods, metadata, url_callback, \
    url_activation_webhook, url_payment_webhook, magic_link_token, magic_link_expires_at, \
    enrolled_method, cancel_description, created_at, updated_at, activation_mode";

fn json_column(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Value>> {
    let text: Option<String> = row.get(index)?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                index,
                rusqlite::types::Type::Text,
                Box::new(e),
            )
        })
    })
    .transpose()
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<MandateRow> {
    let type_id: i64 = row.get(5)?;
    let state_id: i64 = row.get(6)?;
    let bad = |i: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Integer,
            format!("unknown {what}").into(),
        )
    };
    Ok(MandateRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        commerce_id: row.get(2)?,
        customer_seq: row.get(3)?,
        external_id: row.get(4)?,
        mandate_type: MandateType::from_id(type_id).ok_or_else(|| bad(5, "mandate type"))?,
        state: MandateState::from_id(state_id).ok_or_else(|| bad(6, "mandate state"))?,
        name: row.get(7)?,
        detail: row.get(8)?,
        terminate_when_charged: row.get(9)?,
        charges: json_column(row, 10)?.unwrap_or(Value::Null),
        payment_methods: json_column(row, 11)?
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default(),
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
            ActivationMode::from_name(&name).ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(
                    22,
                    rusqlite::types::Type::Text,
                    "unknown activation mode".into(),
                )
            })?
        },
    })
}

pub fn insert(conn: &Connection, new: &NewMandate<'_>) -> Result<MandateRow> {
    // Cached: prepared once per connection, not on every creation (the profile of creations
    // showed the writer parsing SQL).
    let inserted = conn.prepare_cached(
        "INSERT INTO mandates (id, commerce_id, customer_seq, external_id, type, state, name, detail,
                terminate_when_charged, charges, payment_methods, metadata, url_callback,
                url_activation_webhook, url_payment_webhook, magic_link_token,
                magic_link_expires_at, created_at, updated_at, activation_mode)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?18, ?19)
         ON CONFLICT (commerce_id, external_id) DO NOTHING",
    )?
    .execute(params![
            crate::ids::new_id("man"),
            new.commerce_id,
            new.customer_seq,
            new.external_id,
            new.mandate_type.id(),
            MandateState::Pending.id(),
            new.name,
            new.detail,
            new.terminate_when_charged,
            serde_json::to_string(new.charges)?,
            serde_json::to_string(new.payment_methods)?,
            new.metadata.map(serde_json::to_string).transpose()?,
            new.url_callback,
            new.url_activation_webhook,
            new.url_payment_webhook,
            new.magic_link_token,
            new.magic_link_expires_at,
            new.now,
            new.activation_mode.name(),
        ])?;
    if inserted == 0 {
        return Err(Error::refused_at(
            "DUPLICATED_MANDATE_ID",
            "mandate.id",
            format!(
                "mandate id {} is already used by this commerce",
                new.external_id
            ),
        ));
    }
    Ok(by_seq(conn, conn.last_insert_rowid())?)
}

pub fn by_seq(conn: &Connection, seq: i64) -> rusqlite::Result<MandateRow> {
    let sql = format!("SELECT {COLUMNS} FROM mandates WHERE seq = ?1");
    conn.prepare_cached(&sql)?.query_row([seq], from_row)
}

pub fn by_external_id(
    conn: &Connection,
    commerce_id: i64,
    external_id: &str,
) -> rusqlite::Result<Option<MandateRow>> {
    let sql = format!("SELECT {COLUMNS} FROM mandates WHERE commerce_id = ?1 AND external_id = ?2");
    optional(
        conn.prepare_cached(&sql)?
            .query_row(params![commerce_id, external_id], from_row),
    )
}

pub fn by_internal_id(
    conn: &Connection,
    commerce_id: i64,
    id: &str,
) -> rusqlite::Result<Option<MandateRow>> {
    let sql = format!("SELECT {COLUMNS} FROM mandates WHERE id = ?1 AND commerce_id = ?2");
    optional(
        conn.prepare_cached(&sql)?
            .query_row(params![id, commerce_id], from_row),
    )
}

/// Moves the mandate to `state`, recording the cancellation reason when there is one.
pub fn set_state(
    conn: &Connection,
    seq: i64,
    state: MandateState,
    cancel_description: Option<&str>,
    now: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE mandates SET state = ?2, cancel_description = COALESCE(?3, cancel_description),
                updated_at = ?4 WHERE seq = ?1",
        params![seq, state.id(), cancel_description, now],
    )?;
    Ok(())
}

/// Reads again what of a mandate can change while it is ACTIVE (its state, with what
/// `set_state` writes beside it), keeping the rest of `mandate` as it was read.
pub fn refresh_state(conn: &Connection, mandate: &mut MandateRow) -> rusqlite::Result<()> {
    let (state_id, cancel_description, updated_at): (i64, Option<String>, String) = conn
        .prepare_cached(
            "SELECT state, cancel_description, updated_at FROM mandates WHERE seq = ?1",
        )?
        .query_row([mandate.seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    mandate.state = MandateState::from_id(state_id).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            0,
            rusqlite::types::Type::Integer,
            "unknown mandate state".into(),
        )
    })?;
    mandate.cancel_description = cancel_description;
    mandate.updated_at = updated_at;
    Ok(())
}

/// The next number of the mandate's event sequence (1, 2, 3, ...), taken inside the
/// transaction that writes the event, so numbers have no gaps and no repeats.
pub fn next_event_sequence(conn: &Connection, seq: i64) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "UPDATE mandates SET event_sequence = event_sequence + 1 WHERE seq = ?1 RETURNING event_sequence",
    )?
    .query_row([seq], |r| r.get(0))
}

/// The mandate a Magic Link token opens, of any commerce.
pub fn by_magic_token(conn: &Connection, token: &str) -> rusqlite::Result<Option<MandateRow>> {
    let sql = format!("SELECT {COLUMNS} FROM mandates WHERE magic_link_token = ?1");
    optional(conn.prepare_cached(&sql)?.query_row([token], from_row))
}

/// Makes a PENDING mandate ACTIVE with its enrolled method; `Ok(false)` if it was not PENDING
/// any more (another activation won).
pub fn activate(conn: &Connection, seq: i64, enrolled_method: &Value, now: &str) -> Result<bool> {
    let changed = conn.execute(
        "UPDATE mandates SET state = ?2, enrolled_method = ?3, activated_at = ?4, updated_at = ?4
         WHERE seq = ?1 AND state = ?5",
        params![
            seq,
            MandateState::Active.id(),
            serde_json::to_string(enrolled_method)?,
            now,
            MandateState::Pending.id()
        ],
    )?;
    Ok(changed == 1)
}

/// Replaces the enrolled method of an ACTIVE mandate (the customer changed their card);
/// `Ok(false)` if it is not ACTIVE any more.
pub fn set_enrolled_method(
    conn: &Connection,
    seq: i64,
    enrolled_method: &Value,
    now: &str,
) -> Result<bool> {
    let changed = conn.execute(
        "UPDATE mandates SET enrolled_method = ?2, updated_at = ?3 WHERE seq = ?1 AND state = ?4",
        params![
            seq,
            serde_json::to_string(enrolled_method)?,
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
pub fn claim_portal_attempt(
    conn: &Connection,
    mandate_seq: i64,
    now: &str,
    since: &str,
    limit: i64,
) -> rusqlite::Result<std::result::Result<i64, String>> {
    let blocking: Option<String> = optional(
        conn.prepare_cached(
            "SELECT at FROM portal_attempts INDEXED BY portal_attempts_by_link
             WHERE mandate_seq = ?1 AND at >= ?2 ORDER BY at DESC LIMIT 1 OFFSET ?3",
        )?
        .query_row(params![mandate_seq, since, limit - 1], |r| r.get(0)),
    )?;
    if let Some(at) = blocking {
        return Ok(Err(at));
    }
    // Attempts that left the window count for nothing any more.
    conn.prepare_cached("DELETE FROM portal_attempts WHERE mandate_seq = ?1 AND at < ?2")?
        .execute(params![mandate_seq, since])?;
    conn.prepare_cached("INSERT INTO portal_attempts (mandate_seq, at) VALUES (?1, ?2)")?
        .execute(params![mandate_seq, now])?;
    Ok(Ok(conn.last_insert_rowid()))
}

/// Forgets a claimed portal attempt that did not end in a decline (approved, pending, or the
/// processor unreachable): only declines count against the link.
pub fn release_portal_attempt(conn: &Connection, claim: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM portal_attempts WHERE seq = ?1")?
        .execute([claim])?;
    Ok(())
}
