//! The outbox: events written in the same transaction as the change that causes them.

use super::db::{self, Db, params};

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

/// Writes an event into the outbox, with a copy queued for every running `mandato listen`
/// receiver of its commerce that takes its kind (`listen_leases`), in the caller's transaction.
pub fn insert<'c>(db: impl Into<Db<'c>>, event: &NewEvent<'_>) -> db::Result<()> {
    let db = db.into();
    match db {
        Db::Sqlite(conn) => {
            let seq: i64 = db.query_row(
                "INSERT INTO events (id, commerce_id, mandate_seq, installment_seq, kind, sequence,
                        url, body, delivery_state, next_attempt_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
                 RETURNING seq",
                &params![
                    event.id,
                    event.commerce_id,
                    event.mandate_seq,
                    event.installment_seq,
                    event.kind,
                    event.sequence,
                    event.url,
                    event.body,
                    delivery_state(event),
                    event.created_at,
                ],
                |r| r.get(0),
            )?;
            super::listen_leases::queue_for_event(
                conn,
                seq,
                event.commerce_id,
                event.kind,
                event.created_at,
            )?;
            Ok(())
        }
        Db::Postgres(_) => insert_many(db, std::slice::from_ref(event)),
    }
}

/// A new event's delivery state: one without a URL is kept as history only.
fn delivery_state(event: &NewEvent<'_>) -> &'static str {
    if event.url.is_some() {
        "PENDING"
    } else {
        "NO_URL"
    }
}

/// `insert` for many events, numbered in the order given. On PostgreSQL the events and their
/// `mandato listen` copies are one statement (a charging page's thousand events, one round
/// trip); the leases are those `queue_for_event` picks. SQLite inserts each in-process.
pub fn insert_many<'c>(db: impl Into<Db<'c>>, events: &[NewEvent<'_>]) -> db::Result<()> {
    let db = db.into();
    if let Db::Sqlite(_) = db {
        return events.iter().try_for_each(|e| insert(db, e));
    }
    let rows = events
        .iter()
        .enumerate()
        .map(|(ord, e)| {
            serde_json::json!({
                "ord": ord, "id": e.id, "commerce_id": e.commerce_id,
                "mandate_seq": e.mandate_seq, "installment_seq": e.installment_seq,
                "kind": e.kind, "sequence": e.sequence, "url": e.url, "body": e.body,
                "delivery_state": delivery_state(e), "created_at": e.created_at,
            })
        })
        .collect();
    db.execute(
        &format!(
            "WITH event AS (
                 INSERT INTO events (id, commerce_id, mandate_seq, installment_seq, kind,
                        sequence, url, body, delivery_state, next_attempt_at, created_at)
                 SELECT id, commerce_id, mandate_seq, installment_seq, kind, sequence, url, body,
                        delivery_state, created_at, created_at
                 FROM {} ORDER BY ord
                 RETURNING seq, commerce_id, kind, created_at)
             INSERT INTO listen_deliveries (event_seq, lease_id)
             SELECT event.seq, leases.id FROM event
               JOIN listen_leases leases ON leases.commerce_id = event.commerce_id
             WHERE leases.expires_at > event.created_at
               AND (leases.event_types IS NULL
                    OR strpos(',' || leases.event_types || ',', ',' || event.kind || ',') > 0)",
            db::json_records(
                "ord bigint, id text, commerce_id bigint, mandate_seq bigint,
                 installment_seq bigint, kind text, sequence bigint, url text, body text,
                 delivery_state text, created_at text"
            )
        ),
        &params![db::json_rows_param(rows).as_str()],
    )?;
    Ok(())
}

