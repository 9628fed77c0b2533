//! Fintoc Direct Debit's records (`fintoc_charges`, `fintoc_enrolments`).

use super::charging::{OpenAttempt, open_attempt};
use super::db::{self, Db, params};

/// Records the charge Fintoc made for an attempt; a second record of the same answer is a
/// no-op.
pub fn record_charge<'c>(
    db: impl Into<Db<'c>>,
    idempotency_key: &str,
    charge_id: &str,
    at: &str,
) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO fintoc_charges (idempotency_key, charge_id, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (idempotency_key) DO NOTHING",
        &params![idempotency_key, charge_id, at],
    )?;
    Ok(())
}

/// The charge Fintoc made for an attempt, if it answered.
pub fn charge_of<'c>(db: impl Into<Db<'c>>, idempotency_key: &str) -> db::Result<Option<String>> {
    db.into().query_opt(
        "SELECT charge_id FROM fintoc_charges WHERE idempotency_key = ?1",
        &params![idempotency_key],
        |r| r.get(0),
    )
}

const OPEN_CHARGES: &str = "SELECT a.seq, a.installment_seq, a.idempotency_key, a.business_date,
        a.amount, a.currency, a.state, a.created_at
     FROM charge_attempts a JOIN fintoc_charges f ON f.idempotency_key = a.idempotency_key
     WHERE a.state = 'IN_VALIDATION'";

/// Attempts charged on Fintoc whose outcome is still awaited, oldest first.
pub fn open_charges<'c>(db: impl Into<Db<'c>>, limit: i64) -> db::Result<Vec<OpenAttempt>> {
    db.into().query_map(
        &format!("{OPEN_CHARGES} ORDER BY a.seq LIMIT ?1"),
        &params![limit],
        open_attempt,
    )
}

/// The attempt of Fintoc's charge `charge_id`, if its outcome is still awaited.
pub fn open_charge<'c>(db: impl Into<Db<'c>>, charge_id: &str) -> db::Result<Option<OpenAttempt>> {
    db.into().query_opt(
        &format!("{OPEN_CHARGES} AND f.charge_id = ?1"),
        &params![charge_id],
        open_attempt,
    )
}

/// A subscription intent started from a Magic Link.
#[derive(Debug, Clone)]
pub struct Enrolment {
    pub intent_id: String,
    pub mandate_seq: i64,
    pub method_id: i64,
    pub terms: String,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub state: String,
    pub subscription_id: Option<String>,
    pub failure: Option<String>,
    pub created_at: String,
}

pub struct NewEnrolment<'a> {
    pub intent_id: &'a str,
    pub mandate_seq: i64,
    pub method_id: i64,
    pub terms: &'a str,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub at: &'a str,
}

const COLUMNS: &str = "intent_id, mandate_seq, method_id, terms, ip, user_agent, state, \
                       subscription_id, failure, created_at";

fn row(r: &db::Row<'_>) -> db::Result<Enrolment> {
    Ok(Enrolment {
        intent_id: r.get(0)?,
        mandate_seq: r.get(1)?,
        method_id: r.get(2)?,
        terms: r.get(3)?,
        ip: r.get(4)?,
        user_agent: r.get(5)?,
        state: r.get(6)?,
        subscription_id: r.get(7)?,
        failure: r.get(8)?,
        created_at: r.get(9)?,
    })
}

pub fn insert_enrolment<'c>(db: impl Into<Db<'c>>, e: &NewEnrolment<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO fintoc_enrolments
             (intent_id, mandate_seq, method_id, terms, ip, user_agent, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &params![
            e.intent_id,
            e.mandate_seq,
            e.method_id,
            e.terms,
            e.ip,
            e.user_agent,
            e.at
        ],
    )?;
    Ok(())
}

/// The mandate's enrolment with this intent.
pub fn enrolment<'c>(
    db: impl Into<Db<'c>>,
    intent_id: &str,
    mandate_seq: i64,
) -> db::Result<Option<Enrolment>> {
    db.into().query_opt(
        &format!(
            "SELECT {COLUMNS} FROM fintoc_enrolments WHERE intent_id = ?1 AND mandate_seq = ?2"
        ),
        &params![intent_id, mandate_seq],
        row,
    )
}

/// The mandate's latest enrolment, whatever its state.
pub fn latest_of_mandate<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Option<Enrolment>> {
    db.into().query_opt(
        &format!(
            "SELECT {COLUMNS} FROM fintoc_enrolments WHERE mandate_seq = ?1
             ORDER BY created_at DESC LIMIT 1"
        ),
        &params![mandate_seq],
        row,
    )
}

/// Enrolments the bank is still validating, oldest first.
pub fn validating<'c>(db: impl Into<Db<'c>>, limit: i64) -> db::Result<Vec<Enrolment>> {
    db.into().query_map(
        &format!(
            "SELECT {COLUMNS} FROM fintoc_enrolments WHERE state = 'VALIDATING'
             ORDER BY created_at LIMIT ?1"
        ),
        &params![limit],
        row,
    )
}

