//! UF values: the import shared by `mandato uf import` and the staff's Settings › UF. A day's
//! value replaces the one already stored for that day; installments in UF waiting for a value
//! are charged at the next run.

use mandato_core::domain::uf::UfValue;
use mandato_core::error::Error;
use mandato_store::charging::upsert_uf;
use mandato_store::db::Db;

/// Stores every value in the caller's transaction, all or nothing.
pub fn import(tx: Db<'_>, values: &[UfValue]) -> Result<(), Error> {
    for uf in values {
        upsert_uf(tx, &uf.date.to_string(), &uf.value.to_string())?;
    }
    Ok(())
}
