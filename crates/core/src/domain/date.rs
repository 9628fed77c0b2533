//! Calendar dates as the product accepts, stores and compares them (CONTRACT 5 and 12).
//!
//! A [`Date`] holds a day from 1900-01-01 to 9999-12-31 and nothing else. The upper bound is the
//! last day whose text form has four year digits: chrono writes the year 10000 as
//! `+10000-12-01`, which sorts before `2026-11-23` as text, and the store keeps dates as TEXT and
//! compares them in SQL. The lower bound is a business one: no mandate falls due, no payment is
//! made and no filter means anything before 1900, and it also rules out the signed forms chrono
//! gives to years before 1. Within the range the text form is always `YYYY-MM-DD`, ten
//! characters, so comparing two stored dates as text compares them as dates.

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, Days, NaiveDate};
use thiserror::Error;

/// Why a text or a calendar day is not a [`Date`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum DateError {
    /// Not a `YYYY-MM-DD` date of the calendar (wrong shape, 31 February, ...).
    #[error("must be a date YYYY-MM-DD")]
    Invalid,
    /// A real day, but before 1900-01-01 or after 9999-12-31.
    #[error("must be between 1900-01-01 and 9999-12-31")]
    OutOfRange,
}

impl DateError {
    /// The field error code the API answers with.
    pub fn code(self) -> &'static str {
        match self {
            DateError::Invalid => "INVALID_DATE",
            DateError::OutOfRange => DATE_OUT_OF_RANGE,
        }
    }
}

/// The refusal's name and field code for a date outside [`Date::MIN`]..=[`Date::MAX`].
pub const DATE_OUT_OF_RANGE: &str = "DATE_OUT_OF_RANGE";

/// A day between [`Date::MIN`] and [`Date::MAX`]; its `Display` is always `YYYY-MM-DD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(NaiveDate);

const fn ymd(year: i32, month: u32, day: u32) -> NaiveDate {
    match NaiveDate::from_ymd_opt(year, month, day) {
        Some(d) => d,
        None => panic!("not a calendar day"),
    }
}

impl Date {
    /// The first day the product accepts.
    pub const MIN: Date = Date(ymd(1900, 1, 1));
    /// The last day whose text form sorts as a date (see the module's documentation).
    pub const MAX: Date = Date(ymd(9999, 12, 31));

    /// The day, when it is within the range.
    pub fn new(day: NaiveDate) -> Result<Date, DateError> {
        if day < Self::MIN.0 || day > Self::MAX.0 {
            Err(DateError::OutOfRange)
        } else {
            Ok(Date(day))
        }
    }

    /// Reads exactly `YYYY-MM-DD`: ten characters, digits and two dashes. A sign, a five-digit
    /// year or a missing leading zero is [`DateError::Invalid`]; a real day outside the range is
    /// [`DateError::OutOfRange`].
    pub fn parse(text: &str) -> Result<Date, DateError> {
        let bytes = text.as_bytes();
        let shaped = bytes.len() == 10
            && bytes.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            });
        if !shaped {
            return Err(if beyond_four_digits(text) {
                DateError::OutOfRange
            } else {
                DateError::Invalid
            });
        }
        let number = |range: std::ops::Range<usize>| -> u32 {
            bytes[range]
                .iter()
                .fold(0, |n, b| n * 10 + u32::from(b - b'0'))
        };
        // Four digits are at most 9999, so the year always fits an i32.
        let year = number(0..4) as i32;
        let day =
            NaiveDate::from_ymd_opt(year, number(5..7), number(8..10)).ok_or(DateError::Invalid)?;
        Date::new(day)
    }

    /// Reads a date of an imported file: `YYYY-MM-DD`, or the day first as Chilean
    /// spreadsheets write it, `DD-MM-YYYY` or `DD/MM/YYYY` (two-digit day and month).
    pub fn parse_imported(text: &str) -> Result<Date, DateError> {
        let bytes = text.as_bytes();
        let day_first = bytes.len() == 10
            && bytes[2] == bytes[5]
            && matches!(bytes[2], b'-' | b'/')
            && bytes
                .iter()
                .enumerate()
                .all(|(i, b)| i == 2 || i == 5 || b.is_ascii_digit());
        if day_first {
            Date::parse(&format!("{}-{}-{}", &text[6..10], &text[3..5], &text[0..2]))
        } else {
            Date::parse(text)
        }
    }

    /// The chrono day, for arithmetic and for code that only reads.
    pub fn naive(self) -> NaiveDate {
        self.0
    }

    /// `days` later, when that is still within the range.
    pub fn checked_add_days(self, days: u64) -> Option<Date> {
        self.0
            .checked_add_days(Days::new(days))
            .and_then(|d| Date::new(d).ok())
    }
}

