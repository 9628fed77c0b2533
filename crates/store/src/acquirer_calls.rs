//! The log of calls to real acquirers (`acquirer_calls`): one row per HTTP call, never a
//! secret, a token or card data.

use super::db::{self, Db, params};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquirerCall {
    pub commerce_id: i64,
    /// `oneclick.authorize`, `oneclick.status`, `webpay.commit`, ...
    pub operation: String,
    /// The buy order (parent, for Oneclick) the call concerned, when it names one.
    pub reference: Option<String>,
    /// `None`: no answer arrived (timeout, connection lost).
    pub http_status: Option<i64>,
    /// The acquirer's `response_code`, when the answer carried one.
    pub response_code: Option<i64>,
    pub duration_ms: i64,
    /// Why the call failed, without its URL.
    pub error: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub struct CallRow {
    pub seq: i64,
    pub call: AcquirerCall,
}

pub fn insert<'c>(db: impl Into<Db<'c>>, call: &AcquirerCall) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO acquirer_calls (commerce_id, operation, reference, http_status, response_code,
             duration_ms, error, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        &params![
            call.commerce_id,
            call.operation.as_str(),
            call.reference.as_deref(),
            call.http_status,
            call.response_code,
            call.duration_ms,
            call.error.as_deref(),
            call.created_at.as_str()
        ],
    )?;
    Ok(())
}

/// The commerce's calls, newest first: those about `reference` when given, older than
/// `before` (a `seq`) when paging.
pub fn of_commerce<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    reference: Option<&str>,
    before: Option<i64>,
    limit: i64,
) -> db::Result<Vec<CallRow>> {
    // Each filter its own statement: PostgreSQL cannot type a parameter only compared to NULL.
    let mut sql = String::from(
        "SELECT seq, commerce_id, operation, reference, http_status, response_code, duration_ms,
                error, created_at
         FROM acquirer_calls WHERE commerce_id = ?1 AND seq < ?2",
    );
    if reference.is_some() {
        sql.push_str(" AND reference = ?4");
    }
    sql.push_str(" ORDER BY seq DESC LIMIT ?3");
    let before = before.unwrap_or(i64::MAX);
    let params = match reference {
        Some(reference) => params![commerce_id, before, limit, reference].to_vec(),
        None => params![commerce_id, before, limit].to_vec(),
    };
    db.into().query_map(&sql, &params, |r| {
        Ok(CallRow {
            seq: r.get(0)?,
            call: AcquirerCall {
                commerce_id: r.get(1)?,
                operation: r.get(2)?,
                reference: r.get(3)?,
                http_status: r.get(4)?,
                response_code: r.get(5)?,
                duration_ms: r.get(6)?,
                error: r.get(7)?,
                created_at: r.get(8)?,
            },
        })
    })
}

/// Removes calls made before `before`; answers how many.
pub fn prune<'c>(db: impl Into<Db<'c>>, before: &str) -> db::Result<usize> {
    let removed = db.into().execute(
        "DELETE FROM acquirer_calls WHERE created_at < ?1",
        &params![before],
    )?;
    Ok(removed as usize)
}
