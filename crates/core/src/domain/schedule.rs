//! Due dates of periodic installments (CONTRACT 5, `periodicity`).
//!
//! Every due date is computed from the start date, never from the previous due date: a monthly
//! mandate starting on 31 January falls due on 28 (or 29) February, then on 31 March, then on
//! 30 April, keeping the start day whenever the month has it. Adding a month to the previous date
//! instead would drift to the 28th for good after February.

use std::fmt;

use chrono::{Days, Months};
use thiserror::Error;

use super::date::Date;

/// The most installments one schedule may have. A hundred years of monthly charges, or twenty-three
/// years of weekly ones, is far beyond any real mandate, and the bound keeps a mistyped count or
/// end date from generating an unbounded number of rows.
pub const MAX_INSTALLMENTS: u32 = 1200;

/// How often a periodic mandate charges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Periodicity {
    Weekly,
    Monthly,
    Bimonthly,
    Quarterly,
    Semiannual,
    Annual,
}

impl Periodicity {
    /// Every periodicity, from the shortest period to the longest.
    pub const ALL: &'static [Periodicity] = &[
        Periodicity::Weekly,
        Periodicity::Monthly,
        Periodicity::Bimonthly,
        Periodicity::Quarterly,
        Periodicity::Semiannual,
        Periodicity::Annual,
    ];

    /// Reads the wire name. Only the exact upper-case names are accepted, because the wire format
    /// is a fixed enumeration and guessing would hide a client bug.
    pub fn parse(name: &str) -> Option<Periodicity> {
        Periodicity::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == name)
    }

    /// The wire name, as sent in `periodicity`.
    pub fn as_str(self) -> &'static str {
        match self {
            Periodicity::Weekly => "WEEKLY",
            Periodicity::Monthly => "MONTHLY",
            Periodicity::Bimonthly => "BIMONTHLY",
            Periodicity::Quarterly => "QUARTERLY",
            Periodicity::Semiannual => "SEMIANNUAL",
            Periodicity::Annual => "ANNUAL",
        }
    }

    /// The length of one period in months, or `None` for the weekly periodicity, which counts
    /// days instead.
    pub fn months(self) -> Option<u32> {
        match self {
            Periodicity::Weekly => None,
            Periodicity::Monthly => Some(1),
            Periodicity::Bimonthly => Some(2),
            Periodicity::Quarterly => Some(3),
            Periodicity::Semiannual => Some(6),
            Periodicity::Annual => Some(12),
        }
    }
}

impl fmt::Display for Periodicity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a schedule cannot be generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ScheduleError {
    /// The count, or the end date, asks for more than [`MAX_INSTALLMENTS`] installments.
    #[error("the schedule would have more than 1200 installments")]
    TooManyInstallments,
    /// A due date would fall after [`Date::MAX`], 9999-12-31.
    #[error("a due date of the schedule would fall after 9999-12-31")]
    DateOutOfRange,
}

/// The due date of installment `n`, counted from 0: installment 0 falls on `start`. Weekly
/// installments are `7 * n` days after the start; the others are `n` periods of months after it,
/// on the start's day of the month or on the month's last day when it is shorter. `None` when
/// the date would fall after [`Date::MAX`].
pub fn nth_due_date(start: Date, periodicity: Periodicity, n: u32) -> Option<Date> {
    let start = start.naive();
    let day = match periodicity.months() {
        None => start.checked_add_days(Days::new(u64::from(n) * 7)),
        Some(months) => start.checked_add_months(Months::new(n.checked_mul(months)?)),
    }?;
    Date::new(day).ok()
}

/// The first `count` due dates from `start`. A count of zero gives no dates; the caller decides
/// whether an empty schedule is acceptable.
pub fn dates_by_count(
    start: Date,
    periodicity: Periodicity,
    count: u32,
) -> Result<Vec<Date>, ScheduleError> {
    if count > MAX_INSTALLMENTS {
        return Err(ScheduleError::TooManyInstallments);
    }
    (0..count)
        .map(|n| nth_due_date(start, periodicity, n).ok_or(ScheduleError::DateOutOfRange))
        .collect()
}

