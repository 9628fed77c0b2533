//! `mandato holidays add|remove|list` and `mandato commerce set-charging-rule`.

use clap::Subcommand;
use serde_json::json;

use super::dev::{fail, resolve_commerce};
use super::print;
use crate::clock::{SystemClock, timestamp};
use crate::config::Config;
use crate::domain::holidays::{
    ChargingRule, FIRST_YEAR, Holiday, HolidayCalendar, HolidayYear, LAST_YEAR,
};
use crate::store::calendar;

#[derive(Subcommand, Debug)]
pub enum HolidaysCommand {
    /// Add a one-off holiday (a decreed day): no charge is made and no bank debit settles on it.
    Add {
        /// The day, YYYY-MM-DD.
        date: String,
        /// Its name, as lists show it.
        name: String,
    },
    /// Remove a holiday added with `holidays add` (the national ones are computed).
    Remove {
        /// The day, YYYY-MM-DD.
        date: String,
    },
    /// The year's holidays by date: national ones, 31 December (banks) and added ones.
    List {
        #[arg(long)]
        year: String,
    },
}

pub fn run(config: &Config, json_mode: bool, command: HolidaysCommand) -> anyhow::Result<()> {
    match command {
        HolidaysCommand::Add { date, name } => add(config, json_mode, &date, &name),
        HolidaysCommand::Remove { date } => remove(config, json_mode, &date),
        HolidaysCommand::List { year } => list(config, json_mode, &year),
    }
}

fn add(config: &Config, json_mode: bool, date: &str, name: &str) -> anyhow::Result<()> {
    let holiday = Holiday::added(date, name).map_err(|errors| {
        let first = errors[0];
        let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
        fail(first.code(), all.join("; "))
    })?;
    let store = config.open_store()?;
    let now = timestamp(crate::clock::Clock::now(&SystemClock));
    let added = store.write(|tx| Ok(calendar::add(tx, holiday.date, &holiday.name, &now)?))?;
    if !added {
        return Err(fail(
            "HOLIDAY_EXISTS",
            format!("{} already has an added holiday", holiday.date),
        ));
    }
    print(
        json_mode,
        json!({"date": holiday.date.to_string(), "name": holiday.name}),
        format!("holiday added: {} {}", holiday.date, holiday.name),
    );
    Ok(())
}

fn remove(config: &Config, json_mode: bool, date: &str) -> anyhow::Result<()> {
    let day = crate::domain::date::Date::parse(date)
        .map_err(|_| fail("INVALID_DATE", "the date must be YYYY-MM-DD"))?
        .naive();
    let store = config.open_store()?;
    let removed = store.write(|tx| Ok(calendar::remove(tx, day)?))?;
    if !removed {
        return Err(fail(
            "HOLIDAY_NOT_FOUND",
            format!("no holiday was added on {day}"),
        ));
    }
    print(
        json_mode,
        json!({"date": day.to_string(), "removed": true}),
        format!("holiday removed: {day}"),
    );
    Ok(())
}

fn list(config: &Config, json_mode: bool, year: &str) -> anyhow::Result<()> {
    let year = HolidayYear::parse(year).map_err(|_| {
        fail(
            "INVALID_YEAR",
            format!("the year must be from {FIRST_YEAR} to {LAST_YEAR}"),
        )
    })?;
    let store = config.open_store()?;
    let added = store.read(|c| Ok(calendar::added(c)?))?;
    let payload = crate::http::calendar::holidays_payload(&HolidayCalendar::new(added), year);
    let text = payload
        .holidays
        .iter()
        .map(|h| format!("{}  {}", h.date, h.name))
        .collect::<Vec<_>>()
        .join("\n");
    print(json_mode, serde_json::to_value(&payload)?, text);
    Ok(())
}

/// `commerce set-charging-rule --code C --rule next|previous`.
pub fn set_charging_rule(
    config: &Config,
    json_mode: bool,
    code: &str,
    rule: &str,
) -> anyhow::Result<()> {
    let rule = ChargingRule::parse(rule)
        .ok_or_else(|| fail("INVALID_RULE", "the rule must be next or previous"))?;
    let store = config.open_store()?;
    let commerce = resolve_commerce(&store, Some(code))?;
    store.write(|tx| Ok(calendar::set_charging_rule(tx, commerce.id, rule)?))?;
    print(
        json_mode,
        json!({"code": commerce.code, "chargingRule": rule.as_str()}),
        format!(
            "commerce {}: charges due on a weekend or holiday go to the {} business day",
            commerce.code,
            match rule {
                ChargingRule::Next => "next",
                ChargingRule::Previous => "previous",
            }
        ),
    );
    Ok(())
}
