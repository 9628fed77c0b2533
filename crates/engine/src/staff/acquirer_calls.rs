//! The log of calls to real acquirers (CONTRACT 13), for staff: what was asked of Transbank,
//! about which buy order, with what HTTP status and response code, in how long.

use mandato_core::error::{Error, Result};
use mandato_store::acquirer_calls::{self, CallRow};
use mandato_store::commerces;

use crate::Engine;

/// The most calls one page answers.
pub const MAX_CALLS_PAGE: i64 = 500;

impl Engine {
    /// The commerce's calls, newest first: about `reference` (a buy order) when given, older
    /// than `before` when paging.
    pub fn acquirer_calls(
        &self,
        code: &str,
        reference: Option<&str>,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<CallRow>> {
        self.store().read(|c| {
            let commerce =
                commerces::by_code(c, code)?.ok_or_else(|| Error::not_found("commerce"))?;
            Ok(acquirer_calls::of_commerce(
                c,
                commerce.id,
                reference,
                before,
                limit.clamp(1, MAX_CALLS_PAGE),
            )?)
        })
    }
}
