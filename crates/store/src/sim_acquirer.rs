//! The simulated acquirer's ledger (its own tables, written on its own connection, as a real
//! acquirer's would be on its own side).

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
