//! The sign-in throttle's windows (`auth::throttle` decides; this keeps them).

use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use crate::auth::throttle::{self, Decision, MAX_KEYS, ThrottleKey, WINDOW_MINUTES, Window};
use crate::clock::timestamp;

fn window(conn: &Connection, key: &ThrottleKey) -> rusqlite::Result<Option<Window>> {
    let row: Option<(String, i64)> = conn
        .prepare_cached("SELECT opened_at, failures FROM login_throttle WHERE key = ?1")?
        .query_row([key.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(row.and_then(|(opened_at, failures)| {
        // A row we cannot read counts as no window rather than failing every sign-in.
        let opened_at = DateTime::parse_from_rfc3339(&opened_at).ok()?;
        Some(Window {
            opened_at: opened_at.with_timezone(&Utc),
            failures: u32::try_from(failures).unwrap_or(u32::MAX),
        })
    }))
}

/// Counts an attempt for `key` at `now`, or refuses it (`Decision::Locked`). Call it in a write
/// transaction: the read and the write must not interleave with another attempt's.
pub fn begin(
    conn: &Connection,
    key: &ThrottleKey,
    now: DateTime<Utc>,
) -> rusqlite::Result<Decision> {
    let current = window(conn, key)?;
    let decision = throttle::attempt(current, now);
    if let Decision::Counted(next) = decision {
        conn.prepare_cached(
            "INSERT INTO login_throttle (key, opened_at, failures) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET opened_at = excluded.opened_at, failures = excluded.failures",
        )?
        .execute(params![key.as_str(), timestamp(next.opened_at), next.failures])?;
        if current.is_none() {
            keep_bounded(conn, now)?;
        }
    }
    Ok(decision)
}

/// A new key may take the table past `MAX_KEYS`: finished windows go first, then the oldest.
fn keep_bounded(conn: &Connection, now: DateTime<Utc>) -> rusqlite::Result<()> {
    let count: i64 = conn.query_row("SELECT count(*) FROM login_throttle", [], |r| r.get(0))?;
    if count <= MAX_KEYS {
        return Ok(());
    }
    let finished = timestamp(now - Duration::minutes(WINDOW_MINUTES));
    let removed = conn.execute(
        "DELETE FROM login_throttle WHERE opened_at <= ?1",
        [finished],
    )?;
    let over = count - i64::try_from(removed).unwrap_or(0) - MAX_KEYS;
    if over > 0 {
        conn.execute(
            "DELETE FROM login_throttle WHERE key IN
               (SELECT key FROM login_throttle ORDER BY opened_at LIMIT ?1)",
            [over],
        )?;
    }
    Ok(())
}

/// The attempt succeeded: the key starts afresh.
pub fn clear(conn: &Connection, key: &ThrottleKey) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM login_throttle WHERE key = ?1")?
        .execute([key.as_str()])?;
    Ok(())
}

/// The request turned out not to be a password attempt (a malformed one): it no longer counts.
pub fn withdraw(conn: &Connection, key: &ThrottleKey) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE login_throttle SET failures = failures - 1 WHERE key = ?1 AND failures > 0",
    )?
    .execute([key.as_str()])?;
    Ok(())
}

/// How many windows are kept (for tests and the bound).
pub fn count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT count(*) FROM login_throttle", [], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrations::run(&mut conn).unwrap();
        conn
    }

    #[test]
    fn counts_locks_and_clears_per_key() {
        let conn = db();
        let now = Utc::now();
        let key = ThrottleKey::staff("ana@x.cl");
        for _ in 0..5 {
            assert!(matches!(
                begin(&conn, &key, now).unwrap(),
                Decision::Counted(_)
            ));
        }
        assert!(matches!(
            begin(&conn, &key, now).unwrap(),
            Decision::Locked { .. }
        ));
        let other = ThrottleKey::commerce("76123456-0");
        assert!(matches!(
            begin(&conn, &other, now).unwrap(),
            Decision::Counted(_)
        ));
        withdraw(&conn, &other).unwrap();
        clear(&conn, &key).unwrap();
        assert!(
            matches!(begin(&conn, &key, now).unwrap(), Decision::Counted(w) if w.failures == 1)
        );
    }

    #[test]
    fn the_table_never_holds_more_than_max_keys() {
        let conn = db();
        let now = Utc::now();
        let old = timestamp(now - Duration::minutes(WINDOW_MINUTES + 1));
        let recent = timestamp(now - Duration::minutes(1));
        // Filled to the bound: a third finished windows, the rest still open.
        let tx = conn.unchecked_transaction().unwrap();
        for i in 0..MAX_KEYS {
            let at = if i % 3 == 0 { &old } else { &recent };
            tx.execute(
                "INSERT INTO login_throttle (key, opened_at, failures) VALUES (?1, ?2, 1)",
                params![format!("staff:spray{i}@x.cl"), at],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        begin(&conn, &ThrottleKey::staff("new@x.cl"), now).unwrap();
        let kept = count(&conn).unwrap();
        assert!(kept <= MAX_KEYS, "{kept}");
        assert!(kept > MAX_KEYS / 2, "open windows were kept: {kept}");
        // Only open windows are left, so the next new key evicts the oldest of them.
        for i in 0..10 {
            begin(&conn, &ThrottleKey::staff(&format!("more{i}@x.cl")), now).unwrap();
        }
        assert!(count(&conn).unwrap() <= MAX_KEYS);
    }
}
