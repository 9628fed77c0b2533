//! Registering customers.

use mandato_store::db::Db;

use super::{Ctx, CustomerRef};
use mandato_core::error::{Error, Result};
use mandato_store::customers::{self, CustomerInput, CustomerRow, Upserted};

pub fn register(conn: Db<'_>, ctx: &Ctx<'_>, input: &CustomerInput) -> Result<Upserted> {
    customers::upsert(conn, ctx.commerce.id, input, &ctx.timestamp())
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
