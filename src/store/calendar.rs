//! The business-day calendar's rows: one-off holidays staff add, which days the installation
//! charges on, and each commerce's charging rule.

use chrono::NaiveDate;
use rusqlite::{Connection, params};

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
    Ok(inserted == 1)
}

/// Removes an added holiday; `false` when there was none that day.
pub fn remove(conn: &Connection, date: NaiveDate) -> rusqlite::Result<bool> {
    let removed = conn
        .prepare_cached("DELETE FROM holidays WHERE date = ?1")?
        .execute([date.to_string()])?;
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