/// Every event of a mandate, in sequence order.
pub fn for_mandate<'c>(db: impl Into<Db<'c>>, mandate_seq: i64) -> db::Result<Vec<EventRow>> {
    db.into().query_map(
        "SELECT seq, id, kind, sequence, url, body, delivery_state, created_at
         FROM events WHERE mandate_seq = ?1 ORDER BY sequence",
        &params![mandate_seq],
        |r| {
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
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mandates::tests::mandate;
    use crate::pg_test::on_both;

    fn event<'a>(
        id: &'a str,
        commerce_id: i64,
        mandate_seq: i64,
        sequence: i64,
        url: Option<&'a str>,
    ) -> NewEvent<'a> {
        NewEvent {
            id,
            commerce_id,
            mandate_seq: Some(mandate_seq),
            installment_seq: None,
            kind: "payment",
            sequence,
            url,
            body: "{\"event\":\"payment\"}",
            created_at: "2026-11-25T12:00:00.000Z",
        }
    }

    #[test]
    fn a_mandate_s_events_are_listed_in_sequence_order() {
        on_both(|db| {
            let m = mandate(db, "m-1");
            insert(db, &event("evt_2", m.commerce_id, m.seq, 2, None)).unwrap();
            insert(
                db,
                &event(
                    "evt_1",
                    m.commerce_id,
                    m.seq,
                    1,
                    Some("https://tienda.cl/h"),
                ),
            )
            .unwrap();
            let events = for_mandate(db, m.seq).unwrap();
            let listed: Vec<_> = events
                .iter()
                .map(|e| (e.id.as_str(), e.sequence, e.delivery_state.as_str()))
                .collect();
            assert_eq!(
                listed,
                vec![("evt_1", 1, "PENDING"), ("evt_2", 2, "NO_URL")]
            );
            assert_eq!(events[0].url.as_deref(), Some("https://tienda.cl/h"));
        });
    }

    #[test]
    fn events_written_together_keep_their_order_and_their_states() {
        on_both(|db| {
            let m = mandate(db, "m-1");
            let url = Some("https://tienda.cl/h");
            insert_many(
                db,
                &[
                    event("evt_1", m.commerce_id, m.seq, 1, url),
                    event("evt_2", m.commerce_id, m.seq, 2, None),
                    event("evt_3", m.commerce_id, m.seq, 3, url),
                ],
            )
            .unwrap();
            let written: Vec<(String, i64, String)> = db
                .query_map(
                    "SELECT id, sequence, delivery_state FROM events ORDER BY seq",
                    &params![],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            let expected = [
                ("evt_1", 1, "PENDING"),
                ("evt_2", 2, "NO_URL"),
                ("evt_3", 3, "PENDING"),
            ];
            assert_eq!(
                written,
                expected.map(|(id, n, state)| (id.to_string(), n, state.to_string()))
            );
        });
    }

    #[test]
    fn a_live_listener_of_the_kind_gets_a_copy() {
        on_both(|db| {
            let m = mandate(db, "m-1");
            for (id, kinds, expires_at) in [
                (
                    "lis_payments",
                    Some("activation,payment"),
                    "2026-11-25T13:00:00.000Z",
                ),
                ("lis_every", None, "2026-11-25T13:00:00.000Z"),
                (
                    "lis_signatures",
                    Some("signature"),
                    "2026-11-25T13:00:00.000Z",
                ),
                ("lis_gone", None, "2026-11-25T11:00:00.000Z"),
            ] {
                db.execute(
                    "INSERT INTO listen_leases (id, commerce_id, url, event_types, expires_at, created_at)
                     VALUES (?1, ?2, 'https://127.0.0.1:9/', ?3, ?4, 't0')",
                    &params![id, m.commerce_id, kinds, expires_at],
                )
                .unwrap();
            }
            insert(db, &event("evt_1", m.commerce_id, m.seq, 1, None)).unwrap();
            let copies = db
                .query_map(
                    "SELECT lease_id FROM listen_deliveries ORDER BY lease_id",
                    &params![],
                    |r| r.get::<String>(0),
                )
                .unwrap();
            assert_eq!(copies, vec!["lis_every", "lis_payments"]);
        });
    }
}
