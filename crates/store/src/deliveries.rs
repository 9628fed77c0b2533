//! The delivery side of the outbox: which events are due, what each attempt did, which roots
//! are trusted, and the listings of events and attempts.

use std::time::Duration;

use chrono::DateTime;

use super::db::{self, Backend, Db, Param, Row, params};
use mandato_core::clock::timestamp;
use mandato_core::secret::Secret;

/// How long an engine keeps the events it took to send, unless `serve --delivery-lease-secs`
/// says otherwise (PostgreSQL only, where several engines share the outbox): long enough for an event to wait in the sending window for its host and
/// be attempted (15 s at most by default), short enough that the events of an engine that died
/// go to the others soon. An event held past its lease may be sent by another engine as well;
/// receivers tell repeats apart by `webhook-id`, as the retries already require.
pub const CLAIM_LEASE: Duration = Duration::from_secs(5 * 60);

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
///
/// On PostgreSQL the same read claims the events for this engine until `now + lease`:
/// several engines share the outbox there, and an event is handed to one of them at a time.
/// Rows another engine is claiming at that moment are skipped (`SKIP LOCKED`), not waited for;
/// an event whose lease has passed (its engine died) is due again. `record_attempts` ends the
/// claim. SQLite has one engine, whose sending window already keeps an event from being taken
/// twice, so its read stays a plain read.
pub fn due<'c>(
    db: impl Into<Db<'c>>,
    now: &str,
    after_seq: i64,
    limit: usize,
    lease: Duration,
) -> db::Result<Vec<DueEvent>> {
    let db = db.into();
    match db.backend() {
        Backend::Sqlite => db.query_map(
            "SELECT e.seq, e.id, e.commerce_id, e.url, e.body, e.attempts, e.manual_pending, e.created_at,
                c.webhook_secret, c.previous_webhook_secret, c.previous_secret_expires_at, c.delivery_faults
         FROM events e JOIN commerces c ON c.id = e.commerce_id
         WHERE e.delivery_state = 'PENDING' AND e.seq > ?3 AND e.next_attempt_at <= ?1
         ORDER BY e.seq LIMIT ?2",
            &params![now, limit as i64, after_seq],
            due_event,
        ),
        Backend::Postgres => db.query_map(
            "WITH claimed AS (
               UPDATE events SET claimed_until = ?4
               WHERE seq IN (
                 SELECT seq FROM events
                 WHERE delivery_state = 'PENDING' AND seq > ?3 AND next_attempt_at <= ?1
                   AND (claimed_until IS NULL OR claimed_until <= ?1)
                 ORDER BY seq LIMIT ?2
                 FOR UPDATE SKIP LOCKED)
               RETURNING seq, id, commerce_id, url, body, attempts, manual_pending, created_at)
             SELECT e.seq, e.id, e.commerce_id, e.url, e.body, e.attempts, e.manual_pending, e.created_at,
                c.webhook_secret, c.previous_webhook_secret, c.previous_secret_expires_at, c.delivery_faults
             FROM claimed e JOIN commerces c ON c.id = e.commerce_id
             ORDER BY e.seq",
            &params![now, limit as i64, after_seq, lease_end(now, lease)?.as_str()],
            due_event,
        ),
    }
}

/// When a claim taken at `now` (a timestamp the store wrote) for `lease` lapses.
fn lease_end(now: &str, lease: Duration) -> db::Result<String> {
    let now = DateTime::parse_from_rfc3339(now)
        .map_err(|e| db::Error::column(0, format_args!("the time {now:?} is not RFC 3339: {e}")))?;
    let lease = chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
    Ok(timestamp((now + lease).to_utc()))
}

