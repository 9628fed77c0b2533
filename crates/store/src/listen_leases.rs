//! Leases of `mandato listen` receivers, and the copies of events still to send to them.
//!
//! A copy is queued in the transaction that writes the event (`store::events::insert`), for
//! each lease of that commerce live at the event's creation whose types include the event's.
//! A lease past its `expires_at` is never used again: its queued copies are dropped, not sent.

use super::db::{self, Db, params};
use mandato_core::secret::Secret;

pub struct NewLease<'a> {
    pub id: &'a str,
    pub commerce_id: i64,
    pub url: &'a str,
    /// Comma-separated event kinds (`activation,payment`); `None`: every kind.
    pub event_types: Option<&'a str>,
    pub expires_at: &'a str,
    pub created_at: &'a str,
}

pub fn insert<'c>(db: impl Into<Db<'c>>, lease: &NewLease<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO listen_leases (id, commerce_id, url, event_types, expires_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        &params![
            lease.id,
            lease.commerce_id,
            lease.url,
            lease.event_types,
            lease.expires_at,
            lease.created_at
        ],
    )?;
    Ok(())
}

/// Moves a lease's expiry on. `Ok(false)`: the lease is gone (it expired and was swept).
pub fn renew<'c>(db: impl Into<Db<'c>>, id: &str, expires_at: &str) -> db::Result<bool> {
    Ok(db.into().execute(
        "UPDATE listen_leases SET expires_at = ?2 WHERE id = ?1",
        &params![id, expires_at],
    )? > 0)
}

/// Ends a lease; its unsent copies go with it.
pub fn remove<'c>(db: impl Into<Db<'c>>, id: &str) -> db::Result<bool> {
    Ok(db
        .into()
        .execute("DELETE FROM listen_leases WHERE id = ?1", &params![id])?
        > 0)
}

/// Queues a copy of a just-written event for every lease of its commerce live at `at` that
/// takes its kind. Runs in the event's own transaction, on SQLite; PostgreSQL queues the
/// copies in the event's own statement (`events::insert`), picking the leases the same way.
pub(crate) fn queue_for_event(
    conn: &rusqlite::Connection,
    event_seq: i64,
    commerce_id: i64,
    kind: &str,
    at: &str,
) -> db::Result<u64> {
    // A lease lists its kinds comma-separated: the kind is looked for with commas around it.
    Db::Sqlite(conn).execute(
        "INSERT INTO listen_deliveries (event_seq, lease_id)
         SELECT ?1, id FROM listen_leases
         WHERE commerce_id = ?2 AND expires_at > ?4
           AND (event_types IS NULL OR instr(',' || event_types || ',', ',' || ?3 || ',') > 0)",
        &params![event_seq, commerce_id, kind, at],
    )
}

/// The URL of a lease of the commerce still live at `now`, if a listener runs.
pub fn live_url<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    now: &str,
) -> db::Result<Option<String>> {
    db.into().query_opt(
        "SELECT url FROM listen_leases WHERE commerce_id = ?1 AND expires_at > ?2
         ORDER BY created_at DESC LIMIT 1",
        &params![commerce_id, now],
        |r| r.get(0),
    )
}

/// A copy to send: the event's exact body to a live lease's URL, with the commerce's secrets.
#[derive(Debug, Clone)]
pub struct ListenCopy {
    pub seq: i64,
    pub event_seq: i64,
    pub event_id: String,
    pub url: String,
    pub body: String,
    pub created_at: String,
    pub commerce_id: i64,
    pub secret: Secret<String>,
    pub previous_secret: Option<(Secret<String>, String)>,
}

/// Copies waiting for leases still live at `now`, oldest first.
pub fn pending<'c>(db: impl Into<Db<'c>>, now: &str, limit: usize) -> db::Result<Vec<ListenCopy>> {
    db.into().query_map(
        "SELECT d.seq, e.seq, e.id, l.url, e.body, e.created_at, e.commerce_id,
                c.webhook_secret, c.previous_webhook_secret, c.previous_secret_expires_at
         FROM listen_deliveries d
         JOIN listen_leases l ON l.id = d.lease_id
         JOIN events e ON e.seq = d.event_seq
         JOIN commerces c ON c.id = e.commerce_id
         WHERE l.expires_at > ?1
         ORDER BY d.seq LIMIT ?2",
        &params![now, limit as i64],
        |r| {
            let previous: Option<String> = r.get(8)?;
            let expires: Option<String> = r.get(9)?;
            Ok(ListenCopy {
                seq: r.get(0)?,
                event_seq: r.get(1)?,
                event_id: r.get(2)?,
                url: r.get(3)?,
                body: r.get(4)?,
                created_at: r.get(5)?,
                commerce_id: r.get(6)?,
                secret: Secret::new(r.get(7)?),
                previous_secret: previous.zip(expires).map(|(s, e)| (Secret::new(s), e)),
            })
        },
    )
}

/// Whether any copy waits, for any lease (to skip work when nobody listens).
pub fn any_pending<'c>(db: impl Into<Db<'c>>) -> db::Result<bool> {
    db.into().query_row(
        "SELECT EXISTS (SELECT 1 FROM listen_deliveries)",
        &params![],
        |r| r.get(0),
    )
}

/// Forgets a sent copy.
pub fn sent<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<()> {
    db.into().execute(
        "DELETE FROM listen_deliveries WHERE seq = ?1",
        &params![seq],
    )?;
    Ok(())
}

/// Whether some lease has expired (so that the sweep, a write, runs only when it has work).
pub fn any_expired<'c>(db: impl Into<Db<'c>>, now: &str) -> db::Result<bool> {
    db.into().query_row(
        "SELECT EXISTS (SELECT 1 FROM listen_leases WHERE expires_at <= ?1)",
        &params![now],
        |r| r.get(0),
    )
}

