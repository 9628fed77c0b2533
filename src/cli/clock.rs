//! `mandato sandbox clock [show | advance --days N | --to DATE]` (CONTRACT 14): the
//! installation's business clock from the command line, as `GET`/`POST /api/v1/sandbox/clock`
//! move it. Advancing runs the charging engine for every date crossed, in order, and stores
//! the offset; a running `serve` follows the stored clock within a second.

use std::sync::Arc;

use chrono::NaiveDate;
use clap::Subcommand;
use serde_json::{Value, json};

use super::acquirer::refusal;
use super::dev::require_sandbox;
use super::print;
use crate::charging::run::{Charger, RunSummary, Trigger};
use crate::clock::{BusinessCalendar, Clock, SystemClock};
use crate::config::Config;
use crate::store::{Store, calendar, settings};

#[derive(Subcommand, Debug)]
pub enum ClockAction {
    /// Today's business date, the offset from the wall clock, and whether it is a business day.
    Show,
    /// Move the business clock forward (only), charging each date crossed, as
    /// `POST /api/v1/sandbox/clock` does.
    Advance {
        /// 1 to 400 days.
        #[arg(long, conflicts_with = "to", required_unless_present = "to")]
        days: Option<i64>,
        /// A business date after today (YYYY-MM-DD), at most 400 days ahead.
        #[arg(long)]
        to: Option<String>,
    },
}

pub fn run(config: &Config, json_mode: bool, action: Option<ClockAction>) -> anyhow::Result<()> {
    let store = Arc::new(config.open_store()?);
    require_sandbox(&store, "the sandbox clock")?;
    let calendar = stored_calendar(config, &store)?;
    match action.unwrap_or(ClockAction::Show) {
        ClockAction::Show => show(&store, &calendar, json_mode, Vec::new()),
        ClockAction::Advance { days, to } => {
            let request = crate::http::sandbox::AdvanceRequest {
                advance_to: to,
                advance_days: days,
            };
            let today = calendar.today(SystemClock.now());
            let target = crate::http::sandbox::advance_target(&request, today).map_err(refusal)?;
            let runs = advance(config, &store, &calendar, target)?;
            show(&store, &calendar, json_mode, runs)
        }
    }
}

/// The business calendar with the offset the installation stored.
fn stored_calendar(config: &Config, store: &Store) -> anyhow::Result<BusinessCalendar> {
    let offset = store.read(|c| Ok(settings::get(c, settings::SANDBOX_OFFSET_DAYS)?))?;
    Ok(BusinessCalendar::new(
        config.time_zone,
        offset.and_then(|o| o.parse().ok()).unwrap_or(0),
    ))
}

/// Moves the clock a day at a time up to `target`, storing each day's offset before that
/// day's run, so an interrupted advance resumes where it stopped.
fn advance(
    config: &Config,
    store: &Arc<Store>,
    calendar: &BusinessCalendar,
    target: NaiveDate,
) -> anyhow::Result<Vec<RunSummary>> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rails = Arc::new(crate::rails::Rails::new(
        Arc::clone(store),
        Arc::clone(&clock),
        true,
        config.acquirer_limits(),
    )?);
    let charger = Charger::new(Arc::clone(store), rails, clock, true, Box::new(|| {}));
    let mut runs = Vec::new();
    let start = calendar.today(SystemClock.now());
    for date in start.iter_days().skip(1).take_while(|d| *d <= target) {
        calendar.set_offset_days(calendar.offset_days() + 1);
        let days = calendar.offset_days().to_string();
        store.write(|tx| Ok(settings::set(tx, settings::SANDBOX_OFFSET_DAYS, &days)?))?;
        runs.push(
            charger
                .run(date, Trigger::Sandbox)
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        );
    }
    Ok(runs)
}

fn show(
    store: &Store,
    calendar: &BusinessCalendar,
    json_mode: bool,
    runs: Vec<RunSummary>,
) -> anyhow::Result<()> {
    let today = calendar.today(SystemClock.now());
    let days = store.read(|c| Ok(calendar::load(c)?))?;
    let business_day = days.is_business_day(today);
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({"date": r.date.to_string(), "businessDay": r.business_day,
                   "attempted": r.counts.attempted, "paid": r.counts.paid,
                   "rejected": r.counts.rejected, "inValidation": r.counts.in_validation,
                   "settled": r.counts.settled})
        })
        .collect();
    let text = format!(
        "business date {today} ({} day(s) ahead of the wall clock){}{}",
        calendar.offset_days(),
        if business_day {
            ""
        } else {
            ", not a business day"
        },
        if runs.is_empty() {
            String::new()
        } else {
            format!("; {} date(s) charged", runs.len())
        }
    );
    print(
        json_mode,
        json!({"today": today.to_string(), "offsetDays": calendar.offset_days(),
               "businessDay": business_day, "runs": runs}),
        text,
    );
    Ok(())
}
