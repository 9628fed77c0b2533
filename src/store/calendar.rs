//! The business-day calendar's rows: one-off holidays staff add, which days the installation
//! charges on, and each commerce's charging rule.

use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDate;
use rusqlite::{Connection, params};

use super::fresh_cache::{Epoch, FreshCache};
use super::optional;
use crate::domain::holidays::{ChargeDates, ChargingRule, Holiday, HolidayCalendar};

/// The setting that holds `BusinessDays` (`CHILE` or `EVERY_DAY`), written by `serve`.
pub const BUSINESS_DAYS: &str = "business_days";
pub const EVERY_DAY: &str = "EVERY_DAY";

/// Every holiday staff added, by date.
pub fn added(conn: &Connection) -> rusqlite::Result<Vec<Holiday>> {
    let mut stmt = conn.prepare_cached("SELECT date, name FROM holidays ORDER BY date")?;
    stmt.query_map([], |r| {
        let date: String = r.get(0)?;
        Ok(Holiday {
            date: date.parse().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    0,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?,
            name: r.get(1)?,
        })
    })?
    .collect()
}

/// The calendar charges follow: the Chilean one with the added days, or every day.
pub fn load(conn: &Connection) -> rusqlite::Result<HolidayCalendar> {
    let every_day: Option<String> = optional(
        conn.prepare_cached("SELECT value FROM settings WHERE name = ?1")?
            .query_row([BUSINESS_DAYS], |r| r.get(0)),
    )?;
    if every_day.as_deref() == Some(EVERY_DAY) {
        return Ok(HolidayCalendar::every_day());
    }
    Ok(HolidayCalendar::new(added(conn)?))
}

/// Adds a holiday; `false` when the day already has one added.
pub fn add(conn: &Connection, date: NaiveDate, name: &str, now: &str) -> rusqlite::Result<bool> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO holidays (date, name, created_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (date) DO NOTHING",
        )?
        .execute(params![date.to_string(), name, now])?;
    calendar_changed();
    Ok(inserted == 1)
}

/// Removes an added holiday; `false` when there was none that day.
pub fn remove(conn: &Connection, date: NaiveDate) -> rusqlite::Result<bool> {
    let removed = conn
        .prepare_cached("DELETE FROM holidays WHERE date = ?1")?
        .execute([date.to_string()])?;
    calendar_changed();
    Ok(removed == 1)
}

/// The commerce's charging rule (`NEXT` when the commerce is unknown).
pub fn charging_rule(conn: &Connection, commerce_id: i64) -> rusqlite::Result<ChargingRule> {
    let stored: Option<String> = optional(
        conn.prepare_cached("SELECT charging_rule FROM commerces WHERE id = ?1")?
            .query_row([commerce_id], |r| r.get(0)),
    )?;
    Ok(stored
        .as_deref()
        .and_then(ChargingRule::parse)
        .unwrap_or_default())
}

/// Sets the commerce's charging rule; `false` when there is no such commerce.
pub fn set_charging_rule(
    conn: &Connection,
    commerce_id: i64,
    rule: ChargingRule,
) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached("UPDATE commerces SET charging_rule = ?2 WHERE id = ?1")?
        .execute(params![commerce_id, rule.as_str()])?;
    calendar_changed();
    Ok(changed == 1)
}

/// The calendar and a commerce's rule: what a charge date needs.
pub fn charge_dates(conn: &Connection, commerce_id: i64) -> rusqlite::Result<ChargeDates> {
    Ok(ChargeDates {
        calendar: load(conn)?,
        rule: charging_rule(conn, commerce_id)?,
    })
}

/// Every commerce's charging rule, by commerce code.
pub fn charging_rules(
    conn: &Connection,
) -> rusqlite::Result<std::collections::HashMap<String, ChargingRule>> {
    let mut stmt = conn.prepare_cached("SELECT code, charging_rule FROM commerces")?;
    stmt.query_map([], |r| {
        let rule: String = r.get(1)?;
        Ok((r.get(0)?, ChargingRule::parse(&rule).unwrap_or_default()))
    })?
    .collect()
}