/// Every due date from `start` up to and including `end_inclusive`. An end before the start gives
/// no dates; more than [`MAX_INSTALLMENTS`] dates is refused.
pub fn dates_until(
    start: Date,
    periodicity: Periodicity,
    end_inclusive: Date,
) -> Result<Vec<Date>, ScheduleError> {
    let mut dates = Vec::new();
    for n in 0.. {
        // A date after `Date::MAX` is necessarily after `end_inclusive`, which is a `Date`.
        match nth_due_date(start, periodicity, n) {
            Some(date) if date <= end_inclusive => {
                if dates.len() >= MAX_INSTALLMENTS as usize {
                    return Err(ScheduleError::TooManyInstallments);
                }
                dates.push(date);
            }
            _ => break,
        }
    }
    Ok(dates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> Date {
        text.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn dates(texts: &[&str]) -> Vec<Date> {
        texts.iter().map(|t| date(t)).collect()
    }

    #[test]
    fn periodicity_names_round_trip_and_only_exact_names_parse() {
        let cases: &[(&str, Option<Periodicity>)] = &[
            ("WEEKLY", Some(Periodicity::Weekly)),
            ("MONTHLY", Some(Periodicity::Monthly)),
            ("BIMONTHLY", Some(Periodicity::Bimonthly)),
            ("QUARTERLY", Some(Periodicity::Quarterly)),
            ("SEMIANNUAL", Some(Periodicity::Semiannual)),
            ("ANNUAL", Some(Periodicity::Annual)),
            ("monthly", None),
            ("Monthly", None),
            (" MONTHLY", None),
            ("DAILY", None),
            ("YEARLY", None),
            ("", None),
        ];
        for (name, expected) in cases {
            assert_eq!(Periodicity::parse(name), *expected, "name {name:?}");
        }
        for p in Periodicity::ALL {
            assert_eq!(Periodicity::parse(p.as_str()), Some(*p));
            assert_eq!(p.to_string(), p.as_str());
        }
    }

    #[test]
    fn nth_due_date_follows_the_start_date() {
        use Periodicity::*;
        let cases: &[(&str, Periodicity, u32, &str)] = &[
            // n = 0 is the start itself, whatever the periodicity.
            ("2026-12-05", Monthly, 0, "2026-12-05"),
            ("2026-12-05", Weekly, 0, "2026-12-05"),
            ("2026-12-05", Annual, 0, "2026-12-05"),
            // Weekly adds seven days per installment, across months and years.
            ("2026-12-05", Weekly, 1, "2026-12-12"),
            ("2026-12-29", Weekly, 1, "2027-01-05"),
            ("2028-02-26", Weekly, 1, "2028-03-04"),
            ("2026-01-01", Weekly, 52, "2026-12-31"),
            // Monthly keeps the start day, clamped to the month's end, never drifting.
            ("2026-12-05", Monthly, 1, "2027-01-05"),
            ("2026-12-05", Monthly, 11, "2027-11-05"),
            ("2027-01-31", Monthly, 1, "2027-02-28"),
            ("2027-01-31", Monthly, 2, "2027-03-31"),
            ("2027-01-31", Monthly, 3, "2027-04-30"),
            ("2027-01-31", Monthly, 4, "2027-05-31"),
            ("2028-01-31", Monthly, 1, "2028-02-29"),
            ("2028-01-31", Monthly, 2, "2028-03-31"),
            ("2028-01-30", Monthly, 1, "2028-02-29"),
            ("2027-01-29", Monthly, 1, "2027-02-28"),
            ("2027-01-29", Monthly, 2, "2027-03-29"),
            ("2026-08-31", Monthly, 1, "2026-09-30"),
            ("2026-08-31", Monthly, 2, "2026-10-31"),
            ("2100-01-31", Monthly, 1, "2100-02-28"),
            ("2000-01-31", Monthly, 1, "2000-02-29"),
            // Longer periods count whole months from the start.
            ("2026-12-31", Bimonthly, 1, "2027-02-28"),
            ("2026-12-31", Bimonthly, 2, "2027-04-30"),
            ("2026-12-31", Bimonthly, 3, "2027-06-30"),
            ("2026-12-31", Bimonthly, 4, "2027-08-31"),
            ("2026-11-30", Quarterly, 1, "2027-02-28"),
            ("2026-11-30", Quarterly, 2, "2027-05-30"),
            ("2027-11-30", Quarterly, 1, "2028-02-29"),
            ("2026-08-31", Semiannual, 1, "2027-02-28"),
            ("2026-08-31", Semiannual, 2, "2027-08-31"),
            // Annual from 29 February falls on 28 February in common years, 29 in leap years.
            ("2028-02-29", Annual, 1, "2029-02-28"),
            ("2028-02-29", Annual, 2, "2030-02-28"),
            ("2028-02-29", Annual, 4, "2032-02-29"),
            ("2026-12-05", Annual, 1, "2027-12-05"),
        ];
        for (start, periodicity, n, expected) in cases {
            assert_eq!(
                nth_due_date(date(start), *periodicity, *n),
                Some(date(expected)),
                "{start} {periodicity} n={n}"
            );
        }
    }

    #[test]
    fn nth_due_date_is_none_after_9999() {
        let last = Date::MAX;
        assert_eq!(
            nth_due_date(date("9999-12-01"), Periodicity::Annual, 1),
            None
        );
        assert_eq!(
            nth_due_date(date("9999-12-25"), Periodicity::Weekly, 1),
            None
        );
        assert_eq!(
            nth_due_date(date("9999-12-24"), Periodicity::Weekly, 1),
            Some(last)
        );
        assert_eq!(nth_due_date(last, Periodicity::Weekly, 1), None);
        assert_eq!(nth_due_date(last, Periodicity::Monthly, 1), None);
        assert_eq!(
            nth_due_date(date("2026-01-01"), Periodicity::Annual, u32::MAX),
            None
        );
    }

    #[test]
    fn dates_by_count_lists_exactly_count_dates() {
        use Periodicity::*;
        let cases: &[(&str, Periodicity, u32, &[&str])] = &[
            ("2026-12-05", Monthly, 0, &[]),
            ("2026-12-05", Monthly, 1, &["2026-12-05"]),
            (
                "2026-12-05",
                Monthly,
                3,
                &["2026-12-05", "2027-01-05", "2027-02-05"],
            ),
            (
                "2028-01-31",
                Monthly,
                5,
                &[
                    "2028-01-31",
                    "2028-02-29",
                    "2028-03-31",
                    "2028-04-30",
                    "2028-05-31",
                ],
            ),
            (
                "2026-12-29",
                Weekly,
                3,
                &["2026-12-29", "2027-01-05", "2027-01-12"],
            ),
            (
                "2028-02-29",
                Annual,
                3,
                &["2028-02-29", "2029-02-28", "2030-02-28"],
            ),
            (
                "2026-05-31",
                Quarterly,
                3,
                &["2026-05-31", "2026-08-31", "2026-11-30"],
            ),
        ];
        for (start, periodicity, count, expected) in cases {
            assert_eq!(
                dates_by_count(date(start), *periodicity, *count),
                Ok(dates(expected)),
                "{start} {periodicity} count={count}"
            );
        }
    }

    #[test]
    fn dates_by_count_is_capped() {
        let start = date("2026-01-01");
        let all = dates_by_count(start, Periodicity::Monthly, MAX_INSTALLMENTS).unwrap();
        assert_eq!(all.len(), 1200);
        assert_eq!(all.last(), Some(&date("2125-12-01")));
        for count in [MAX_INSTALLMENTS + 1, 10_000, u32::MAX] {
            assert_eq!(
                dates_by_count(start, Periodicity::Weekly, count),
                Err(ScheduleError::TooManyInstallments),
                "count {count}"
            );
        }
        assert_eq!(
            dates_by_count(Date::MAX, Periodicity::Monthly, 2),
            Err(ScheduleError::DateOutOfRange)
        );
        assert_eq!(
            dates_by_count(date("9999-06-01"), Periodicity::Monthly, 12),
            Err(ScheduleError::DateOutOfRange)
        );
        assert_eq!(
            dates_by_count(date("9999-01-01"), Periodicity::Monthly, 12).map(|d| d.len()),
            Ok(12)
        );
    }

    #[test]
    fn dates_until_includes_the_end_date() {
        use Periodicity::*;
        let cases: &[(&str, Periodicity, &str, &[&str])] = &[
            // The end date itself is a due date and is included.
            (
                "2026-12-05",
                Monthly,
                "2027-02-05",
                &["2026-12-05", "2027-01-05", "2027-02-05"],
            ),
            // One day before it, it is not.
            (
                "2026-12-05",
                Monthly,
                "2027-02-04",
                &["2026-12-05", "2027-01-05"],
            ),
            ("2026-12-05", Monthly, "2026-12-05", &["2026-12-05"]),
            ("2026-12-05", Monthly, "2026-12-04", &[]),
            ("2026-12-05", Monthly, "2020-01-01", &[]),
            (
                "2026-12-01",
                Weekly,
                "2026-12-22",
                &["2026-12-01", "2026-12-08", "2026-12-15", "2026-12-22"],
            ),
            (
                "2026-12-01",
                Weekly,
                "2026-12-21",
                &["2026-12-01", "2026-12-08", "2026-12-15"],
            ),
            // Clamped dates count as due on the clamped day.
            (
                "2028-01-31",
                Monthly,
                "2028-02-29",
                &["2028-01-31", "2028-02-29"],
            ),
            (
                "2028-01-31",
                Monthly,
                "2028-03-30",
                &["2028-01-31", "2028-02-29"],
            ),
            (
                "2028-01-31",
                Monthly,
                "2028-03-31",
                &["2028-01-31", "2028-02-29", "2028-03-31"],
            ),
            (
                "2028-02-29",
                Annual,
                "2032-02-28",
                &["2028-02-29", "2029-02-28", "2030-02-28", "2031-02-28"],
            ),
            (
                "2028-02-29",
                Annual,
                "2032-02-29",
                &[
                    "2028-02-29",
                    "2029-02-28",
                    "2030-02-28",
                    "2031-02-28",
                    "2032-02-29",
                ],
            ),
            (
                "2026-01-15",
                Semiannual,
                "2027-07-15",
                &["2026-01-15", "2026-07-15", "2027-01-15", "2027-07-15"],
            ),
        ];
        for (start, periodicity, end, expected) in cases {
            assert_eq!(
                dates_until(date(start), *periodicity, date(end)),
                Ok(dates(expected)),
                "{start} {periodicity} until {end}"
            );
        }
    }

    #[test]
    fn dates_until_is_capped_at_1200_installments() {
        let start = date("2026-01-01");
        // Exactly 1200 monthly dates: the last one is 1199 months after the start.
        let end = date("2125-12-01");
        assert_eq!(
            dates_until(start, Periodicity::Monthly, end).map(|d| d.len()),
            Ok(1200)
        );
        assert_eq!(
            dates_until(start, Periodicity::Monthly, date("2126-01-01")),
            Err(ScheduleError::TooManyInstallments)
        );
        assert_eq!(
            dates_until(start, Periodicity::Weekly, date("2100-01-01")),
            Err(ScheduleError::TooManyInstallments)
        );
        assert_eq!(
            dates_until(start, Periodicity::Weekly, Date::MAX),
            Err(ScheduleError::TooManyInstallments)
        );
    }

    #[test]
    fn dates_until_stops_at_the_end_of_the_calendar() {
        let start = date("9999-12-21");
        let result = dates_until(start, Periodicity::Weekly, Date::MAX).unwrap();
        assert_eq!(result, vec![start, date("9999-12-28")]);
        let annual = dates_until(date("9998-12-01"), Periodicity::Annual, Date::MAX).unwrap();
        assert_eq!(annual, vec![date("9998-12-01"), date("9999-12-01")]);
    }
}
