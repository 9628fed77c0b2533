//! Registering customers.

use mandato_store::db::Db;

use super::{Ctx, CustomerRef};
use mandato_core::error::{Error, Result};
use mandato_store::customers::{self, CustomerInput, CustomerRow, Upserted};

/// The JSON path of a customer's RUT in a request, where its refusals point.
const RUT_FIELD: &str = "customer.identificationDocument.number";

/// Creates the customer, or updates it when the same `userId` comes again with the same RUT
/// (the seed's idempotent functional update). A `userId` with another RUT
/// (`USER_RUT_MISMATCH`), or a RUT held by another `userId` (`DUPLICATED_RUT`), is refused.
pub fn register(conn: Db<'_>, ctx: &Ctx<'_>, input: &CustomerInput) -> Result<Upserted> {
    let now = ctx.timestamp();
    match customers::by_user_id(conn, ctx.commerce.id, input.user_id.as_str())? {
        Some(current) if current.rut != input.rut.as_str() => Err(Error::refused_at(
            "USER_RUT_MISMATCH",
            RUT_FIELD,
            format!("userId {} is registered with another RUT", current.user_id),
        )),
        Some(current) => Ok(Upserted::Updated(customers::update(
            conn,
            current.seq,
            input,
            &now,
        )?)),
        None => {
            if let Some(holder) = customers::by_rut(conn, ctx.commerce.id, input.rut.as_str())? {
                return Err(Error::refused_at(
                    "DUPLICATED_RUT",
                    RUT_FIELD,
                    format!(
                        "the RUT is already registered for userId {}",
                        holder.user_id
                    ),
                ));
            }
            Ok(Upserted::Created(customers::insert(
                conn,
                ctx.commerce.id,
                input,
                &now,
            )?))
        }
    }
}

/// Finds the commerce's customer; `field` is the JSON path named when it does not exist.
pub fn find(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    customer: &CustomerRef,
    field: &str,
) -> Result<CustomerRow> {
    let found = match customer {
        CustomerRef::UserId(id) => customers::by_user_id(conn, ctx.commerce.id, id)?,
        CustomerRef::InternalUserId(id) => customers::by_internal_id(conn, ctx.commerce.id, id)?,
    };
    found.ok_or_else(|| {
        Error::refused_at("USER_NOT_FOUND", field, "no such customer in this commerce")
    })
}
