//! Time is passed in, never read with `now()` inside business logic. The wall clock drives JWT
//! expiry, header skew and timestamps; the business calendar (the wall clock in the environment's
//! time zone, shifted by the sandbox's offset in days) drives due dates and link expiry.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use chrono_tz::Tz;

pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The real wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The wall clock shifted by an adjustable offset: time flows as usual (timers fire), and a
/// test can jump ahead (to expire a token, say).
#[derive(Default)]
pub struct ShiftedClock(Mutex<Duration>);

impl ShiftedClock {
    pub fn new() -> Self {
        ShiftedClock(Mutex::new(Duration::zero()))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) += by;
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Business time: the environment's time zone plus the sandbox offset in whole days.
pub struct BusinessCalendar {
    tz: Tz,
    offset_days: AtomicI64,
}

impl BusinessCalendar {
    pub fn new(tz: Tz, offset_days: i64) -> Self {
        BusinessCalendar {
            tz,
            offset_days: AtomicI64::new(offset_days),
        }
    }

    pub fn time_zone(&self) -> Tz {
        self.tz
    }

    pub fn offset_days(&self) -> i64 {
        self.offset_days.load(Ordering::Relaxed)
    }

    pub fn set_offset_days(&self, days: i64) {
        self.offset_days.store(days, Ordering::Relaxed);
    }

    /// Moves the offset forward to `days`, never back: the sandbox clock only moves forward,
    /// so a stored offset read before a newer one was set cannot undo it.
    pub fn catch_up_to(&self, days: i64) {
        self.offset_days.fetch_max(days, Ordering::Relaxed);
    }

    /// Business "now": the wall clock moved forward by the sandbox offset.
    pub fn now(&self, wall: DateTime<Utc>) -> DateTime<Utc> {
        wall + Duration::days(self.offset_days())
    }

    /// The business date of a wall-clock instant.
    pub fn today(&self, wall: DateTime<Utc>) -> NaiveDate {
        self.now(wall).with_timezone(&self.tz).date_naive()
    }
}

/// The one timestamp format on the wire and in the database: RFC 3339, UTC, milliseconds, `Z`.
pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn business_date_is_santiago_local() {
        let cal = BusinessCalendar::new(chrono_tz::America::Santiago, 0);
        // 02:00 UTC on 1 Dec is still 30 Nov in Santiago (UTC-3 in summer).
        let wall = "2026-12-01T02:00:00Z".parse().unwrap();
        assert_eq!(cal.today(wall).to_string(), "2026-11-30");
        cal.set_offset_days(2);
        assert_eq!(cal.today(wall).to_string(), "2026-12-02");
    }

    #[test]
    fn a_stored_offset_only_moves_the_clock_forward() {
        let cal = BusinessCalendar::new(chrono_tz::America::Santiago, 3);
        cal.catch_up_to(2);
        assert_eq!(cal.offset_days(), 3, "an older stored offset is ignored");
        cal.catch_up_to(5);
        assert_eq!(cal.offset_days(), 5);
    }

    #[test]
    fn timestamps_have_millis_and_z() {
        let at = "2026-12-05T09:00:01.123456Z".parse().unwrap();
        assert_eq!(timestamp(at), "2026-12-05T09:00:01.123Z");
    }
}
