//! The delivery side of the outbox: which events are due, what each attempt did, which roots
//! are trusted, and the listings of events and attempts.

use rusqlite::{Connection, params};

use super::optional;
use crate::secret::Secret;

/// An event ready to be sent, with what signing it needs.
#[derive(Debug, Clone)]
pub struct DueEvent {
    pub seq: i64,
    pub id: String,
    pub commerce_id: i64,
    pub url: String,
    pub body: String,
    pub attempts: i64,
    pub manual: bool,
    pub created_at: String,
    pub secret: Secret<String>,
    /// The previous secret while its rotation window lasts.
    pub previous_secret: Option<(Secret<String>, String)>,
    pub faults: Option<String>,
}

/// Pending events whose time has come, oldest first, from the one after `after_seq` on (0:
/// from the first). The partial index of pending events serves both the order and the start.
pub fn due(
    conn: &Connection,
    now: &str,
    after_seq: i64,
    limit: usize,
) -> rusqlite::Result<Vec<DueEvent>> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.seq, e.id, e.commerce_id, e.url, e.body, e.attempts, e.manual_pending, e.created_at,
                c.webhook_secret, c.previous_webhook_secret, c.previous_secret_expires_at, c.delivery_faults
         FROM events e JOIN commerces c ON c.id = e.commerce_id
         WHERE e.delivery_state = 'PENDING' AND e.seq > ?3 AND e.next_attempt_at <= ?1
         ORDER BY e.seq LIMIT ?2",
    )?;
    stmt.query_map(params![now, limit as i64, after_seq], |r| {
        let previous: Option<String> = r.get(9)?;
        let expires: Option<String> = r.get(10)?;
        Ok(DueEvent {
            seq: r.get(0)?,
            id: r.get(1)?,
            commerce_id: r.get(2)?,
            url: r.get(3)?,
            body: r.get(4)?,
            attempts: r.get(5)?,
            manual: r.get::<_, i64>(6)? != 0,
            created_at: r.get(7)?,
            secret: Secret::new(r.get(8)?),
            previous_secret: previous.zip(expires).map(|(s, e)| (Secret::new(s), e)),
            faults: r.get(11)?,
        })
    })?
    .collect()
}

/// When the earliest pending event falls due, to sleep until then (the first entry of the
/// `events_pending_due` index).
pub fn next_due_at(conn: &Connection) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT min(next_attempt_at) FROM events WHERE delivery_state = 'PENDING'")?
        .query_row([], |r| r.get(0))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptKind {
    First,
    Retry,
    Manual,
    /// A duplicate sent on purpose by sandbox fault injection.
    Injected,
    /// A copy sent to a `mandato listen` receiver; it leaves the event's own delivery alone.
    Listen,
}

impl AttemptKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptKind::First => "FIRST",
            AttemptKind::Retry => "RETRY",
            AttemptKind::Manual => "MANUAL",
            AttemptKind::Injected => "INJECTED",
            AttemptKind::Listen => "LISTEN",
        }
    }
}

/// What became of the event after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    RetryAt(String),
    Failed,
}

#[derive(Debug, Clone)]
pub struct Attempt {
    pub event_seq: i64,
    pub kind: AttemptKind,
    pub started_at: String,
    pub duration_ms: i64,
    pub status_code: Option<u16>,
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
    pub outcome: Outcome,
    /// Whether it counts against the automatic retry budget.
    pub counts: bool,
    /// The signed headers of the request, when one was made.
    pub sent: Option<SentHeaders>,
}

/// The Standard Webhooks headers one attempt sent besides `webhook-id` (the event's id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentHeaders {
    /// `webhook-timestamp`: Unix seconds.
    pub timestamp: i64,
    /// `webhook-signature`: one or two space-separated `v1,<base64>` (two during a rotation).
    pub signature: String,
}

