//! The simulated acquirer's ledger (its own tables, written on its own connection, as a real
//! acquirer's would be on its own side).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::db::{self, Db, params};
use super::{Durability, Store, open_connection};

/// Where the simulated acquirer keeps its ledger: on SQLite a connection of its own, so its
/// writes commit apart from the engine's transactions as a real acquirer's would; on
/// PostgreSQL the shared pool, each call its own transaction.
pub enum Ledger {
    Sqlite(Mutex<Connection>),
    Postgres(Arc<Store>),
}

impl Ledger {
    pub fn open(store: &Arc<Store>) -> anyhow::Result<Ledger> {
        Ok(match store.path() {
            Some(path) => Ledger::Sqlite(Mutex::new(open_connection(path, Durability::Full)?)),
            None => Ledger::Postgres(Arc::clone(store)),
        })
    }

    /// Runs `f` on the ledger, committed on its own; an error comes back as text, as an
    /// unreachable acquirer's would.
    pub fn with<T>(&self, f: impl FnOnce(Db<'_>) -> db::Result<T>) -> Result<T, String> {
        match self {
            Ledger::Sqlite(conn) => {
                let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                f(Db::Sqlite(&conn)).map_err(|e| e.to_string())
            }
            Ledger::Postgres(store) => store
                .write(|db| Ok(f(db)?))
                .map_err(|e: mandato_core::error::Error| e.to_string()),
        }
    }

    /// Runs `f` on the ledger in one transaction (on SQLite an IMMEDIATE one, so a batch
    /// takes the write lock before it reads); an error comes back as text.
    pub fn transaction<T>(&self, f: impl FnOnce(Db<'_>) -> db::Result<T>) -> Result<T, String> {
        match self {
            Ledger::Sqlite(conn) => {
                let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(|e| e.to_string())?;
                let value = f(Db::Sqlite(&tx)).map_err(|e| e.to_string())?;
                tx.commit().map_err(|e| e.to_string())?;
                Ok(value)
            }
            Ledger::Postgres(store) => store
                .write(|db| Ok(f(db)?))
                .map_err(|e: mandato_core::error::Error| e.to_string()),
        }
    }
}

pub struct SimCharge {
    pub result: String,
    pub code: Option<String>,
    pub settles_as: Option<String>,
    /// The fee of an approved charge (or of a pending one once it settles approved).
    pub fee: Option<String>,
}

pub fn insert_instrument<'c>(
    db: impl Into<Db<'c>>,
    token: &str,
    kind: &str,
    last4: &str,
    at: &str,
) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO sim_instruments (token, kind, last4, created_at) VALUES (?1, ?2, ?3, ?4)",
        &params![token, kind, last4, at],
    )?;
    Ok(())
}

pub fn instrument<'c>(db: impl Into<Db<'c>>, token: &str) -> db::Result<Option<(String, String)>> {
    db.into().query_opt(
        "SELECT kind, last4 FROM sim_instruments WHERE token = ?1",
        &params![token],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Records a charge unless one with this key exists; returns the charge that holds.
#[allow(clippy::too_many_arguments)]
pub fn charge_once<'c>(
    db: impl Into<Db<'c>>,
    key: &str,
    token: &str,
    amount: &str,
    currency: &str,
    result: &str,
    code: Option<&str>,
    settles_as: Option<&str>,
    fee: Option<&str>,
    at: &str,
) -> db::Result<SimCharge> {
    let db = db.into();
    db.execute(
        "INSERT INTO sim_charges (idempotency_key, token, amount, currency, result, code, settles_as, fee, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (idempotency_key) DO NOTHING",
        &params![key, token, amount, currency, result, code, settles_as, fee, at],
    )?;
    charge(db, key)?.ok_or(db::Error::NoRows)
}

pub fn charge<'c>(db: impl Into<Db<'c>>, key: &str) -> db::Result<Option<SimCharge>> {
    db.into().query_opt(
        "SELECT result, code, settles_as, fee FROM sim_charges WHERE idempotency_key = ?1",
        &params![key],
        |r| {
            Ok(SimCharge {
                result: r.get(0)?,
                code: r.get(1)?,
                settles_as: r.get(2)?,
                fee: r.get(3)?,
            })
        },
    )
}

