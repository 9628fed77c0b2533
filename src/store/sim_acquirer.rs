//! The simulated acquirer's ledger (its own tables, written on its own connection, as a real
//! acquirer's would be on its own side).

use rusqlite::{Connection, params};

use super::optional;

pub struct SimCharge {
    pub result: String,
    pub code: Option<String>,
    pub settles_as: Option<String>,
    /// The fee of an approved charge (or of a pending one once it settles approved).
    pub fee: Option<String>,
}

pub fn insert_instrument(
    conn: &Connection,
    token: &str,
    kind: &str,
    last4: &str,
    at: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO sim_instruments (token, kind, last4, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![token, kind, last4, at],
    )?;
    Ok(())
}

pub fn instrument(conn: &Connection, token: &str) -> rusqlite::Result<Option<(String, String)>> {
    optional(
        conn.prepare_cached("SELECT kind, last4 FROM sim_instruments WHERE token = ?1")?
            .query_row([token], |r| Ok((r.get(0)?, r.get(1)?))),
    )
}

/// Records a charge unless one with this key exists; returns the charge that holds.
#[allow(clippy::too_many_arguments)]
pub fn charge_once(
    conn: &Connection,
    key: &str,
    token: &str,
    amount: &str,
    currency: &str,
    result: &str,
    code: Option<&str>,
    settles_as: Option<&str>,
    fee: Option<&str>,
    at: &str,
) -> rusqlite::Result<SimCharge> {
    conn.prepare_cached(
        "INSERT INTO sim_charges (idempotency_key, token, amount, currency, result, code, settles_as, fee, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (idempotency_key) DO NOTHING",
    )?
    .execute(params![key, token, amount, currency, result, code, settles_as, fee, at])?;
    Ok(charge(conn, key)?.expect("just written"))
}

pub fn charge(conn: &Connection, key: &str) -> rusqlite::Result<Option<SimCharge>> {
    optional(
        conn.prepare_cached(
            "SELECT result, code, settles_as, fee FROM sim_charges WHERE idempotency_key = ?1",
        )?
        .query_row([key], |r| {
            Ok(SimCharge {
                result: r.get(0)?,
                code: r.get(1)?,
                settles_as: r.get(2)?,
                fee: r.get(3)?,
            })
        }),
    )
}

/// Charges per token: how many times the acquirer charged an instrument (tests count them).
pub fn charges_per_key_prefix(conn: &Connection, prefix: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT count(*) FROM sim_charges WHERE idempotency_key LIKE ?1 || '%'",
        [prefix],
        |r| r.get(0),
    )
}
