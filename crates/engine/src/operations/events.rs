//! A commerce's events as the events API reads them, and its redelivery request.

use mandato_core::error::{Error, Result};
use mandato_store::db::Db;
use mandato_store::deliveries::{self, AttemptRow, CommerceEvent, CommerceEventFilter};

use super::Ctx;

/// The commerce's events the filter selects, newest first.
pub fn list(conn: Db<'_>, filter: &CommerceEventFilter) -> Result<Vec<CommerceEvent>> {
    Ok(deliveries::list_for_commerce(conn, filter)?)
}

/// One event of the acting commerce with its attempt log, read in one snapshot so the two
/// cannot disagree (`EVENT_NOT_FOUND` otherwise).
pub fn with_attempts(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    event_id: &str,
) -> Result<(CommerceEvent, Vec<AttemptRow>)> {
    let event = deliveries::for_commerce(conn, ctx.commerce.id, event_id)?
        .ok_or(Error::not_found("event"))?;
    let attempts = deliveries::attempts_of(conn, event.seq)?;
    Ok((event, attempts))
}

/// Sends one of the acting commerce's events again now (`EVENT_HAS_NO_URL` when it has no
/// webhook URL to go to).
pub fn redeliver(tx: Db<'_>, ctx: &Ctx<'_>, event_id: &str) -> Result<()> {
    let event = deliveries::for_commerce(tx, ctx.commerce.id, event_id)?
        .ok_or(Error::not_found("event"))?;
    if event.url.is_none() {
        return Err(Error::refused(
            "EVENT_HAS_NO_URL",
            "the event has no webhook URL to send to",
        ));
    }
    deliveries::request_redelivery(tx, Some(ctx.commerce.id), event_id, &ctx.timestamp())?;
    Ok(())
}