/// `?1`'s JSON array of texts as a set, for `IN`: many keys in one PostgreSQL statement.
const TEXTS_IN_P1: &str = "(SELECT json_array_elements_text(CAST(CAST(?1 AS TEXT) AS json)))";

/// The test instruments `tokens` (kind, last four), by token; one statement on PostgreSQL
/// (a charging page's), each in-process on SQLite.
pub fn instruments_of<'c>(
    db: impl Into<Db<'c>>,
    tokens: &[&str],
) -> db::Result<HashMap<String, (String, String)>> {
    let db = db.into();
    if let Db::Sqlite(_) = db {
        let mut found = HashMap::new();
        for token in tokens {
            if let Some(held) = instrument(db, token)? {
                found.insert(token.to_string(), held);
            }
        }
        return Ok(found);
    }
    Ok(db
        .query_map(
            &format!("SELECT token, kind, last4 FROM sim_instruments WHERE token IN {TEXTS_IN_P1}"),
            &params![serde_json::json!(tokens).to_string().as_str()],
            |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))),
        )?
        .into_iter()
        .collect())
}

/// A charge to record unless one with its key exists (`charge_once`).
#[derive(Clone)]
pub struct NewSimCharge<'a> {
    pub key: &'a str,
    pub token: &'a str,
    pub amount: String,
    pub currency: &'a str,
    pub result: &'a str,
    pub code: Option<String>,
    pub settles_as: Option<&'a str>,
    pub fee: Option<String>,
    pub at: &'a str,
}

/// `charge_once` for many charges: the charge that holds for each key, by key. Two statements
/// on PostgreSQL whatever their number; each in-process on SQLite.
pub fn charge_all_once<'c>(
    db: impl Into<Db<'c>>,
    charges: &[NewSimCharge<'_>],
) -> db::Result<HashMap<String, SimCharge>> {
    let db = db.into();
    if let Db::Sqlite(_) = db {
        let mut held = HashMap::new();
        for c in charges {
            let charge = charge_once(
                db,
                c.key,
                c.token,
                &c.amount,
                c.currency,
                c.result,
                c.code.as_deref(),
                c.settles_as,
                c.fee.as_deref(),
                c.at,
            )?;
            held.insert(c.key.to_string(), charge);
        }
        return Ok(held);
    }
    let rows = charges
        .iter()
        .enumerate()
        .map(|(ord, c)| {
            serde_json::json!({
                "ord": ord, "key": c.key, "token": c.token, "amount": c.amount,
                "currency": c.currency, "result": c.result, "code": c.code,
                "settles_as": c.settles_as, "fee": c.fee, "at": c.at,
            })
        })
        .collect();
    db.execute(
        &format!(
            "INSERT INTO sim_charges (idempotency_key, token, amount, currency, result, code,
                    settles_as, fee, created_at)
             SELECT key, token, amount, currency, result, code, settles_as, fee, at
             FROM {} ORDER BY ord
             ON CONFLICT (idempotency_key) DO NOTHING",
            db::json_records(
                "ord bigint, key text, token text, amount text, currency text, result text,
                 code text, settles_as text, fee text, at text"
            )
        ),
        &params![db::json_rows_param(rows).as_str()],
    )?;
    let keys: Vec<&str> = charges.iter().map(|c| c.key).collect();
    Ok(db
        .query_map(
            &format!(
                "SELECT idempotency_key, result, code, settles_as, fee FROM sim_charges
                 WHERE idempotency_key IN {TEXTS_IN_P1}"
            ),
            &params![serde_json::json!(keys).to_string().as_str()],
            |r| {
                Ok((
                    r.get(0)?,
                    SimCharge {
                        result: r.get(1)?,
                        code: r.get(2)?,
                        settles_as: r.get(3)?,
                        fee: r.get(4)?,
                    },
                ))
            },
        )?
        .into_iter()
        .collect())
}