/// Drops leases that expired before `now` (a listener killed without Ctrl-C) with their copies.
pub fn sweep_expired<'c>(db: impl Into<Db<'c>>, now: &str) -> db::Result<usize> {
    let removed = db.into().execute(
        "DELETE FROM listen_leases WHERE expires_at <= ?1",
        &params![now],
    )?;
    Ok(usize::try_from(removed).unwrap_or(usize::MAX))
}

/// A lease as stored, for inspection.
#[derive(Debug, Clone)]
pub struct Lease {
    pub id: String,
    pub commerce_id: i64,
    pub url: String,
    pub event_types: Option<String>,
    pub expires_at: String,
}

pub fn by_id<'c>(db: impl Into<Db<'c>>, id: &str) -> db::Result<Option<Lease>> {
    db.into().query_opt(
        "SELECT id, commerce_id, url, event_types, expires_at FROM listen_leases WHERE id = ?1",
        &params![id],
        |r| {
            Ok(Lease {
                id: r.get(0)?,
                commerce_id: r.get(1)?,
                url: r.get(2)?,
                event_types: r.get(3)?,
                expires_at: r.get(4)?,
            })
        },
    )
}

/// The installation's only commerce `(id, code)`, when it has exactly one (so `mandato listen`
/// and `mandato events` need no `--commerce`).
pub fn sole_commerce<'c>(db: impl Into<Db<'c>>) -> db::Result<Option<(i64, String)>> {
    let rows: Vec<(i64, String)> = db.into().query_map(
        "SELECT id, code FROM commerces ORDER BY id LIMIT 2",
        &params![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(match rows.as_slice() {
        [only] => Some(only.clone()),
        _ => None,
    })
}

/// The secrets a receiver of this commerce may see signatures by at `now`: the current one
/// first, then the previous one while its rotation window lasts.
pub fn webhook_secrets<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    now: &str,
) -> db::Result<Vec<Secret<String>>> {
    let row: Option<(String, Option<String>, Option<String>)> = db.into().query_opt(
        "SELECT webhook_secret, previous_webhook_secret, previous_secret_expires_at
         FROM commerces WHERE id = ?1",
        &params![commerce_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let Some((current, previous, until)) = row else {
        return Ok(Vec::new());
    };
    let mut secrets = vec![Secret::new(current)];
    if let (Some(previous), Some(until)) = (previous, until)
        && until.as_str() > now
    {
        secrets.push(Secret::new(previous));
    }
    Ok(secrets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commerces::tests::commerce;
    use crate::events;
    use crate::pg_test::on_both;

    const NOW: &str = "2026-11-25T12:00:00.000Z";

    fn event(db: Db<'_>, commerce_id: i64, id: &str, kind: &str) {
        events::insert(
            db,
            &events::NewEvent {
                id,
                commerce_id,
                mandate_seq: None,
                installment_seq: None,
                kind,
                sequence: 1,
                url: None,
                body: "{}",
                created_at: NOW,
            },
        )
        .unwrap();
    }

    #[test]
    fn a_lease_gets_copies_of_its_kinds_until_it_expires() {
        on_both(|db| {
            let shop = commerce(db, "76123456-0");
            assert_eq!(
                sole_commerce(db).unwrap(),
                Some((shop.id, "76123456-0".to_string()))
            );
            assert!(!any_pending(db).unwrap());
            insert(
                db,
                &NewLease {
                    id: "lis_1",
                    commerce_id: shop.id,
                    url: "http://127.0.0.1:9000/hooks",
                    event_types: Some("payment,signature"),
                    expires_at: "2026-11-25T12:05:00.000Z",
                    created_at: NOW,
                },
            )
            .unwrap();
            assert_eq!(
                live_url(db, shop.id, NOW).unwrap().as_deref(),
                Some("http://127.0.0.1:9000/hooks")
            );
            event(db, shop.id, "evt_pay", "payment");
            event(db, shop.id, "evt_act", "activation");
            let copies = pending(db, NOW, 10).unwrap();
            assert_eq!(copies.len(), 1);
            assert_eq!(copies[0].event_id, "evt_pay");
            assert_eq!(copies[0].secret.expose(), "whsec_dGVzdA==");
            assert!(any_pending(db).unwrap());
            sent(db, copies[0].seq).unwrap();
            assert!(!any_pending(db).unwrap());

            assert_eq!(webhook_secrets(db, shop.id, NOW).unwrap().len(), 1);
            assert!(webhook_secrets(db, shop.id + 1, NOW).unwrap().is_empty());

            let later = "2026-11-25T12:10:00.000Z";
            assert!(!any_expired(db, NOW).unwrap());
            assert!(any_expired(db, later).unwrap());
            assert!(renew(db, "lis_1", "2026-11-25T12:15:00.000Z").unwrap());
            assert!(!any_expired(db, later).unwrap());
            let lease = by_id(db, "lis_1").unwrap().unwrap();
            assert_eq!(lease.expires_at, "2026-11-25T12:15:00.000Z");
            assert_eq!(lease.event_types.as_deref(), Some("payment,signature"));

            event(db, shop.id, "evt_sig", "signature");
            assert_eq!(sweep_expired(db, "2026-11-25T12:20:00.000Z").unwrap(), 1);
            assert!(!any_pending(db).unwrap());
            assert!(by_id(db, "lis_1").unwrap().is_none());
            assert!(!renew(db, "lis_1", later).unwrap());
            assert!(!remove(db, "lis_1").unwrap());
        });
    }
}
