//! The business-day calendar's rows: one-off holidays staff add, which days the installation
//! charges on, and each commerce's charging rule.

use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDate;

use super::db::{self, Db, params};
use super::fresh_cache::{Epoch, FreshCache};
use mandato_core::domain::holidays::{ChargeDates, ChargingRule, Holiday, HolidayCalendar};

/// The setting that holds `BusinessDays` (`CHILE` or `EVERY_DAY`), written by `serve`.
pub const BUSINESS_DAYS: &str = "business_days";
pub const EVERY_DAY: &str = "EVERY_DAY";

/// Every holiday staff added, by date.
pub fn added<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<Holiday>> {
    db.into().query_map(
        "SELECT date, name FROM holidays ORDER BY date",
        &params![],
        |r| {
            let date: String = r.get(0)?;
            Ok(Holiday {
                date: date
                    .parse()
                    .map_err(|e: chrono::ParseError| db::Error::column(0, e))?,
                name: r.get(1)?,
            })
        },
    )
}

/// The calendar charges follow: the Chilean one with the added days, or every day.
pub fn load<'c>(db: impl Into<Db<'c>>) -> db::Result<HolidayCalendar> {
    let db = db.into();
    let every_day: Option<String> = db.query_opt(
        "SELECT value FROM settings WHERE name = ?1",
        &params![BUSINESS_DAYS],
        |r| r.get(0),
    )?;
    if every_day.as_deref() == Some(EVERY_DAY) {
        return Ok(HolidayCalendar::every_day());
    }
    Ok(HolidayCalendar::new(added(db)?))
}

/// Adds a holiday; `false` when the day already has one added.
pub fn add<'c>(db: impl Into<Db<'c>>, date: NaiveDate, name: &str, now: &str) -> db::Result<bool> {
    let inserted = db.into().execute(
        "INSERT INTO holidays (date, name, created_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (date) DO NOTHING",
        &params![date.to_string().as_str(), name, now],
    )?;
    calendar_changed();
    Ok(inserted == 1)
}

/// Removes an added holiday; `false` when there was none that day.
pub fn remove<'c>(db: impl Into<Db<'c>>, date: NaiveDate) -> db::Result<bool> {
    let removed = db.into().execute(
        "DELETE FROM holidays WHERE date = ?1",
        &params![date.to_string().as_str()],
    )?;
    calendar_changed();
    Ok(removed == 1)
}

/// The commerce's charging rule (`NEXT` when the commerce is unknown).
pub fn charging_rule<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<ChargingRule> {
    let stored: Option<String> = db.into().query_opt(
        "SELECT charging_rule FROM commerces WHERE id = ?1",
        &params![commerce_id],
        |r| r.get(0),
    )?;
    Ok(stored
        .as_deref()
        .and_then(ChargingRule::parse)
        .unwrap_or_default())
}

/// Sets the commerce's charging rule; `false` when there is no such commerce.
pub fn set_charging_rule<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    rule: ChargingRule,
) -> db::Result<bool> {
    let changed = db.into().execute(
        "UPDATE commerces SET charging_rule = ?2 WHERE id = ?1",
        &params![commerce_id, rule.as_str()],
    )?;
    calendar_changed();
    Ok(changed == 1)
}

/// The calendar and a commerce's rule: what a charge date needs.
pub fn charge_dates<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<ChargeDates> {
    let db = db.into();
    Ok(ChargeDates {
        calendar: load(db)?,
        rule: charging_rule(db, commerce_id)?,
    })
}

/// Every commerce's charging rule, by commerce code.
pub fn charging_rules<'c>(
    db: impl Into<Db<'c>>,
) -> db::Result<std::collections::HashMap<String, ChargingRule>> {
    let rules = db.into().query_map(
        "SELECT code, charging_rule FROM commerces",
        &params![],
        |r| {
            let rule: String = r.get(1)?;
            Ok((r.get(0)?, ChargingRule::parse(&rule).unwrap_or_default()))
        },
    )?;
    Ok(rules.into_iter().collect())
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
    /// The commerce's calendar and rule: the cached ones while current, else read on `db`.
    pub fn get<'c>(&self, db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<Arc<ChargeDates>> {
        self.0
            .get_or_load(commerce_id, || charge_dates(db, commerce_id).map(Arc::new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    fn with_commerce(db: Db<'_>) {
        db.execute_batch(
            "INSERT INTO commerces (id, code, name, password_hash, payment_methods, webhook_secret, created_at)
               VALUES (1, 'C1', 'Uno', 'x', '[3]', 's', '2026-01-01T00:00:00.000Z');",
        )
        .unwrap();
    }

    #[test]
    fn cached_charge_dates_follow_this_process_changes_at_once() {
        on_both(|db| {
            with_commerce(db);
            let cache = ChargeDatesCache::default();
            // Saturday 7 March 2026: charged on Monday the 9th, or on Friday the 6th.
            let saturday = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
            let monday = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
            let friday = NaiveDate::from_ymd_opt(2026, 3, 6).unwrap();
            assert_eq!(cache.get(db, 1).unwrap().of(saturday), monday);
            assert!(set_charging_rule(db, 1, ChargingRule::Previous).unwrap());
            assert_eq!(cache.get(db, 1).unwrap().of(saturday), friday);
            assert!(add(db, friday, "Feriado local", "2026-01-01T00:00:00.000Z").unwrap());
            assert!(!add(db, friday, "Otra vez", "2026-01-01T00:00:00.000Z").unwrap());
            let thursday = NaiveDate::from_ymd_opt(2026, 3, 5).unwrap();
            assert_eq!(cache.get(db, 1).unwrap().of(saturday), thursday);
            assert_eq!(added(db).unwrap().len(), 1);
            assert!(remove(db, friday).unwrap());
            assert!(!remove(db, friday).unwrap());
            assert_eq!(cache.get(db, 1).unwrap().of(saturday), friday);
            assert_eq!(
                charging_rules(db).unwrap().get("C1"),
                Some(&ChargingRule::Previous)
            );
            assert_eq!(charging_rule(db, 2).unwrap(), ChargingRule::default());
        });
    }

    #[test]
    fn every_day_charges_on_weekends_too() {
        on_both(|db| {
            with_commerce(db);
            db.execute(
                "INSERT INTO settings (name, value) VALUES (?1, ?2)",
                &params![BUSINESS_DAYS, EVERY_DAY],
            )
            .unwrap();
            let saturday = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
            assert_eq!(charge_dates(db, 1).unwrap().of(saturday), saturday);
        });
    }

    #[test]
    fn a_change_made_elsewhere_is_seen_within_the_ttl() {
        on_both(|db| {
            with_commerce(db);
            let cache = ChargeDatesCache::default();
            let saturday = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
            assert_eq!(
                cache.get(db, 1).unwrap().of(saturday),
                NaiveDate::from_ymd_opt(2026, 3, 9).unwrap()
            );
            // As another process (the CLI) would write it: no epoch bump here.
            db.execute(
                "UPDATE commerces SET charging_rule = 'PREVIOUS' WHERE id = 1",
                &params![],
            )
            .unwrap();
            std::thread::sleep(CHARGE_DATES_TTL);
            assert_eq!(
                cache.get(db, 1).unwrap().of(saturday),
                NaiveDate::from_ymd_opt(2026, 3, 6).unwrap()
            );
        });
    }
}