/// Charges per token: how many times the acquirer charged an instrument (tests count them).
pub fn charges_per_key_prefix<'c>(db: impl Into<Db<'c>>, prefix: &str) -> db::Result<i64> {
    db.into().query_row(
        "SELECT count(*) FROM sim_charges WHERE idempotency_key LIKE CAST(?1 AS TEXT) || '%'",
        &params![prefix],
        |r| r.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    #[test]
    fn charges_recorded_together_keep_the_first_charge_of_each_key() {
        on_both(|db| {
            insert_instrument(db, "tok_1", "CARD", "4242", "t0").unwrap();
            insert_instrument(db, "tok_2", "BANK", "9999", "t0").unwrap();
            let found = instruments_of(db, &["tok_1", "tok_2", "tok_3"]).unwrap();
            assert_eq!(found.len(), 2, "an unknown token is left out");
            assert_eq!(found["tok_2"], ("BANK".to_string(), "9999".to_string()));

            let charge = |key, result, fee: Option<&str>| NewSimCharge {
                key,
                token: "tok_1",
                amount: "1000".to_string(),
                currency: "CLP",
                result,
                code: Some("AUT-1".to_string()),
                settles_as: None,
                fee: fee.map(str::to_string),
                at: "t1",
            };
            charge_once(
                db, "k-1", "tok_1", "1000", "CLP", "REJECTED", None, None, None, "t0",
            )
            .unwrap();
            let held = charge_all_once(
                db,
                &[
                    charge("k-1", "APPROVED", Some("35")),
                    charge("k-2", "APPROVED", Some("35")),
                ],
            )
            .unwrap();
            // The key charged before keeps its first answer; the new one is recorded.
            assert_eq!(held["k-1"].result, "REJECTED");
            assert_eq!(held["k-2"].result, "APPROVED");
            assert_eq!(held["k-2"].fee.as_deref(), Some("35"));
            assert_eq!(charges_per_key_prefix(db, "k-").unwrap(), 2);
        });
    }

    #[test]
    fn a_charge_is_recorded_once_per_key_and_counted_by_prefix() {
        on_both(|db| {
            insert_instrument(db, "tok_1", "CARD_APPROVED", "4242", "t0").unwrap();
            assert_eq!(
                instrument(db, "tok_1").unwrap(),
                Some(("CARD_APPROVED".to_string(), "4242".to_string()))
            );
            assert_eq!(instrument(db, "tok_2").unwrap(), None);

            let first = charge_once(
                db,
                "ins_1-2026-12-01",
                "tok_1",
                "1000",
                "CLP",
                "APPROVED",
                None,
                None,
                Some("12"),
                "t0",
            )
            .unwrap();
            assert_eq!(first.result, "APPROVED");
            // The same key again: the first charge holds, whatever the second asked.
            let again = charge_once(
                db,
                "ins_1-2026-12-01",
                "tok_1",
                "1000",
                "CLP",
                "REJECTED",
                Some("51"),
                None,
                None,
                "t1",
            )
            .unwrap();
            assert_eq!((again.result.as_str(), again.code), ("APPROVED", None));
            assert_eq!(again.fee.as_deref(), Some("12"));
            charge_once(
                db,
                "ins_1-2026-12-02",
                "tok_1",
                "1000",
                "CLP",
                "PENDING",
                None,
                Some("APPROVED"),
                None,
                "t2",
            )
            .unwrap();
            charge_once(
                db,
                "ins_2-2026-12-01",
                "tok_1",
                "5",
                "CLP",
                "APPROVED",
                None,
                None,
                None,
                "t2",
            )
            .unwrap();
            assert_eq!(charges_per_key_prefix(db, "ins_1-").unwrap(), 2);
            assert_eq!(charges_per_key_prefix(db, "ins_9-").unwrap(), 0);
            assert!(charge(db, "ins_3-2026-12-01").unwrap().is_none());
        });
    }
}