/// The enrolment the bank is validating whose intent or subscription is `object_id`.
pub fn validating_one<'c>(db: impl Into<Db<'c>>, object_id: &str) -> db::Result<Option<Enrolment>> {
    db.into().query_opt(
        &format!(
            "SELECT {COLUMNS} FROM fintoc_enrolments WHERE state = 'VALIDATING'
             AND (intent_id = ?1 OR subscription_id = ?1)"
        ),
        &params![object_id],
        row,
    )
}

/// How many enrolments the mandate's link started since `since`.
pub fn started_since<'c>(db: impl Into<Db<'c>>, mandate_seq: i64, since: &str) -> db::Result<i64> {
    db.into().query_row(
        "SELECT count(*) FROM fintoc_enrolments WHERE mandate_seq = ?1 AND created_at >= ?2",
        &params![mandate_seq, since],
        |r| r.get(0),
    )
}

/// Moves an enrolment from `from` to `to` (with the subscription or the failure); false when
/// it was no longer in `from` (another return or the poller moved it first).
pub fn advance<'c>(
    db: impl Into<Db<'c>>,
    intent_id: &str,
    from: &str,
    to: &str,
    subscription_id: Option<&str>,
    failure: Option<&str>,
    at: &str,
) -> db::Result<bool> {
    let ended = matches!(to, "ACTIVATED" | "FAILED" | "ABANDONED").then_some(at);
    let changed = db.into().execute(
        "UPDATE fintoc_enrolments
         SET state = ?3, subscription_id = coalesce(?4, subscription_id),
             failure = coalesce(?5, failure), ended_at = coalesce(?6, ended_at)
         WHERE intent_id = ?1 AND state = ?2",
        &params![intent_id, from, to, subscription_id, failure, ended],
    )?;
    Ok(changed > 0)
}

/// A verified Fintoc webhook event, as kept until the engine has acted on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event_id: String,
    /// The `t` of its `Fintoc-Signature`.
    pub signed_at: i64,
    pub commerce_id: i64,
    pub kind: String,
    pub object_id: String,
}

/// Keeps a verified event; false when this very signature was received before (a replay).
pub fn record_event<'c>(db: impl Into<Db<'c>>, e: &Event, at: &str) -> db::Result<bool> {
    let inserted = db.into().execute(
        "INSERT INTO fintoc_events
             (event_id, signed_at, commerce_id, type, object_id, received_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (event_id, signed_at) DO NOTHING",
        &params![
            &e.event_id,
            e.signed_at,
            e.commerce_id,
            &e.kind,
            &e.object_id,
            at
        ],
    )?;
    Ok(inserted > 0)
}

/// Events not yet acted on, oldest first.
pub fn unhandled_events<'c>(db: impl Into<Db<'c>>, limit: i64) -> db::Result<Vec<Event>> {
    db.into().query_map(
        "SELECT event_id, signed_at, commerce_id, type, object_id FROM fintoc_events
         WHERE handled_at IS NULL ORDER BY received_at LIMIT ?1",
        &params![limit],
        |r| {
            Ok(Event {
                event_id: r.get(0)?,
                signed_at: r.get(1)?,
                commerce_id: r.get(2)?,
                kind: r.get(3)?,
                object_id: r.get(4)?,
            })
        },
    )
}

/// Marks an event acted on.
pub fn event_handled<'c>(db: impl Into<Db<'c>>, e: &Event, at: &str) -> db::Result<()> {
    db.into().execute(
        "UPDATE fintoc_events SET handled_at = ?3 WHERE event_id = ?1 AND signed_at = ?2",
        &params![&e.event_id, e.signed_at, at],
    )?;
    Ok(())
}

/// Forgets events received before `before` (long past the signature's tolerance).
pub fn prune_events<'c>(db: impl Into<Db<'c>>, before: &str) -> db::Result<usize> {
    let pruned = db.into().execute(
        "DELETE FROM fintoc_events WHERE received_at < ?1",
        &params![before],
    )?;
    Ok(pruned as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    #[test]
    fn an_event_is_kept_once_per_signature_until_handled() {
        on_both(|db| {
            let commerce = crate::commerces::tests::commerce(db, "76123456-0").id;
            let event = Event {
                event_id: "evt_1".into(),
                signed_at: 1_780_000_000,
                commerce_id: commerce,
                kind: "charge.succeeded".into(),
                object_id: "ch_1".into(),
            };
            assert!(record_event(db, &event, "2026-11-29T12:00:00.000Z").unwrap());
            assert!(!record_event(db, &event, "2026-11-29T12:00:01.000Z").unwrap());
            let resent = Event {
                signed_at: 1_780_000_060,
                ..event.clone()
            };
            assert!(record_event(db, &resent, "2026-11-29T12:01:00.000Z").unwrap());
            assert_eq!(
                unhandled_events(db, 10).unwrap(),
                [event.clone(), resent.clone()]
            );
            event_handled(db, &event, "2026-11-29T12:02:00.000Z").unwrap();
            assert_eq!(unhandled_events(db, 10).unwrap(), [resent]);
            assert_eq!(prune_events(db, "2026-11-29T12:00:30.000Z").unwrap(), 1);
        });
    }
}