/// Records attempts and moves their events on, all in the caller's transaction.
pub fn record_attempts(conn: &Connection, attempts: &[Attempt]) -> rusqlite::Result<()> {
    // An event removed while it was being sent (a sandbox reset) takes no attempt: its row
    // would break the foreign key and roll back the whole batch, so the other events of the
    // batch would be sent again.
    let mut insert = conn.prepare_cached(
        "INSERT INTO delivery_attempts (event_seq, kind, started_at, duration_ms, status_code,
                response_excerpt, error, outcome, webhook_timestamp, webhook_signature)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
         WHERE EXISTS (SELECT 1 FROM events WHERE seq = ?1)",
    )?;
    // A redelivery asked for while an automatic attempt was in flight (?6 = 1) is kept: the
    // event stays PENDING, due at the time the request set, so the manual send still happens.
    let mut update = conn.prepare_cached(
        "UPDATE events SET
                delivery_state = CASE WHEN ?6 AND manual_pending = 1 THEN 'PENDING' ELSE ?2 END,
                next_attempt_at = CASE WHEN ?6 AND manual_pending = 1 THEN next_attempt_at ELSE ?3 END,
                manual_pending = CASE WHEN ?6 THEN manual_pending ELSE 0 END,
                attempts = attempts + ?4, delivered_at = COALESCE(?5, delivered_at)
         WHERE seq = ?1",
    )?;
    for a in attempts {
        let (state, next, outcome) = match &a.outcome {
            Outcome::Delivered => ("DELIVERED", None, "DELIVERED"),
            Outcome::RetryAt(at) => ("PENDING", Some(at.as_str()), "RETRY"),
            Outcome::Failed => ("FAILED", None, "FAILED"),
        };
        insert.execute(params![
            a.event_seq,
            a.kind.as_str(),
            a.started_at,
            a.duration_ms,
            a.status_code,
            a.response_excerpt,
            a.error,
            outcome,
            a.sent.as_ref().map(|h| h.timestamp),
            a.sent.as_ref().map(|h| h.signature.as_str()),
        ])?;
        if !matches!(a.kind, AttemptKind::Injected | AttemptKind::Listen) {
            let delivered_at = (a.outcome == Outcome::Delivered).then_some(a.started_at.as_str());
            let automatic = matches!(a.kind, AttemptKind::First | AttemptKind::Retry);
            update.execute(params![
                a.event_seq,
                state,
                next,
                a.counts as i64,
                delivered_at,
                automatic
            ])?;
        }
    }
    Ok(())
}

/// Schedules an event to be sent again now, whatever its state. `Ok(false)`: not this
/// commerce's event, or it has no URL.
pub fn request_redelivery(
    conn: &Connection,
    commerce_id: Option<i64>,
    event_id: &str,
    now: &str,
) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE events SET delivery_state = 'PENDING', next_attempt_at = ?3, manual_pending = 1
         WHERE id = ?1 AND (?2 IS NULL OR commerce_id = ?2) AND url IS NOT NULL",
        params![event_id, commerce_id, now],
    )?;
    Ok(changed > 0)
}

pub fn trusted_roots(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT pem FROM trusted_roots ORDER BY seq")?;
    stmt.query_map([], |r| r.get(0))?.collect()
}

/// A number that changes whenever the trusted roots do, so the worker knows to reload.
pub fn trusted_roots_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT coalesce(max(seq), 0) * 1000003 + count(*) FROM trusted_roots")?
        .query_row([], |r| r.get(0))
}

/// Adds a root; `Ok(false)` when it was already trusted.
pub fn add_trusted_root(
    conn: &Connection,
    pem: &str,
    fingerprint: &str,
    subject: &str,
    at: &str,
) -> rusqlite::Result<bool> {
    let added = conn.execute(
        "INSERT INTO trusted_roots (pem, fingerprint, subject, added_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (fingerprint) DO NOTHING",
        params![pem, fingerprint, subject, at],
    )?;
    Ok(added > 0)
}

/// Rotates a commerce's webhook secret; the old one stays valid until `previous_expires_at`.
pub fn rotate_secret(
    conn: &Connection,
    commerce_code: &str,
    new_secret: &Secret<String>,
    previous_expires_at: &str,
) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE commerces SET previous_webhook_secret = webhook_secret,
                previous_secret_expires_at = ?3, webhook_secret = ?2
         WHERE code = ?1",
        params![commerce_code, new_secret.expose(), previous_expires_at],
    )?;
    super::commerces::credentials_changed();
    Ok(changed > 0)
}

pub fn set_faults(
    conn: &Connection,
    commerce_id: i64,
    faults: Option<&str>,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE commerces SET delivery_faults = ?2 WHERE id = ?1",
        params![commerce_id, faults],
    )?;
    Ok(())
}

pub fn faults(conn: &Connection, commerce_id: i64) -> rusqlite::Result<Option<String>> {
    Ok(optional(conn.query_row(
        "SELECT delivery_faults FROM commerces WHERE id = ?1",
        [commerce_id],
        |r| r.get::<_, Option<String>>(0),
    ))?
    .flatten())
}

/// An event as listed for inspection, with its attempts.
#[derive(Debug, Clone)]
pub struct EventSummary {
    pub event_id: String,
    pub kind: String,
    pub sequence: i64,
    pub url: Option<String>,
    pub delivery_state: String,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub delivered_at: Option<String>,
}

