//! The sandbox's own operations on a commerce's data.

use mandato_core::error::Result;
use mandato_store::db::Db;
use mandato_store::sandbox_reset::{self, ResetCounts};

/// Removes one commerce's test data (its customers too unless `keep_customers`), children
/// first, in the caller's transaction (`POST /sandbox/reset` and `mandato sandbox reset`).
pub fn reset(tx: Db<'_>, commerce_id: i64, keep_customers: bool) -> Result<ResetCounts> {
    Ok(sandbox_reset::reset(tx, commerce_id, keep_customers)?)
}