/// Bumped by every change this process makes to the added holidays, the business days or a
/// charging rule, which drops what the `ChargeDatesCache`s hold.
static CALENDAR_EPOCH: Epoch = Epoch::new();

/// How long a cached calendar and rule are trusted without reading them again: the bound on
/// how late a change made by another process is seen.
pub const CHARGE_DATES_TTL: Duration = Duration::from_secs(1);

/// Commerces cached, at most.
const CHARGE_DATES_MAX: usize = 1_024;

/// Called by every function that changes what `charge_dates` reads.
pub fn calendar_changed() {
    CALENDAR_EPOCH.bump();
}

/// Each commerce's calendar and rule, so that a request showing charge dates (a mandate
/// lookup, a creation) does not read the settings, the added holidays and the rule each time.
pub struct ChargeDatesCache(FreshCache<i64, Arc<ChargeDates>>);

impl Default for ChargeDatesCache {
    fn default() -> Self {
        ChargeDatesCache(FreshCache::new(
            &CALENDAR_EPOCH,
            CHARGE_DATES_TTL,
            CHARGE_DATES_MAX,
        ))
    }
}

impl ChargeDatesCache {
    /// The commerce's calendar and rule: the cached ones while current, else read on `conn`.
    pub fn get(&self, conn: &Connection, commerce_id: i64) -> rusqlite::Result<Arc<ChargeDates>> {
        self.0.get_or_load(commerce_id, || {
            charge_dates(conn, commerce_id).map(Arc::new)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::run(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO commerces (id, code, name, password_hash, payment_methods, webhook_secret, created_at)
               VALUES (1, 'C1', 'Uno', 'x', '[3]', 's', '2026-01-01T00:00:00.000Z');",
        )
        .unwrap();
        conn
    }

    #[test]
    fn cached_charge_dates_follow_this_process_changes_at_once() {
        let conn = migrated();
        let cache = ChargeDatesCache::default();
        // Saturday 7 March 2026: charged on Monday the 9th, or on Friday the 6th.
        let saturday = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
        let monday = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let friday = NaiveDate::from_ymd_opt(2026, 3, 6).unwrap();
        assert_eq!(cache.get(&conn, 1).unwrap().of(saturday), monday);
        assert!(set_charging_rule(&conn, 1, ChargingRule::Previous).unwrap());
        assert_eq!(cache.get(&conn, 1).unwrap().of(saturday), friday);
        assert!(add(&conn, friday, "Feriado local", "2026-01-01T00:00:00.000Z").unwrap());
        let thursday = NaiveDate::from_ymd_opt(2026, 3, 5).unwrap();
        assert_eq!(cache.get(&conn, 1).unwrap().of(saturday), thursday);
        assert!(remove(&conn, friday).unwrap());
        assert_eq!(cache.get(&conn, 1).unwrap().of(saturday), friday);
    }

    #[test]
    fn a_change_made_elsewhere_is_seen_within_the_ttl() {
        let conn = migrated();
        let cache = ChargeDatesCache::default();
        let saturday = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
        assert_eq!(
            cache.get(&conn, 1).unwrap().of(saturday),
            NaiveDate::from_ymd_opt(2026, 3, 9).unwrap()
        );
        // As another process (the CLI) would write it: no epoch bump here.
        conn.execute(
            "UPDATE commerces SET charging_rule = 'PREVIOUS' WHERE id = 1",
            [],
        )
        .unwrap();
        std::thread::sleep(CHARGE_DATES_TTL);
        assert_eq!(
            cache.get(&conn, 1).unwrap().of(saturday),
            NaiveDate::from_ymd_opt(2026, 3, 6).unwrap()
        );
    }
}
