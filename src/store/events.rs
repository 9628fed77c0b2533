//! The outbox: events written in the same transaction as the change that causes them.

use rusqlite::{Connection, params};

pub struct NewEvent<'a> {
    pub id: &'a str,
    pub commerce_id: i64,
    pub mandate_seq: Option<i64>,
    pub installment_seq: Option<i64>,
    pub kind: &'a str,
    pub sequence: i64,
    /// `None` when the merchant gave no webhook URL: the event is kept as history only.
    pub url: Option<&'a str>,
    pub body: &'a str,
    pub created_at: &'a str,
}

#[derive(Debug, Clone)]
pub struct EventRow {
    pub seq: i64,
    pub id: String,
    pub kind: String,
    pub sequence: i64,
    pub url: Option<String>,
    pub body: String,
    pub delivery_state: String,
    pub created_at: String,
}

pub fn insert(conn: &Connection, event: &NewEvent<'_>) -> rusqlite::Result<()> {
    let state = if event.url.is_some() {
        "PENDING"
    } else {
        "NO_URL"
    };
    conn.prepare_cached(
        "INSERT INTO events (id, commerce_id, mandate_seq, installment_seq, kind, sequence, url,
                body, delivery_state, next_attempt_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
    )?
    .execute(params![
        event.id,
        event.commerce_id,
        event.mandate_seq,
        event.installment_seq,
        event.kind,
        event.sequence,
        event.url,
        event.body,
        state,
        event.created_at,
    ])?;
    // Running `mandato listen` receivers get a copy, queued in this same transaction.
    super::listen_leases::queue_for_event(
        conn,
        conn.last_insert_rowid(),
        event.commerce_id,
        event.kind,
        event.created_at,
    )?;
    Ok(())
}

/// Every event of a mandate, in sequence order.
pub fn for_mandate(conn: &Connection, mandate_seq: i64) -> rusqlite::Result<Vec<EventRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, id, kind, sequence, url, body, delivery_state, created_at
         FROM events WHERE mandate_seq = ?1 ORDER BY sequence",
    )?;
    stmt.query_map([mandate_seq], |r| {
        Ok(EventRow {
            seq: r.get(0)?,
            id: r.get(1)?,
            kind: r.get(2)?,
            sequence: r.get(3)?,
            url: r.get(4)?,
            body: r.get(5)?,
            delivery_state: r.get(6)?,
            created_at: r.get(7)?,
        })
    })?
    .collect()
}
