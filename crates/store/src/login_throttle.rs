//! The sign-in throttle's windows (`auth::throttle` decides; this keeps them).

use chrono::{DateTime, Duration, Utc};

use super::db::{self, Db, params};
use mandato_core::auth::throttle::{self, Decision, MAX_KEYS, ThrottleKey, WINDOW_MINUTES, Window};
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

/// Counts an attempt for `key` at `now`, or refuses it (`Decision::Locked`). Call it in a write
/// transaction: the read and the write must not interleave with another attempt's.
pub fn begin<'c>(
    db: impl Into<Db<'c>>,
    key: &ThrottleKey,
    now: DateTime<Utc>,
) -> db::Result<Decision> {
    let db = db.into();
    let current = window(db, key)?;
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
        if current.is_none() {
            keep_bounded(db, now)?;
        }
    }
    Ok(decision)
}

/// A new key may take the table past `MAX_KEYS`: finished windows go first, then the oldest.
fn keep_bounded(db: Db<'_>, now: DateTime<Utc>) -> db::Result<()> {
    let count = count(db)?;
    if count <= MAX_KEYS {
        return Ok(());
    }
    let finished = timestamp(now - Duration::minutes(WINDOW_MINUTES));
    let removed = db.execute(
        "DELETE FROM login_throttle WHERE opened_at <= ?1",
        &params![finished.as_str()],
    )?;
    let over = count - i64::try_from(removed).unwrap_or(0) - MAX_KEYS;
    if over > 0 {
        db.execute(
            "DELETE FROM login_throttle WHERE key IN
               (SELECT key FROM login_throttle ORDER BY opened_at LIMIT ?1)",
            &params![over],
        )?;
    }
    Ok(())
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
    fn the_table_never_holds_more_than_max_keys() {
        on_both(|db| {
            let now = Utc::now();
            let old = timestamp(now - Duration::minutes(WINDOW_MINUTES + 1));
            let recent = timestamp(now - Duration::minutes(1));
            // Filled to the bound: a third finished windows, the rest still open.
            db.execute(
                "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
                 INSERT INTO login_throttle (key, opened_at, failures)
                 SELECT 'staff:spray' || i || '@x.cl', CASE WHEN i % 3 = 0 THEN ?2 ELSE ?3 END, 1
                 FROM n",
                &params![MAX_KEYS, &old, &recent],
            )
            .unwrap();
            begin(db, &ThrottleKey::staff("new@x.cl"), now).unwrap();
            let kept = count(db).unwrap();
            assert!(kept <= MAX_KEYS, "{kept}");
            assert!(kept > MAX_KEYS / 2, "open windows were kept: {kept}");
            // Only open windows are left, so the next new key evicts the oldest of them.
            for i in 0..10 {
                begin(db, &ThrottleKey::staff(&format!("more{i}@x.cl")), now).unwrap();
            }
            assert!(count(db).unwrap() <= MAX_KEYS);
        });
    }
}
