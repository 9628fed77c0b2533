//! Customers of a commerce. `userId` and RUT are each unique within a commerce.

use rusqlite::{Connection, Row, params};
use serde_json::Value;

use super::optional;
use crate::domain::contact::Email;
use crate::domain::external_id::ExternalId;
use crate::domain::rut::Rut;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct CustomerRow {
    pub seq: i64,
    pub id: String,
    pub commerce_id: i64,
    pub user_id: String,
    pub rut: String,
    pub first_name: String,
    pub last_name: String,
    pub second_last_name: Option<String>,
    pub address: Option<Value>,
    pub email: String,
    pub phone: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A validated customer as the merchant sent it.
#[derive(Debug, Clone)]
pub struct CustomerInput {
    pub user_id: ExternalId,
    pub rut: Rut,
    pub first_name: String,
    pub last_name: String,
    pub second_last_name: Option<String>,
    pub address: Option<Value>,
    pub email: Email,
    pub phone: Option<String>,
}

pub enum Upserted {
    Created(CustomerRow),
    Updated(CustomerRow),
}

const COLUMNS: &str = "seq, id, commerce_id, user_id, rut, first_name, last_name, second_last_name, \
                       address, email, phone, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<CustomerRow> {
    let address: Option<String> = row.get(8)?;
    Ok(CustomerRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        commerce_id: row.get(2)?,
        user_id: row.get(3)?,
        rut: row.get(4)?,
        first_name: row.get(5)?,
        last_name: row.get(6)?,
        second_last_name: row.get(7)?,
        address: address.and_then(|a| serde_json::from_str(&a).ok()),
        email: row.get(9)?,
        phone: row.get(10)?,
        created_at: row.get(11)?,
        updated_at: row.get(12)?,
    })
}

pub fn by_user_id(
    conn: &Connection,
    commerce_id: i64,
    user_id: &str,
) -> rusqlite::Result<Option<CustomerRow>> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE commerce_id = ?1 AND user_id = ?2");
    optional(
        conn.prepare_cached(&sql)?
            .query_row(params![commerce_id, user_id], from_row),
    )
}

pub fn by_internal_id(
    conn: &Connection,
    commerce_id: i64,
    id: &str,
) -> rusqlite::Result<Option<CustomerRow>> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE id = ?1 AND commerce_id = ?2");
    optional(
        conn.prepare_cached(&sql)?
            .query_row(params![id, commerce_id], from_row),
    )
}

fn by_rut(conn: &Connection, commerce_id: i64, rut: &str) -> rusqlite::Result<Option<CustomerRow>> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE commerce_id = ?1 AND rut = ?2");
    optional(
        conn.prepare_cached(&sql)?
            .query_row(params![commerce_id, rut], from_row),
    )
}

pub fn by_seq(conn: &Connection, seq: i64) -> rusqlite::Result<CustomerRow> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE seq = ?1");
    conn.prepare_cached(&sql)?.query_row([seq], from_row)
}

/// Creates the customer, or updates it when the same `userId` comes again with the same RUT
/// (the seed's idempotent functional update). A `userId` with another RUT, or a RUT held by
/// another `userId`, is refused.
pub fn upsert(
    conn: &Connection,
    commerce_id: i64,
    input: &CustomerInput,
    now: &str,
) -> Result<Upserted> {
    let existing = by_user_id(conn, commerce_id, input.user_id.as_str())?;
    if let Some(current) = &existing
        && current.rut != input.rut.as_str()
    {
        return Err(Error::refused_at(
            "USER_RUT_MISMATCH",
            "customer.identificationDocument.number",
            format!("userId {} is registered with another RUT", current.user_id),
        ));
    }
    if existing.is_none()
        && let Some(holder) = by_rut(conn, commerce_id, input.rut.as_str())?
    {
        return Err(Error::refused_at(
            "DUPLICATED_RUT",
            "customer.identificationDocument.number",
            format!(
                "the RUT is already registered for userId {}",
                holder.user_id
            ),
        ));
    }
    let address = input
        .address
        .as_ref()
        .map(serde_json::to_string)
        .transpose()?;
    match existing {
        Some(current) => {
            conn.execute(
                "UPDATE customers SET first_name = ?2, last_name = ?3, second_last_name = ?4,
                        address = ?5, email = ?6, phone = ?7, updated_at = ?8
                 WHERE seq = ?1",
                params![
                    current.seq,
                    input.first_name,
                    input.last_name,
                    input.second_last_name,
                    address,
                    input.email.as_str(),
                    input.phone,
                    now
                ],
            )?;
            Ok(Upserted::Updated(by_seq(conn, current.seq)?))
        }
        None => {
            let id = crate::ids::new_id("usr");
            conn.execute(
                "INSERT INTO customers (id, commerce_id, user_id, rut, first_name, last_name,
                        second_last_name, address, email, phone, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)",
                params![
                    id,
                    commerce_id,
                    input.user_id.as_str(),
                    input.rut.as_str(),
                    input.first_name,
                    input.last_name,
                    input.second_last_name,
                    address,
                    input.email.as_str(),
                    input.phone,
                    now
                ],
            )?;
            Ok(Upserted::Created(by_seq(conn, conn.last_insert_rowid())?))
        }
    }
}
