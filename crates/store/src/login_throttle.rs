//! The sign-in throttle's windows (`auth::throttle` decides; this keeps them).

use chrono::{DateTime, Duration, Utc};

use super::db::{self, Db, params};
use mandato_core::auth::throttle::{
    self, Decision, MAX_KEYS, ThrottleKey, WINDOW_MINUTES, Window, seconds_left,
};
use mandato_core::clock::timestamp;

fn window(db: Db<'_>, key: &ThrottleKey) -> db::Result<Option<Window>> {
    let row: Option<(String, i64)> = db.query_opt(
        "SELECT opened_at, failures FROM login_throttle WHERE key = ?1",
        &params![key.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(row.and_then(|(opened_at, failures)| {
        // A row we cannot read counts as no window rather than failing every sign-in.
        let opened_at = DateTime::parse_from_rfc3339(&opened_at).ok()?;
        Some(Window {
            opened_at: opened_at.with_timezone(&Utc),
            failures: u32::try_from(failures).unwrap_or(u32::MAX),
        })
    }))
}

/// Counts an attempt for `key` at `now`, or refuses it (`Decision::Locked`, or
/// `Decision::Crowded` for a new key while the table is full of open windows). Call it in a
/// write transaction: the read and the write must not interleave with another attempt's.
pub fn begin<'c>(
    db: impl Into<Db<'c>>,
    key: &ThrottleKey,
    now: DateTime<Utc>,
) -> db::Result<Decision> {
    let db = db.into();
    let current = window(db, key)?;
    if current.is_none()
        && let Some(retry_after_secs) = no_room_for_a_new_key(db, now)?
    {
        return Ok(Decision::Crowded { retry_after_secs });
    }
    let decision = throttle::attempt(current, now);
    if let Decision::Counted(next) = decision {
        db.execute(
            "INSERT INTO login_throttle (key, opened_at, failures) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET opened_at = excluded.opened_at, failures = excluded.failures",
            &params![
                key.as_str(),
                timestamp(next.opened_at).as_str(),
                i64::from(next.failures)
            ],
        )?;
    }
    Ok(decision)
}

/// `None` when a new key fits under `MAX_KEYS` (after dropping finished windows if the table is
/// full); otherwise the seconds until the oldest open window ends. Open windows are never
/// dropped: a lock must outlast any flood of invented keys.
fn no_room_for_a_new_key(db: Db<'_>, now: DateTime<Utc>) -> db::Result<Option<u64>> {
    if count(db)? < MAX_KEYS {
        return Ok(None);
    }
    let finished = timestamp(now - Duration::minutes(WINDOW_MINUTES));
    let removed = db.execute(
        "DELETE FROM login_throttle WHERE opened_at <= ?1",
        &params![finished.as_str()],
    )?;
    if removed > 0 {
        return Ok(None);
    }
    let oldest: Option<String> = db.query_row(
        "SELECT min(opened_at) FROM login_throttle",
        &params![],
        |r| r.get(0),
    )?;
    let oldest = oldest
        .and_then(|at| DateTime::parse_from_rfc3339(&at).ok())
        .map(|at| at.with_timezone(&Utc))
        .unwrap_or(now);
    let window = Window {
        opened_at: oldest,
        failures: 0,
    };
    Ok(Some(seconds_left(&window, now)))
}

/// The attempt succeeded: the key starts afresh.
pub fn clear<'c>(db: impl Into<Db<'c>>, key: &ThrottleKey) -> db::Result<()> {
    db.into().execute(
        "DELETE FROM login_throttle WHERE key = ?1",
        &params![key.as_str()],
    )?;
    Ok(())
}

/// The request turned out not to be a password attempt (a malformed one): it no longer counts.
pub fn withdraw<'c>(db: impl Into<Db<'c>>, key: &ThrottleKey) -> db::Result<()> {
    db.into().execute(
        "UPDATE login_throttle SET failures = failures - 1 WHERE key = ?1 AND failures > 0",
        &params![key.as_str()],
    )?;
    Ok(())
}

/// How many windows are kept (for tests and the bound).
pub fn count<'c>(db: impl Into<Db<'c>>) -> db::Result<i64> {
    db.into()
        .query_row("SELECT count(*) FROM login_throttle", &params![], |r| {
            r.get(0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    #[test]
    fn counts_locks_and_clears_per_key() {
        on_both(|db| {
            let now = Utc::now();
            let key = ThrottleKey::staff("ana@x.cl");
            for _ in 0..5 {
                assert!(matches!(
                    begin(db, &key, now).unwrap(),
                    Decision::Counted(_)
                ));
            }
            assert!(matches!(
                begin(db, &key, now).unwrap(),
                Decision::Locked { .. }
            ));
            let other = ThrottleKey::commerce("76123456-0");
            assert!(matches!(
                begin(db, &other, now).unwrap(),
                Decision::Counted(_)
            ));
            withdraw(db, &other).unwrap();
            clear(db, &key).unwrap();
            assert!(
                matches!(begin(db, &key, now).unwrap(), Decision::Counted(w) if w.failures == 1)
            );
        });
    }

    #[test]
    fn a_full_table_refuses_new_keys_and_keeps_every_open_window() {
        on_both(|db| {
            let now = Utc::now();
            let locked = ThrottleKey::staff("target@x.cl");
            for _ in 0..6 {
                begin(db, &locked, now).unwrap();
            }
            let recent = timestamp(now - Duration::minutes(1));
            // Filled to the bound with open windows (the lock included), as a flood leaves it.
            db.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
                 INSERT INTO login_throttle (key, opened_at, failures)
                 SELECT 'staff:spray' || i || '@x.cl', ?2, 1 FROM n",
                &params![MAX_KEYS, &recent],
            )
            .unwrap();
            assert_eq!(count(db).unwrap(), MAX_KEYS);
            match begin(db, &ThrottleKey::staff("one-more@x.cl"), now).unwrap() {
                Decision::Crowded { retry_after_secs } => {
                    assert!(
                        (1..=15 * 60).contains(&retry_after_secs),
                        "{retry_after_secs}"
                    )
                }
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                begin(db, &locked, now).unwrap(),
                Decision::Locked { .. }
            ));
            // Keys that have a window go on being counted while the table is full.
            assert!(matches!(
                begin(db, &ThrottleKey::staff("spray1@x.cl"), now).unwrap(),
                Decision::Counted(w) if w.failures == 2
            ));
            assert_eq!(count(db).unwrap(), MAX_KEYS);
            // Finished windows make room: they go, and the new key is counted.
            let old = timestamp(now - Duration::minutes(WINDOW_MINUTES + 1));
            db.execute(
                "UPDATE login_throttle SET opened_at = ?1 WHERE key IN
                   ('staff:spray2@x.cl', 'staff:spray3@x.cl', 'staff:spray4@x.cl')",
                &params![&old],
            )
            .unwrap();
            assert!(matches!(
                begin(db, &ThrottleKey::staff("one-more@x.cl"), now).unwrap(),
                Decision::Counted(_)
            ));
            assert_eq!(count(db).unwrap(), MAX_KEYS - 2);
            assert!(matches!(
                begin(db, &locked, now).unwrap(),
                Decision::Locked { .. }
            ));
        });
    }
}