fn due_event(r: &Row<'_>) -> db::Result<DueEvent> {
    let previous: Option<String> = r.get(9)?;
    let expires: Option<String> = r.get(10)?;
    Ok(DueEvent {
        seq: r.get(0)?,
        id: r.get(1)?,
        commerce_id: r.get(2)?,
        url: r.get(3)?,
        body: r.get(4)?,
        attempts: r.get(5)?,
        manual: r.get(6)?,
        created_at: r.get(7)?,
        secret: Secret::new(r.get(8)?),
        previous_secret: previous.zip(expires).map(|(s, e)| (Secret::new(s), e)),
        faults: r.get(11)?,
    })
}

/// Gives back events `due` claimed that the worker decided not to send yet (the sandbox's
/// `delaySeconds`), so that its next read finds them again rather than after the lease. Only
/// PostgreSQL claims in the database; on SQLite there is nothing to give back.
pub fn release_claims<'c>(db: impl Into<Db<'c>>, seqs: &[i64]) -> db::Result<()> {
    let db = db.into();
    if db.backend() == Backend::Sqlite {
        return Ok(());
    }
    for &seq in seqs {
        db.execute(
            "UPDATE events SET claimed_until = NULL WHERE seq = ?1",
            &params![seq],
        )?;
    }
    Ok(())
}

/// When the earliest pending event falls due, to sleep until then (the first entry of the
/// `events_pending_due` index).
///
/// On PostgreSQL an event another engine holds is due for this one only when its lease ends
/// (`GREATEST` ignores a NULL `claimed_until`), so that the worker sleeps rather than asks again
/// and again for an event it cannot take.
pub fn next_due_at<'c>(db: impl Into<Db<'c>>) -> db::Result<Option<String>> {
    let db = db.into();
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT min(next_attempt_at) FROM events WHERE delivery_state = 'PENDING'"
        }
        Backend::Postgres => {
            "SELECT min(GREATEST(next_attempt_at, claimed_until)) FROM events
             WHERE delivery_state = 'PENDING'"
        }
    };
    db.query_row(sql, &params![], |r| r.get(0))
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

/// Records attempts and moves their events on, all in the caller's transaction. On PostgreSQL
/// an automatic or manual attempt also ends the event's claim (see `due`), so that a retry or a
/// redelivery asked for meanwhile is due at its own time, for any engine.
pub fn record_attempts<'c>(db: impl Into<Db<'c>>, attempts: &[Attempt]) -> db::Result<()> {
    let db = db.into();
    // An event removed while it was being sent (a sandbox reset) takes no attempt: its row
    // would break the foreign key and roll back the whole batch, so the other events of the
    // batch would be sent again.
    let insert =
        "INSERT INTO delivery_attempts (event_seq, kind, started_at, duration_ms, status_code,
                response_excerpt, error, outcome, webhook_timestamp, webhook_signature)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
         WHERE EXISTS (SELECT 1 FROM events WHERE seq = ?1)";
    // A redelivery asked for while an automatic attempt was in flight (?6 = 1) is kept: the
    // event stays PENDING, due at the time the request set, so the manual send still happens.
    let update = match db.backend() {
        Backend::Sqlite => {
            "UPDATE events SET
                delivery_state = CASE WHEN ?6 AND manual_pending = 1 THEN 'PENDING' ELSE ?2 END,
                next_attempt_at = CASE WHEN ?6 AND manual_pending = 1 THEN next_attempt_at ELSE ?3 END,
                manual_pending = CASE WHEN ?6 THEN manual_pending ELSE 0 END,
                attempts = attempts + ?4, delivered_at = COALESCE(?5, delivered_at)
         WHERE seq = ?1"
        }
        Backend::Postgres => {
            "UPDATE events SET
                delivery_state = CASE WHEN ?6 AND manual_pending = 1 THEN 'PENDING' ELSE ?2 END,
                next_attempt_at = CASE WHEN ?6 AND manual_pending = 1 THEN next_attempt_at ELSE ?3 END,
                manual_pending = CASE WHEN ?6 THEN manual_pending ELSE 0 END,
                attempts = attempts + ?4, delivered_at = COALESCE(?5, delivered_at),
                claimed_until = NULL
         WHERE seq = ?1"
        }
    };
    for a in attempts {
        let (state, next, outcome) = match &a.outcome {
            Outcome::Delivered => ("DELIVERED", None, "DELIVERED"),
            Outcome::RetryAt(at) => ("PENDING", Some(at.as_str()), "RETRY"),
            Outcome::Failed => ("FAILED", None, "FAILED"),
        };
        db.execute(
            insert,
            &params![
                a.event_seq,
                a.kind.as_str(),
                a.started_at.as_str(),
                a.duration_ms,
                a.status_code.map(i64::from),
                a.response_excerpt.as_deref(),
                a.error.as_deref(),
                outcome,
                a.sent.as_ref().map(|h| h.timestamp),
                a.sent.as_ref().map(|h| h.signature.as_str()),
            ],
        )?;
        if !matches!(a.kind, AttemptKind::Injected | AttemptKind::Listen) {
            let delivered_at = (a.outcome == Outcome::Delivered).then_some(a.started_at.as_str());
            let automatic = matches!(a.kind, AttemptKind::First | AttemptKind::Retry);
            db.execute(
                update,
                &params![
                    a.event_seq,
                    state,
                    next,
                    a.counts as i64,
                    delivered_at,
                    automatic
                ],
            )?;
        }
    }
    Ok(())
}