#[derive(Debug, Clone)]
pub struct AttemptRow {
    pub kind: String,
    pub started_at: String,
    pub duration_ms: i64,
    pub status_code: Option<i64>,
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
    pub outcome: String,
    pub sent: Option<SentHeaders>,
}

pub fn event_by_id(
    conn: &Connection,
    event_id: &str,
) -> rusqlite::Result<Option<(i64, EventSummary)>> {
    optional(conn.query_row(
        "SELECT seq, id, kind, sequence, url, delivery_state, attempts, next_attempt_at, created_at, delivered_at
         FROM events WHERE id = ?1",
        [event_id],
        |r| {
            Ok((
                r.get(0)?,
                EventSummary {
                    event_id: r.get(1)?,
                    kind: r.get(2)?,
                    sequence: r.get(3)?,
                    url: r.get(4)?,
                    delivery_state: r.get(5)?,
                    attempts: r.get(6)?,
                    next_attempt_at: r.get(7)?,
                    created_at: r.get(8)?,
                    delivered_at: r.get(9)?,
                },
            ))
        },
    ))
}

pub fn attempts_of(conn: &Connection, event_seq: i64) -> rusqlite::Result<Vec<AttemptRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT kind, started_at, duration_ms, status_code, response_excerpt, error, outcome,
                webhook_timestamp, webhook_signature
         FROM delivery_attempts WHERE event_seq = ?1 ORDER BY seq",
    )?;
    stmt.query_map([event_seq], |r| {
        Ok(AttemptRow {
            kind: r.get(0)?,
            started_at: r.get(1)?,
            duration_ms: r.get(2)?,
            status_code: r.get(3)?,
            response_excerpt: r.get(4)?,
            error: r.get(5)?,
            outcome: r.get(6)?,
            sent: match (r.get(7)?, r.get(8)?) {
                (Some(timestamp), Some(signature)) => Some(SentHeaders {
                    timestamp,
                    signature,
                }),
                _ => None,
            },
        })
    })?
    .collect()
}