/// `+10000-01-01`, `10000-01-01`: a date whose year needs more than four digits, which is
/// after 9999-12-31 (or before year 1 with a `-`, equally out of range) rather than malformed.
fn beyond_four_digits(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let Some((year, rest)) = unsigned.split_once('-') else {
        return false;
    };
    let rest = rest.as_bytes();
    year.len() > 4
        && year.bytes().all(|b| b.is_ascii_digit())
        && rest.len() == 5
        && rest[2] == b'-'
        && [0, 1, 3, 4].iter().all(|i| rest[*i].is_ascii_digit())
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written by hand rather than through chrono's `Display`, so the four-digit form does
        // not depend on another crate's formatting of years.
        write!(
            f,
            "{:04}-{:02}-{:02}",
            self.0.year(),
            self.0.month(),
            self.0.day()
        )
    }
}

impl FromStr for Date {
    type Err = DateError;

    fn from_str(text: &str) -> Result<Date, DateError> {
        Date::parse(text)
    }
}

impl TryFrom<NaiveDate> for Date {
    type Error = DateError;

    fn try_from(day: NaiveDate) -> Result<Date, DateError> {
        Date::new(day)
    }
}

impl From<Date> for NaiveDate {
    fn from(date: Date) -> NaiveDate {
        date.0
    }
}

impl PartialEq<NaiveDate> for Date {
    fn eq(&self, other: &NaiveDate) -> bool {
        self.0 == *other
    }
}

impl PartialOrd<NaiveDate> for Date {
    fn partial_cmp(&self, other: &NaiveDate) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_only_canonical_dates_in_range() {
        let cases: &[(&str, Result<&str, DateError>)] = &[
            ("2026-11-23", Ok("2026-11-23")),
            ("1900-01-01", Ok("1900-01-01")),
            ("9999-12-31", Ok("9999-12-31")),
            ("2028-02-29", Ok("2028-02-29")),
            ("1899-12-31", Err(DateError::OutOfRange)),
            ("0001-01-01", Err(DateError::OutOfRange)),
            ("0000-01-01", Err(DateError::OutOfRange)),
            ("2027-02-29", Err(DateError::Invalid)),
            ("2026-13-01", Err(DateError::Invalid)),
            ("2026-00-10", Err(DateError::Invalid)),
            ("+10000-12-01", Err(DateError::OutOfRange)),
            ("10000-12-01", Err(DateError::OutOfRange)),
            ("-10000-12-01", Err(DateError::OutOfRange)),
            ("10000-1-01", Err(DateError::Invalid)),
            ("1O000-01-01", Err(DateError::Invalid)),
            ("-999-01-01", Err(DateError::Invalid)),
            ("+999-01-01", Err(DateError::Invalid)),
            ("2026-1-01", Err(DateError::Invalid)),
            ("2026-01-1 ", Err(DateError::Invalid)),
            ("2026/01/01", Err(DateError::Invalid)),
            ("２０２６-01-01", Err(DateError::Invalid)),
            ("", Err(DateError::Invalid)),
        ];
        for (text, expected) in cases {
            let got = Date::parse(text).map(|d| d.to_string());
            assert_eq!(
                got.as_deref().map_err(|e| *e),
                expected.as_ref().map(|s| *s).map_err(|e| *e),
                "{text:?}"
            );
        }
    }

    #[test]
    fn text_order_is_date_order_over_the_whole_range() {
        let days = [
            Date::MIN,
            Date::parse("1999-12-31").unwrap(),
            Date::parse("2026-11-23").unwrap(),
            Date::parse("9999-01-01").unwrap(),
            Date::MAX,
        ];
        for a in days {
            assert_eq!(a.to_string().len(), 10);
            for b in days {
                assert_eq!(a.cmp(&b), a.to_string().cmp(&b.to_string()), "{a} {b}");
            }
        }
    }

    #[test]
    fn the_range_is_closed_at_both_ends() {
        let after = Date::MAX.naive().succ_opt().unwrap();
        assert_eq!(Date::new(after), Err(DateError::OutOfRange));
        let before = Date::MIN.naive().pred_opt().unwrap();
        assert_eq!(Date::new(before), Err(DateError::OutOfRange));
        assert_eq!(Date::MAX.checked_add_days(1), None);
        assert_eq!(
            Date::parse("9999-12-30").unwrap().checked_add_days(1),
            Some(Date::MAX)
        );
    }
}