/// Schedules an event to be sent again now, whatever its state. `Ok(false)`: not this
/// commerce's event, or it has no URL.
pub fn request_redelivery<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: Option<i64>,
    event_id: &str,
    now: &str,
) -> db::Result<bool> {
    let changed = db.into().execute(
        "UPDATE events SET delivery_state = 'PENDING', next_attempt_at = ?3, manual_pending = 1
         WHERE id = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR commerce_id = ?2) AND url IS NOT NULL",
        &params![event_id, commerce_id, now],
    )?;
    Ok(changed > 0)
}

pub fn trusted_roots<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<String>> {
    db.into().query_map(
        "SELECT pem FROM trusted_roots ORDER BY seq",
        &params![],
        |r| r.get(0),
    )
}

/// A number that changes whenever the trusted roots do, so the worker knows to reload.
pub fn trusted_roots_version<'c>(db: impl Into<Db<'c>>) -> db::Result<i64> {
    db.into().query_row(
        "SELECT coalesce(max(seq), 0) * 1000003 + count(*) FROM trusted_roots",
        &params![],
        |r| r.get(0),
    )
}

/// Adds a root; `Ok(false)` when it was already trusted.
pub fn add_trusted_root<'c>(
    db: impl Into<Db<'c>>,
    pem: &str,
    fingerprint: &str,
    subject: &str,
    at: &str,
) -> db::Result<bool> {
    let added = db.into().execute(
        "INSERT INTO trusted_roots (pem, fingerprint, subject, added_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (fingerprint) DO NOTHING",
        &params![pem, fingerprint, subject, at],
    )?;
    Ok(added > 0)
}

/// Rotates a commerce's webhook secret; the old one stays valid until `previous_expires_at`.
pub fn rotate_secret<'c>(
    db: impl Into<Db<'c>>,
    commerce_code: &str,
    new_secret: &Secret<String>,
    previous_expires_at: &str,
) -> db::Result<bool> {
    let changed = db.into().execute(
        "UPDATE commerces SET previous_webhook_secret = webhook_secret,
                previous_secret_expires_at = ?3, webhook_secret = ?2
         WHERE code = ?1",
        &params![
            commerce_code,
            new_secret.expose().as_str(),
            previous_expires_at
        ],
    )?;
    super::commerces::credentials_changed();
    Ok(changed > 0)
}

pub fn set_faults<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    faults: Option<&str>,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE commerces SET delivery_faults = ?2 WHERE id = ?1",
        &params![commerce_id, faults],
    )?;
    Ok(())
}