/// An event with its owner and exact body, for inspection.
pub fn event_with_body(
    conn: &Connection,
    event_id: &str,
) -> rusqlite::Result<Option<(i64, i64, EventSummary, String)>> {
    let Some((seq, summary)) = event_by_id(conn, event_id)? else {
        return Ok(None);
    };
    let (commerce_id, body) = conn.query_row(
        "SELECT commerce_id, body FROM events WHERE seq = ?1",
        [seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(Some((seq, commerce_id, summary, body)))
}

/// Filters of the staff's event listing; newest first, keyset-paged by `before_seq`.
#[derive(Debug, Default)]
pub struct EventFilter {
    pub mandate_id: Option<String>,
    pub installment_id: Option<String>,
    pub delivery_state: Option<String>,
    pub kind: Option<String>,
    pub created_from: Option<String>,
    pub created_to: Option<String>,
    pub before_seq: Option<i64>,
    pub limit: i64,
}

#[derive(Debug, Clone)]
pub struct ListedEvent {
    pub seq: i64,
    pub summary: EventSummary,
    pub commerce_code: String,
    pub mandate_id: Option<String>,
    pub installment_id: Option<String>,
    /// The merchant's id of the mandate.
    pub mandate_external_id: Option<String>,
    /// First name, last name and second last name of the mandate's customer.
    pub customer_name: Option<String>,
    /// The state the event announces: the installment's, the mandate's, or for a signature
    /// process event its type (`SIGNATURE_COMPLETED`).
    pub announced_state: Option<String>,
    pub rejection_code: Option<String>,
    /// The HTTP status of the latest real attempt (neither a sandbox duplicate nor a listener
    /// copy), and its error when no answer came.
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
}

pub fn list_events(conn: &Connection, filter: &EventFilter) -> rusqlite::Result<Vec<ListedEvent>> {
    use rusqlite::types::Value as SqlValue;
    let mut sql = String::from(
        "SELECT e.seq, e.id, e.kind, e.sequence, e.url, e.delivery_state, e.attempts, e.next_attempt_at,
                e.created_at, e.delivered_at, c.code, m.id, i.id, m.external_id,
                trim(u.first_name || ' ' || u.last_name || ' ' || coalesce(u.second_last_name, '')),
                CASE WHEN e.kind = 'signature' THEN json_extract(e.body, '$.event')
                     ELSE coalesce(json_extract(e.body, '$.installment.state.name'),
                                   json_extract(e.body, '$.product.state.name')) END,
                json_extract(e.body, '$.installment.rejection.code'),
                la.status_code, la.error
         FROM events e
         JOIN commerces c ON c.id = e.commerce_id
         LEFT JOIN mandates m ON m.seq = e.mandate_seq
         LEFT JOIN customers u ON u.seq = m.customer_seq
         LEFT JOIN installments i ON i.seq = e.installment_seq
         LEFT JOIN delivery_attempts la ON la.seq = (
             SELECT max(a.seq) FROM delivery_attempts a
             WHERE a.event_seq = e.seq AND a.kind IN ('FIRST', 'RETRY', 'MANUAL'))
         WHERE 1 = 1",
    );
    let mut args: Vec<SqlValue> = Vec::new();
    let mut push = |clause: &str, value: SqlValue| {
        sql.push_str(clause);
        args.push(value);
    };
    if let Some(v) = &filter.mandate_id {
        push(" AND m.id = ?", v.clone().into());
    }
    if let Some(v) = &filter.installment_id {
        push(" AND i.id = ?", v.clone().into());
    }
    if let Some(v) = &filter.delivery_state {
        push(" AND e.delivery_state = ?", v.clone().into());
    }
    if let Some(v) = &filter.kind {
        push(" AND e.kind = ?", v.clone().into());
    }
    if let Some(v) = &filter.created_from {
        push(" AND e.created_at >= ?", v.clone().into());
    }
    if let Some(v) = &filter.created_to {
        push(" AND e.created_at < ?", v.clone().into());
    }
    if let Some(v) = filter.before_seq {
        push(" AND e.seq < ?", v.into());
    }
    sql.push_str(" ORDER BY e.seq DESC LIMIT ?");
    args.push(filter.limit.into());
    let mut stmt = conn.prepare_cached(&sql)?;
    stmt.query_map(rusqlite::params_from_iter(args), |r| {
        Ok(ListedEvent {
            seq: r.get(0)?,
            summary: EventSummary {
                event_id: r.get(1)?,
                kind: r.get(2)?,
                sequence: r.get(3)?,
                url: r.get(4)?,
                delivery_state: r.get(5)?,
                attempts: r.get(6)?,
                next_attempt_at: r.get(7)?,
                created_at: r.get(8)?,
                delivered_at: r.get(9)?,
            },
            commerce_code: r.get(10)?,
            mandate_id: r.get(11)?,
            installment_id: r.get(12)?,
            mandate_external_id: r.get(13)?,
            customer_name: r.get(14)?,
            announced_state: r.get(15)?,
            rejection_code: r.get(16)?,
            last_status_code: r.get(17)?,
            last_error: r.get(18)?,
        })
    })?
    .collect()
}

/// Filters of a commerce's own event listing (the merchant Events API and `mandato events`);
/// newest first, keyset-paged by `before_seq`.
#[derive(Debug)]
pub struct CommerceEventFilter {
    pub commerce_id: i64,
    pub kind: Option<String>,
    pub mandate_id: Option<String>,
    pub delivery_state: Option<String>,
    pub before_seq: Option<i64>,
    /// Only events after this one (for following new events), oldest first then.
    pub after_seq: Option<i64>,
    pub limit: i64,
}

/// An event of a commerce with its exact body; `attempts` counts every logged attempt.
#[derive(Debug, Clone)]
pub struct CommerceEvent {
    pub seq: i64,
    pub event_id: String,
    pub kind: String,
    pub sequence: i64,
    pub mandate_id: Option<String>,
    pub signature_id: Option<String>,
    pub created_at: String,
    pub delivery_state: String,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub url: Option<String>,
    pub body: String,
}

const COMMERCE_EVENT_SELECT: &str =
    "SELECT e.seq, e.id, e.kind, e.sequence, m.id, sp.id, e.created_at,
        e.delivery_state,
        (SELECT count(*) FROM delivery_attempts a WHERE a.event_seq = e.seq),
        e.next_attempt_at, e.url, e.body
     FROM events e
     LEFT JOIN mandates m ON m.seq = e.mandate_seq
     LEFT JOIN signature_processes sp ON sp.seq = e.signature_process_seq";

fn commerce_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<CommerceEvent> {
    let state: String = r.get(7)?;
    Ok(CommerceEvent {
        seq: r.get(0)?,
        event_id: r.get(1)?,
        kind: r.get(2)?,
        sequence: r.get(3)?,
        mandate_id: r.get(4)?,
        signature_id: r.get(5)?,
        created_at: r.get(6)?,
        // Nothing more is sent once delivered or failed; a stale retry time would mislead.
        next_attempt_at: if state == "PENDING" { r.get(9)? } else { None },
        delivery_state: state,
        attempts: r.get(8)?,
        url: r.get(10)?,
        body: r.get(11)?,
    })
}

/// A commerce's events, newest first (oldest first with `after_seq`). The keyset on `seq`
/// (assigned in commit order of the single writer) means a page never repeats or skips an
/// event, however many arrive meanwhile: they all sort before the first page.
pub fn list_for_commerce(
    conn: &Connection,
    filter: &CommerceEventFilter,
) -> rusqlite::Result<Vec<CommerceEvent>> {
    use rusqlite::types::Value as SqlValue;
    let mut sql = format!("{COMMERCE_EVENT_SELECT} WHERE e.commerce_id = ?");
    let mut args: Vec<SqlValue> = vec![filter.commerce_id.into()];
    let mut push = |clause: &str, value: SqlValue| {
        sql.push_str(clause);
        args.push(value);
    };
    if let Some(v) = &filter.kind {
        push(" AND e.kind = ?", v.clone().into());
    }
    if let Some(v) = &filter.mandate_id {
        // The mandate must be this commerce's too: another's id simply matches nothing.
        push(
            " AND e.mandate_seq = (SELECT seq FROM mandates WHERE id = ? AND commerce_id = e.commerce_id)",
            v.clone().into(),
        );
    }
    if let Some(v) = &filter.delivery_state {
        push(" AND e.delivery_state = ?", v.clone().into());
    }
    if let Some(v) = filter.before_seq {
        push(" AND e.seq < ?", v.into());
    }
    let ascending = filter.after_seq.is_some();
    if let Some(v) = filter.after_seq {
        push(" AND e.seq > ?", v.into());
    }
    sql.push_str(if ascending {
        " ORDER BY e.seq ASC LIMIT ?"
    } else {
        " ORDER BY e.seq DESC LIMIT ?"
    });
    args.push(filter.limit.into());
    let mut stmt = conn.prepare_cached(&sql)?;
    stmt.query_map(rusqlite::params_from_iter(args), commerce_event)?
        .collect()
}

/// One event of a commerce; `None` when it does not exist or is another commerce's.
pub fn for_commerce(
    conn: &Connection,
    commerce_id: i64,
    event_id: &str,
) -> rusqlite::Result<Option<CommerceEvent>> {
    let sql = format!("{COMMERCE_EVENT_SELECT} WHERE e.id = ?1 AND e.commerce_id = ?2");
    optional(
        conn.prepare_cached(&sql)?
            .query_row(params![event_id, commerce_id], commerce_event),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{commerces, events};

    #[test]
    fn an_event_removed_in_flight_does_not_undo_the_batch() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrations::run(&mut conn).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON").unwrap();
        let secret = Secret::new("whsec_dGVzdA==".to_string());
        let commerce = commerces::insert(
            &conn,
            &commerces::NewCommerce {
                code: "76123456-0",
                name: "Tienda",
                password_hash: "x",
                channels: None,
                payment_methods: &[],
                webhook_secret: &secret,
                authorization_required: false,
                created_at: "2026-11-25T00:00:00Z",
            },
        )
        .unwrap();
        for (n, id) in ["evt_kept", "evt_gone"].into_iter().enumerate() {
            events::insert(
                &conn,
                &events::NewEvent {
                    id,
                    commerce_id: commerce.id,
                    mandate_seq: None,
                    installment_seq: None,
                    kind: "payment",
                    sequence: n as i64 + 1,
                    url: Some("https://localhost/hooks"),
                    body: "{}",
                    created_at: "2026-11-25T00:00:00Z",
                },
            )
            .unwrap();
        }
        let seq = |id: &str| -> i64 {
            conn.query_row("SELECT seq FROM events WHERE id = ?1", [id], |r| r.get(0))
                .unwrap()
        };
        let attempt = |event_seq| Attempt {
            event_seq,
            kind: AttemptKind::First,
            started_at: "2026-11-25T00:00:01Z".into(),
            duration_ms: 3,
            status_code: Some(200),
            response_excerpt: None,
            error: None,
            outcome: Outcome::Delivered,
            counts: true,
            sent: None,
        };
        let (kept, gone) = (seq("evt_kept"), seq("evt_gone"));
        conn.execute("DELETE FROM events WHERE seq = ?1", [gone])
            .unwrap();
        record_attempts(&conn, &[attempt(gone), attempt(kept)]).unwrap();
        let state: String = conn
            .query_row(
                "SELECT delivery_state FROM events WHERE seq = ?1",
                [kept],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(state, "DELIVERED");
        let logged: i64 = conn
            .query_row("SELECT count(*) FROM delivery_attempts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(logged, 1);
    }
}
