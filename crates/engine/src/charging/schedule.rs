//! When runs happen: once a day at the configured local time (default 06:00 in the
//! environment's time zone), and at start for every business date missed while closed, in
//! order. The sandbox clock runs crossed dates itself; this loop then finds them done.

use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveDate, NaiveTime};
use tokio::sync::Notify;

use super::run::{Charger, Trigger};
use mandato_core::clock::{BusinessCalendar, Clock};
use mandato_store::Store;
use mandato_store::charging as store;

/// Catch-up never reaches further back than this.
const MAX_CATCH_UP_DAYS: i64 = 400;

pub struct Schedule {
    pub charger: Arc<Charger>,
    pub store: Arc<Store>,
    pub clock: Arc<dyn Clock>,
    pub calendar: Arc<BusinessCalendar>,
    pub run_at: NaiveTime,
}

impl Schedule {
    /// The business dates that should have run by now and have not, oldest first.
    pub fn missed_dates(&self) -> anyhow::Result<Vec<NaiveDate>> {
        let business_now = self
            .calendar
            .now(self.clock.now())
            .with_timezone(&self.calendar.time_zone());
        let today = business_now.date_naive();
        let through = if business_now.time() >= self.run_at {
            today
        } else {
            today - chrono::Duration::days(1)
        };
        let last = self.store.read(|c| Ok(store::last_run_date(c)?))?;
        let from = match last.and_then(|d| d.parse::<NaiveDate>().ok()) {
            Some(last) => (last + chrono::Duration::days(1))
                .max(through - chrono::Duration::days(MAX_CATCH_UP_DAYS)),
            // A fresh installation starts with today's run, not with the past.
            None => today,
        };
        Ok(from.iter_days().take_while(|d| *d <= through).collect())
    }

    /// How long until the next scheduled run, in wall-clock time.
    fn until_next_run(&self) -> Duration {
        let tz = self.calendar.time_zone();
        let business_now = self.calendar.now(self.clock.now()).with_timezone(&tz);
        let today_at = business_now.date_naive().and_time(self.run_at);
        let next = if business_now.naive_local() < today_at {
            today_at
        } else {
            today_at + chrono::Duration::days(1)
        };
        let wait = next - business_now.naive_local();
        wait.to_std()
            .unwrap_or(Duration::from_secs(60))
            .max(Duration::from_secs(1))
    }

    /// Runs missed dates, then each day's run, until `stop`. `wake` makes it look again (the
    /// sandbox clock moved).
    pub async fn run(self, wake: Arc<Notify>, stop: Arc<Notify>) {
        loop {
            match self.missed_dates() {
                Ok(dates) => {
                    let catching_up = dates.len() > 1;
                    for date in dates {
                        let charger = Arc::clone(&self.charger);
                        let trigger = if catching_up {
                            Trigger::CatchUp
                        } else {
                            Trigger::Schedule
                        };
                        match tokio::task::spawn_blocking(move || charger.run(date, trigger)).await
                        {
                            Ok(Ok(_)) => {}
                            Ok(Err(e)) => tracing::error!(error = %e, %date, "charging run failed"),
                            Err(e) => tracing::error!(error = %e, %date, "charging run panicked"),
                        }
                    }
                }
                Err(e) => tracing::error!(error = %e, "could not work out the dates to charge"),
            }
            // Wake at least hourly, so that clock changes of the machine are noticed.
            let wait = self.until_next_run().min(Duration::from_secs(3600));
            tokio::select! {
                _ = stop.notified() => return,
                _ = wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}