pub fn faults<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<Option<String>> {
    Ok(db
        .into()
        .query_opt(
            "SELECT delivery_faults FROM commerces WHERE id = ?1",
            &params![commerce_id],
            |r| r.get::<Option<String>>(0),
        )?
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

pub fn event_by_id<'c>(
    db: impl Into<Db<'c>>,
    event_id: &str,
) -> db::Result<Option<(i64, EventSummary)>> {
    db.into().query_opt(
        "SELECT seq, id, kind, sequence, url, delivery_state, attempts, next_attempt_at, created_at, delivered_at
         FROM events WHERE id = ?1",
        &params![event_id],
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
    )
}

pub fn attempts_of<'c>(db: impl Into<Db<'c>>, event_seq: i64) -> db::Result<Vec<AttemptRow>> {
    db.into().query_map(
        "SELECT kind, started_at, duration_ms, status_code, response_excerpt, error, outcome,
                webhook_timestamp, webhook_signature
         FROM delivery_attempts WHERE event_seq = ?1 ORDER BY seq",
        &params![event_seq],
        |r| {
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
        },
    )
}

/// An event with its owner and exact body, for inspection.
pub fn event_with_body<'c>(
    db: impl Into<Db<'c>>,
    event_id: &str,
) -> db::Result<Option<(i64, i64, EventSummary, String)>> {
    let db = db.into();
    let Some((seq, summary)) = event_by_id(db, event_id)? else {
        return Ok(None);
    };
    let (commerce_id, body) = db.query_row(
        "SELECT commerce_id, body FROM events WHERE seq = ?1",
        &params![seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(Some((seq, commerce_id, summary, body)))
}

/// Filters of the staff's event listing; newest first, keyset-paged by `before_seq`.
#[derive(Debug, Default)]
pub struct EventFilter {
    pub mandate_id: Option<String>,
    /// A mandate by either of its ids: ours (`man_...`) or the merchant's `mandateId` (which
    /// may name a mandate of each of several commerces).
    pub any_mandate_id: Option<String>,
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
    /// The signature process a signature event is about (`sig_...`).
    pub signature_process_id: Option<String>,
}

pub fn list_events<'c, 'f>(
    db: impl Into<Db<'c>>,
    filter: &'f EventFilter,
) -> db::Result<Vec<ListedEvent>> {
    let db = db.into();
    // What the event announces is read from its JSON body: `json_extract` on SQLite, the
    // `#>>` path operator on PostgreSQL (the body is TEXT there too).
    let announced = match db.backend() {
        Backend::Sqlite => {
            "CASE WHEN e.kind = 'signature' THEN json_extract(e.body, '$.event')
                     ELSE coalesce(json_extract(e.body, '$.installment.state.name'),
                                   json_extract(e.body, '$.product.state.name')) END,
                json_extract(e.body, '$.installment.rejection.code'),
                CASE WHEN e.kind = 'signature' THEN json_extract(e.body, '$.process.internalId') END"
        }
        Backend::Postgres => {
            "CASE WHEN e.kind = 'signature' THEN CAST(e.body AS jsonb) #>> '{event}'
                     ELSE coalesce(CAST(e.body AS jsonb) #>> '{installment,state,name}',
                                   CAST(e.body AS jsonb) #>> '{product,state,name}') END,
                CAST(e.body AS jsonb) #>> '{installment,rejection,code}',
                CASE WHEN e.kind = 'signature' THEN CAST(e.body AS jsonb) #>> '{process,internalId}' END"
        }
    };
    let mut sql = format!(
        "SELECT e.seq, e.id, e.kind, e.sequence, e.url, e.delivery_state, e.attempts, e.next_attempt_at,
                e.created_at, e.delivered_at, c.code, m.id, i.id, m.external_id,
                trim(u.first_name || ' ' || u.last_name || ' ' || coalesce(u.second_last_name, '')),
                {announced},
                la.status_code, la.error
         FROM events e
         JOIN commerces c ON c.id = e.commerce_id
         LEFT JOIN mandates m ON m.seq = e.mandate_seq
         LEFT JOIN customers u ON u.seq = m.customer_seq
         LEFT JOIN installments i ON i.seq = e.installment_seq
         LEFT JOIN delivery_attempts la ON la.seq = (
             SELECT max(a.seq) FROM delivery_attempts a
             WHERE a.event_seq = e.seq AND a.kind IN ('FIRST', 'RETRY', 'MANUAL'))
         WHERE 1 = 1"
    );
    let mut args: Vec<Param<'f>> = Vec::new();
    let mut push = |clause: &str, value: Param<'f>| {
        sql.push_str(clause);
        args.push(value);
    };
    if let Some(v) = &filter.mandate_id {
        push(" AND m.id = ?", v.into());
    }
    if let Some(v) = &filter.any_mandate_id {
        push(" AND (m.id = ?", v.into());
        push(" OR m.external_id = ?)", v.into());
    }
    if let Some(v) = &filter.installment_id {
        push(" AND i.id = ?", v.into());
    }
    if let Some(v) = &filter.delivery_state {
        push(" AND e.delivery_state = ?", v.into());
    }
    if let Some(v) = &filter.kind {
        push(" AND e.kind = ?", v.into());
    }
    if let Some(v) = &filter.created_from {
        push(" AND e.created_at >= ?", v.into());
    }
    if let Some(v) = &filter.created_to {
        push(" AND e.created_at < ?", v.into());
    }
    if let Some(v) = filter.before_seq {
        push(" AND e.seq < ?", v.into());
    }
    sql.push_str(" ORDER BY e.seq DESC LIMIT ?");
    args.push(filter.limit.into());
    db.query_map(&sql, &args, |r| {
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
            signature_process_id: r.get(17)?,
            last_status_code: r.get(18)?,
            last_error: r.get(19)?,
        })
    })
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

fn commerce_event(r: &Row<'_>) -> db::Result<CommerceEvent> {
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
pub fn list_for_commerce<'c, 'f>(
    db: impl Into<Db<'c>>,
    filter: &'f CommerceEventFilter,
) -> db::Result<Vec<CommerceEvent>> {
    let mut sql = format!("{COMMERCE_EVENT_SELECT} WHERE e.commerce_id = ?");
    let mut args: Vec<Param<'f>> = vec![filter.commerce_id.into()];
    let mut push = |clause: &str, value: Param<'f>| {
        sql.push_str(clause);
        args.push(value);
    };
    if let Some(v) = &filter.kind {
        push(" AND e.kind = ?", v.into());
    }
    if let Some(v) = &filter.mandate_id {
        // The mandate must be this commerce's too: another's id simply matches nothing.
        push(
            " AND e.mandate_seq = (SELECT seq FROM mandates WHERE id = ? AND commerce_id = e.commerce_id)",
            v.into(),
        );
    }
    if let Some(v) = &filter.delivery_state {
        push(" AND e.delivery_state = ?", v.into());
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
    db.into().query_map(&sql, &args, commerce_event)
}

/// One event of a commerce; `None` when it does not exist or is another commerce's.
pub fn for_commerce<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    event_id: &str,
) -> db::Result<Option<CommerceEvent>> {
    let sql = format!("{COMMERCE_EVENT_SELECT} WHERE e.id = ?1 AND e.commerce_id = ?2");
    db.into()
        .query_opt(&sql, &params![event_id, commerce_id], commerce_event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commerces::tests::commerce;
    use crate::db::PgConn;
    use crate::events;
    use crate::pg_test::{self, on_both};

    const CREATED: &str = "2026-11-25T00:00:00.000Z";
    const NOW: &str = "2026-11-25T00:00:01.000Z";

    /// A commerce with `ids.len()` pending events, in that order.
    fn pending_events(db: Db<'_>, ids: &[&str]) -> i64 {
        let shop = commerce(db, "76123456-0");
        for (n, id) in ids.iter().enumerate() {
            events::insert(
                db,
                &events::NewEvent {
                    id,
                    commerce_id: shop.id,
                    mandate_seq: None,
                    installment_seq: None,
                    kind: "payment",
                    sequence: n as i64 + 1,
                    url: Some("https://localhost/hooks"),
                    body: "{}",
                    created_at: CREATED,
                },
            )
            .unwrap();
        }
        shop.id
    }

    fn seq_of(db: Db<'_>, id: &str) -> i64 {
        db.query_row("SELECT seq FROM events WHERE id = ?1", &params![id], |r| {
            r.get(0)
        })
        .unwrap()
    }

    fn attempt(event_seq: i64, outcome: Outcome) -> Attempt {
        Attempt {
            event_seq,
            kind: AttemptKind::First,
            started_at: NOW.into(),
            duration_ms: 3,
            status_code: Some(200),
            response_excerpt: None,
            error: None,
            outcome,
            counts: true,
            sent: Some(SentHeaders {
                timestamp: 1_764_028_801,
                signature: "v1,c2ln".into(),
            }),
        }
    }

    fn ids(due: &[DueEvent]) -> Vec<&str> {
        due.iter().map(|e| e.id.as_str()).collect()
    }

    #[test]
    fn an_event_removed_in_flight_does_not_undo_the_batch() {
        on_both(|db| {
            pending_events(db, &["evt_kept", "evt_gone"]);
            let (kept, gone) = (seq_of(db, "evt_kept"), seq_of(db, "evt_gone"));
            db.execute("DELETE FROM events WHERE seq = ?1", &params![gone])
                .unwrap();
            record_attempts(
                db,
                &[
                    attempt(gone, Outcome::Delivered),
                    attempt(kept, Outcome::Delivered),
                ],
            )
            .unwrap();
            let (_, summary) = event_by_id(db, "evt_kept").unwrap().unwrap();
            assert_eq!(summary.delivery_state, "DELIVERED");
            assert_eq!(summary.delivered_at.as_deref(), Some(NOW));
            let logged = attempts_of(db, kept).unwrap();
            assert_eq!(logged.len(), 1);
            assert_eq!(logged[0].status_code, Some(200));
            assert_eq!(
                logged[0].sent.as_ref().map(|h| h.timestamp),
                Some(1_764_028_801)
            );
            assert!(attempts_of(db, gone).unwrap().is_empty());
        });
    }

    #[test]
    fn due_events_come_in_order_and_a_retry_waits_for_its_time() {
        on_both(|db| {
            let shop = pending_events(db, &["evt_1", "evt_2", "evt_3"]);
            assert_eq!(next_due_at(db).unwrap().as_deref(), Some(CREATED));
            let after_first = due(db, NOW, seq_of(db, "evt_1"), 1, CLAIM_LEASE).unwrap();
            assert_eq!(ids(&after_first), ["evt_2"]);
            let due_now = due(db, NOW, 0, 10, CLAIM_LEASE).unwrap();
            match db.backend() {
                Backend::Sqlite => assert_eq!(ids(&due_now), ["evt_1", "evt_2", "evt_3"]),
                // The first read claimed evt_2: it is not handed out again meanwhile.
                Backend::Postgres => assert_eq!(ids(&due_now), ["evt_1", "evt_3"]),
            }
            assert!(!due_now[0].manual);
            assert_eq!(due_now[0].secret.expose(), "whsec_dGVzdA==");

            let later = "2026-11-25T00:10:00.000Z";
            record_attempts(
                db,
                &["evt_1", "evt_2", "evt_3"]
                    .map(|id| attempt(seq_of(db, id), Outcome::RetryAt(later.into()))),
            )
            .unwrap();
            assert!(
                due(db, "2026-11-25T00:01:00.000Z", 0, 10, CLAIM_LEASE)
                    .unwrap()
                    .is_empty()
            );
            assert_eq!(next_due_at(db).unwrap().as_deref(), Some(later));

            // A redelivery asked for by the commerce makes the event due at once, marked manual.
            assert!(request_redelivery(db, Some(shop), "evt_2", NOW).unwrap());
            assert!(!request_redelivery(db, Some(shop + 1), "evt_2", NOW).unwrap());
            let manual = due(db, NOW, 0, 10, CLAIM_LEASE).unwrap();
            assert_eq!(ids(&manual), ["evt_2"]);
            assert!(manual[0].manual);
            assert_eq!(due(db, later, 0, 10, CLAIM_LEASE).unwrap().len(), 3);
            let listed = list_for_commerce(
                db,
                &CommerceEventFilter {
                    commerce_id: shop,
                    kind: Some("payment".into()),
                    mandate_id: None,
                    delivery_state: Some("PENDING".into()),
                    before_seq: None,
                    after_seq: None,
                    limit: 2,
                },
            )
            .unwrap();
            assert_eq!(listed.len(), 2);
            assert_eq!(listed[0].event_id, "evt_3");
            assert_eq!(listed[0].attempts, 1);
            let one = for_commerce(db, shop, "evt_1").unwrap().unwrap();
            assert_eq!(one.next_attempt_at.as_deref(), Some(later));
            assert!(for_commerce(db, shop + 1, "evt_1").unwrap().is_none());
        });
    }

    #[test]
    fn the_staff_listing_reads_what_each_event_announces() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let body = r#"{"installment":{"state":{"name":"REJECTED"},"rejection":{"code":"51"}}}"#;
            events::insert(
                db,
                &events::NewEvent {
                    id: "evt_rejected",
                    commerce_id: shop.id,
                    mandate_seq: None,
                    installment_seq: None,
                    kind: "payment",
                    sequence: 1,
                    url: Some("https://localhost/hooks"),
                    body,
                    created_at: CREATED,
                },
            )
            .unwrap();
            let seq = seq_of(db, "evt_rejected");
            let mut failed = attempt(seq, Outcome::Failed);
            failed.status_code = Some(500);
            record_attempts(db, &[failed]).unwrap();
            let listed = list_events(
                db,
                &EventFilter {
                    kind: Some("payment".into()),
                    created_from: Some(CREATED.into()),
                    limit: 10,
                    ..EventFilter::default()
                },
            )
            .unwrap();
            assert_eq!(listed.len(), 1);
            let event = &listed[0];
            assert_eq!(event.commerce_code, "76123456-0");
            assert_eq!(event.announced_state.as_deref(), Some("REJECTED"));
            assert_eq!(event.rejection_code.as_deref(), Some("51"));
            assert_eq!(event.last_status_code, Some(500));
            assert_eq!(event.summary.delivery_state, "FAILED");
            let none = list_events(
                db,
                &EventFilter {
                    before_seq: Some(seq),
                    limit: 10,
                    ..EventFilter::default()
                },
            )
            .unwrap();
            assert!(none.is_empty());
        });
    }

    #[test]
    fn trusted_roots_secrets_and_faults_are_kept() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            let before = trusted_roots_version(db).unwrap();
            assert!(add_trusted_root(db, "PEM", "fp", "CN=root", NOW).unwrap());
            assert!(!add_trusted_root(db, "PEM", "fp", "CN=root", NOW).unwrap());
            assert_eq!(trusted_roots(db).unwrap(), ["PEM"]);
            assert_ne!(trusted_roots_version(db).unwrap(), before);

            let new_secret = Secret::new("whsec_bmV3".to_string());
            assert!(rotate_secret(db, "76123456-0", &new_secret, NOW).unwrap());
            assert!(!rotate_secret(db, "nobody", &new_secret, NOW).unwrap());

            assert_eq!(faults(db, shop.id).unwrap(), None);
            set_faults(db, shop.id, Some(r#"{"duplicate":true}"#)).unwrap();
            assert_eq!(
                faults(db, shop.id).unwrap().as_deref(),
                Some(r#"{"duplicate":true}"#)
            );
        });
    }

    /// The PostgreSQL test database with a commerce and `count` pending events.
    fn shared_outbox(count: usize) -> pg_test::TestDatabase {
        let database = pg_test::database();
        let names: Vec<String> = (1..=count).map(|n| format!("evt_{n:02}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        database
            .connect()
            .transaction(|db| {
                pending_events(db, &names);
                Ok::<_, db::Error>(())
            })
            .unwrap();
        database
    }

    fn claim(pg: &PgConn, now: &str, limit: usize) -> Vec<String> {
        pg.transaction(|db| due(db, now, 0, limit, CLAIM_LEASE))
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect()
    }

    #[test]
    fn two_engines_claiming_at_once_get_disjoint_events() {
        let database = shared_outbox(6);
        let first = database.connect();
        let (mine, theirs) = first
            .transaction(|db| {
                // This engine's claim is not committed yet when the other one reads.
                let mine: Vec<String> = due(db, NOW, 0, 4, CLAIM_LEASE)?
                    .into_iter()
                    .map(|e| e.id)
                    .collect();
                let url = database.url().to_string();
                let theirs =
                    std::thread::spawn(move || claim(&PgConn::connect(&url).unwrap(), NOW, 10))
                        .join()
                        .unwrap();
                Ok::<_, db::Error>((mine, theirs))
            })
            .unwrap();
        assert_eq!(mine, ["evt_01", "evt_02", "evt_03", "evt_04"]);
        assert_eq!(theirs, ["evt_05", "evt_06"]);
        // Both claims hold: nobody gets any of them again while the leases last.
        assert!(claim(&database.connect(), NOW, 10).is_empty());
    }

    #[test]
    fn a_claim_lasts_its_lease_and_ends_with_the_attempt() {
        let database = shared_outbox(3);
        let pg = database.connect();
        assert_eq!(claim(&pg, NOW, 2), ["evt_01", "evt_02"]);
        // Another engine, a moment later, takes only what nobody holds.
        let other = database.connect();
        assert_eq!(claim(&other, "2026-11-25T00:00:02.000Z", 10), ["evt_03"]);
        let lease_end = lease_end(NOW, CLAIM_LEASE).unwrap();
        assert_eq!(lease_end, "2026-11-25T00:05:01.000Z");
        // The engine waits for a lease to end rather than asks for events it cannot take.
        let next = pg.transaction(|db| next_due_at(db)).unwrap();
        assert_eq!(next.as_deref(), Some(lease_end.as_str()));
        pg.transaction(|db| {
            record_attempts(db, &[attempt(seq_of(db, "evt_01"), Outcome::Delivered)])
        })
        .unwrap();

        // The first engine died holding evt_02: once its lease has passed it is due again.
        assert!(claim(&other, "2026-11-25T00:05:00.999Z", 10).is_empty());
        assert_eq!(claim(&other, &lease_end, 10), ["evt_02"]);

        // An attempt ends the claim: a retry is due at its own time, whoever sends it.
        let retry_at = "2026-11-25T00:05:10.000Z";
        pg.transaction(|db| {
            record_attempts(
                db,
                &[attempt(
                    seq_of(db, "evt_02"),
                    Outcome::RetryAt(retry_at.into()),
                )],
            )
        })
        .unwrap();
        // evt_03's lease (taken a second after NOW) has ended by then too.
        assert_eq!(claim(&pg, retry_at, 10), ["evt_02", "evt_03"]);
    }

    #[test]
    fn a_held_event_given_back_is_due_again_at_once() {
        let database = shared_outbox(2);
        let pg = database.connect();
        assert_eq!(claim(&pg, NOW, 10), ["evt_01", "evt_02"]);
        // The worker holds evt_02 back (the sandbox's delay) and gives its claim back.
        pg.transaction(|db| release_claims(db, &[seq_of(db, "evt_02")]))
            .unwrap();
        assert_eq!(claim(&pg, "2026-11-25T00:00:02.000Z", 10), ["evt_02"]);
    }
}
