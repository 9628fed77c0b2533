//! Customers of a commerce. `userId` and RUT are each unique within a commerce.

use serde_json::Value;

use super::StoredJson;
use super::db::{self, Db, Row, params};
use mandato_core::domain::contact::Email;
use mandato_core::domain::external_id::ExternalId;
use mandato_core::domain::rut::Rut;
use mandato_core::error::Result;

#[derive(Debug, Clone, PartialEq)]
pub struct CustomerRow {
    pub seq: i64,
    pub id: String,
    pub commerce_id: i64,
    pub user_id: String,
    pub rut: String,
    pub first_name: String,
    pub last_name: String,
    pub second_last_name: Option<String>,
    pub address: Option<StoredJson>,
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

#[derive(Debug)]
pub enum Upserted {
    Created(CustomerRow),
    Updated(CustomerRow),
}

/// The columns `from_row` reads, as a literal so that hot reads are `concat!`ed once, not
/// formatted per call.
macro_rules! columns {
    () => {
        "seq, id, commerce_id, user_id, rut, first_name, last_name, second_last_name, \
         address, email, phone, created_at, updated_at"
    };
}
pub(crate) const COLUMNS: &str = columns!();

pub(crate) fn from_row(row: &Row<'_>) -> db::Result<CustomerRow> {
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
        address: address.and_then(|a| StoredJson::from_text(a).ok()),
        email: row.get(9)?,
        phone: row.get(10)?,
        created_at: row.get(11)?,
        updated_at: row.get(12)?,
    })
}

pub fn by_user_id<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    user_id: &str,
) -> db::Result<Option<CustomerRow>> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE commerce_id = ?1 AND user_id = ?2");
    db.into()
        .query_opt(&sql, &params![commerce_id, user_id], from_row)
}

pub fn by_internal_id<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    id: &str,
) -> db::Result<Option<CustomerRow>> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE id = ?1 AND commerce_id = ?2");
    db.into()
        .query_opt(&sql, &params![id, commerce_id], from_row)
}

/// The commerce's customer holding `rut`, if any.
pub fn by_rut<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    rut: &str,
) -> db::Result<Option<CustomerRow>> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE commerce_id = ?1 AND rut = ?2");
    db.into()
        .query_opt(&sql, &params![commerce_id, rut], from_row)
}

pub fn by_seq<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<CustomerRow> {
    let sql = concat!("SELECT ", columns!(), " FROM customers WHERE seq = ?1");
    db.into().query_row(sql, &params![seq], from_row)
}

/// Replaces the details of the customer `seq` (never its `userId` nor its RUT).
pub fn update<'c>(
    db: impl Into<Db<'c>>,
    seq: i64,
    input: &CustomerInput,
    now: &str,
) -> Result<CustomerRow> {
    let db = db.into();
    let address = address_json(input)?;
    db.execute(
        "UPDATE customers SET first_name = ?2, last_name = ?3, second_last_name = ?4,
                address = ?5, email = ?6, phone = ?7, updated_at = ?8
         WHERE seq = ?1",
        &params![
            seq,
            &input.first_name,
            &input.last_name,
            &input.second_last_name,
            &address,
            input.email.as_str(),
            &input.phone,
            now
        ],
    )?;
    Ok(by_seq(db, seq)?)
}

/// Registers a new customer of the commerce.
pub fn insert<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    input: &CustomerInput,
    now: &str,
) -> Result<CustomerRow> {
    let id = mandato_core::ids::new_id("usr");
    let address = address_json(input)?;
    let sql = format!(
        "INSERT INTO customers (id, commerce_id, user_id, rut, first_name, last_name,
                second_last_name, address, email, phone, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)
         RETURNING {COLUMNS}"
    );
    Ok(db.into().query_row(
        &sql,
        &params![
            &id,
            commerce_id,
            input.user_id.as_str(),
            input.rut.as_str(),
            &input.first_name,
            &input.last_name,
            &input.second_last_name,
            &address,
            input.email.as_str(),
            &input.phone,
            now
        ],
        from_row,
    )?)
}

fn address_json(input: &CustomerInput) -> Result<Option<String>> {
    Ok(input
        .address
        .as_ref()
        .map(serde_json::to_string)
        .transpose()?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::commerces::tests::commerce;
    use crate::pg_test::on_both;

    /// The commerce's customer with `input`'s `userId`, registered on first use, for the
    /// store tests of any aggregate.
    pub(crate) fn customer(db: Db<'_>, commerce_id: i64, input: &CustomerInput) -> CustomerRow {
        match by_user_id(db, commerce_id, input.user_id.as_str()).unwrap() {
            Some(existing) => existing,
            None => insert(db, commerce_id, input, "t0").unwrap(),
        }
    }

    fn input(user_id: &str, rut: &str, first_name: &str) -> CustomerInput {
        CustomerInput {
            user_id: ExternalId::parse(user_id).unwrap(),
            rut: Rut::parse(rut).unwrap(),
            first_name: first_name.to_string(),
            last_name: "Muñoz".to_string(),
            second_last_name: None,
            address: Some(serde_json::json!({"city": "Santiago"})),
            email: Email::parse("ana@example.cl").unwrap(),
            phone: Some("+56911112222".to_string()),
        }
    }

    #[test]
    fn the_same_user_id_and_rut_update_the_customer() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let created =
                insert(db, shop.id, &input("cust-01", "12345678-5", "Ana"), "t0").unwrap();
            assert!(created.id.starts_with("usr"));
            assert_eq!(
                created.address,
                Some(StoredJson::from_value(
                    &serde_json::json!({"city": "Santiago"})
                ))
            );
            assert_eq!(created.second_last_name, None);
            assert_eq!(
                (created.created_at.as_str(), created.updated_at.as_str()),
                ("t0", "t0")
            );

            let updated = update(
                db,
                created.seq,
                &input("cust-01", "12345678-5", "Anita"),
                "t1",
            )
            .unwrap();
            assert_eq!(updated.seq, created.seq);
            assert_eq!(updated.first_name, "Anita");
            assert_eq!(updated.updated_at, "t1");

            let found = by_internal_id(db, shop.id, &created.id).unwrap().unwrap();
            assert_eq!(found.user_id, "cust-01");
            assert!(by_user_id(db, shop.id, "cust-02").unwrap().is_none());
            assert!(matches!(
                by_seq(db, created.seq + 100),
                Err(db::Error::NoRows)
            ));
        });
    }

    #[test]
    fn a_rut_is_found_within_its_commerce_only() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let ana = insert(db, shop.id, &input("cust-01", "12345678-5", "Ana"), "t0").unwrap();
            let found = by_rut(db, shop.id, "12345678-5").unwrap().unwrap();
            assert_eq!(found.seq, ana.seq);
            let other = commerce(db, "77123456-K");
            assert!(by_rut(db, other.id, "12345678-5").unwrap().is_none());
            insert(db, other.id, &input("cust-02", "12345678-5", "Eva"), "t1").unwrap();
        });
    }
}
