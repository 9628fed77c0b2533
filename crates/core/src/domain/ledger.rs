//! The reconciliation ledger's rules: the kinds of entry, the simulated acquirer's fee
//! schedule, the acquirer's payout report (CSV) and how its lines meet the entries.
//!
//! A ledger entry records money that moved (or, for an annulment, a receivable written off):
//!
//! | kind | amount | acquirer reference | in settlements | reconciled |
//! |---|---|---|---|---|
//! | `CHARGE` | the amount charged (CLP for UF installments) | authorization code | yes | yes |
//! | `REVERSAL` | minus the amount charged | the charge's authorization code | yes | yes |
//! | `MANUAL_PAYMENT` | the installment's amount | the merchant's authorization code, if any | yes | no |
//! | `ANNULMENT` | the installment's amount written off (no cash) | none | no | no |

use std::collections::HashSet;
use std::str::FromStr;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use rust_decimal::prelude::RoundingStrategy;

use super::date::Date;
use super::money::Money;
use super::state::PaymentMethod;
use crate::error::FieldErrors;

/// What an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A charge the processor approved (charging run, settled bank debit, Magic Link portal).
    Charge,
    /// A paid installment taken back by the acquirer.
    Reversal,
    /// A payment the merchant recorded by hand.
    ManualPayment,
    /// An installment annulled: no cash moved; the receivable is written off.
    Annulment,
}

impl EntryKind {
    pub const ALL: [EntryKind; 4] = [
        EntryKind::Charge,
        EntryKind::Reversal,
        EntryKind::ManualPayment,
        EntryKind::Annulment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Charge => "CHARGE",
            EntryKind::Reversal => "REVERSAL",
            EntryKind::ManualPayment => "MANUAL_PAYMENT",
            EntryKind::Annulment => "ANNULMENT",
        }
    }

    pub fn parse(text: &str) -> Option<EntryKind> {
        EntryKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Movements the acquirer pays out or deducts, so its payout report must show them.
    pub fn goes_through_acquirer(self) -> bool {
        matches!(self, EntryKind::Charge | EntryKind::Reversal)
    }
}

/// How the money of an entry moved: an enrolled instrument's method, or outside the platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryMethod {
    Instrument(PaymentMethod),
    Manual,
}

impl EntryMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryMethod::Instrument(m) => m.name(),
            EntryMethod::Manual => "MANUAL",
        }
    }
}

/// The simulated acquirer's commission rate per payment method (before IVA).
pub fn commission_rate(method: PaymentMethod) -> Decimal {
    match method {
        PaymentMethod::CreditCard => Decimal::from_parts(295, 0, 0, false, 4),
        PaymentMethod::DebitCard | PaymentMethod::PrepaidCard => {
            Decimal::from_parts(179, 0, 0, false, 4)
        }
        PaymentMethod::Pac | PaymentMethod::Epac | PaymentMethod::DirectEpac => {
            Decimal::from_parts(60, 0, 0, false, 4)
        }
    }
}

/// IVA, Chile's value added tax, charged on the acquirer's commission.
pub const IVA: Decimal = Decimal::from_parts(19, 0, 0, false, 2);

/// The simulated acquirer's fee for an approved charge: the method's commission on the amount,
/// plus IVA on that commission, each rounded half away from zero to the currency's decimals
/// (whole pesos for CLP). Never more than the amount itself.
pub fn acquirer_fee(amount: &Money, method: PaymentMethod) -> Decimal {
    let round = |d: Decimal| {
        d.round_dp_with_strategy(
            amount.currency().decimals(),
            RoundingStrategy::MidpointAwayFromZero,
        )
    };
    let commission = round(amount.amount() * commission_rate(method));
    let tax = round(commission * IVA);
    (commission + tax).min(amount.amount()).normalize()
}

/// Days after an entry's business date within which its payout line may be dated.
pub const SETTLEMENT_WINDOW_DAYS: u64 = 3;

/// The most lines one payout report may hold.
pub const MAX_PAYOUT_LINES: usize = 10_000;

/// One line of the acquirer's payout report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayoutLine {
    /// The line's number in the file (the header is line 1), as a spreadsheet shows it.
    pub line: usize,
    pub date: NaiveDate,
    pub reference: String,
    pub amount: Decimal,
}

const COLUMNS: [&str; 3] = ["date", "reference", "amount"];

/// Reads a payout report: a header row `date,reference,amount` (any order, any case), then one
/// line per payout. The separator is `,` or `;` (the header's tells which). With `;` an amount
/// may use a decimal comma (`1234,5`); dots grouping thousands (`28.937`, Chile's way of
/// writing 28937 pesos) are read as such in either form. Every bad cell is reported, at
/// `csv.line[N].<column>`.
pub fn parse_payout_report(text: &str) -> Result<Vec<PayoutLine>, FieldErrors> {
    let mut errors = FieldErrors::new();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let header_line = text.lines().next().unwrap_or_default();
    let separator = if header_line.contains(';') {
        b';'
    } else {
        b','
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(separator)
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header = match records.next() {
        Some(Ok(h)) => h,
        _ => {
            errors.push(
                "csv",
                "MISSING_HEADER",
                "the first line must name the columns date, reference and amount",
            );
            return Err(errors);
        }
    };
    let names: Vec<String> = header.iter().map(|h| h.trim().to_lowercase()).collect();
    let mut position = [0usize; 3];
    for (i, column) in COLUMNS.iter().enumerate() {
        match names.iter().position(|n| n == column) {
            Some(p) => position[i] = p,
            None => errors.push(
                format!("csv.line[1].{column}"),
                "MISSING_COLUMN",
                format!("the header has no {column} column"),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut lines = Vec::new();
    for (index, record) in records.enumerate() {
        let line = index + 2;
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("csv.line[{line}]"), "INVALID_CSV", e.to_string());
                continue;
            }
        };
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        if lines.len() == MAX_PAYOUT_LINES {
            errors.push(
                format!("csv.line[{line}]"),
                "TOO_MANY_LINES",
                format!("a payout report holds at most {MAX_PAYOUT_LINES} lines"),
            );
            break;
        }
        let cell = |i: usize| record.get(position[i]).unwrap_or_default().trim();
        let at = |column: &str| format!("csv.line[{line}].{column}");
        let date = match Date::parse_imported(cell(0)) {
            Ok(d) => Some(d.naive()),
            Err(_) => {
                errors.push(
                    at("date"),
                    "INVALID_DATE",
                    "a date as YYYY-MM-DD or DD-MM-YYYY",
                );
                None
            }
        };
        let reference = cell(1);
        if reference.is_empty() || reference.chars().count() > 64 {
            errors.push(at("reference"), "INVALID_LENGTH", "1 to 64 characters");
        } else if reference.chars().any(char::is_control) {
            errors.push(
                at("reference"),
                "INVALID_CHARACTERS",
                "no control characters",
            );
        }
        let amount = parse_amount(cell(2), separator == b';');
        if amount.is_none() {
            errors.push(
                at("amount"),
                "INVALID_AMOUNT",
                "an exact decimal such as 9649, 28.937 (dots group thousands) or -10000.50",
            );
        }
        if let (Some(date), Some(amount)) = (date, amount) {
            lines.push(PayoutLine {
                line,
                date,
                reference: reference.to_string(),
                amount,
            });
        }
    }
    if errors.is_empty() {
        Ok(lines)
    } else {
        Err(errors)
    }
}

/// A plain decimal (optional minus, digits, optional fraction); with `decimal_comma`, the
/// fraction may follow a comma instead of a point. Thousands grouped with dots, as Chile writes
/// them (`28.937`, `1.234.567`, `28.937,5`), are read as such: a payout is in pesos, which have
/// no decimals, so `28.937` is 28937 and never 28.937.
fn parse_amount(text: &str, decimal_comma: bool) -> Option<Decimal> {
    let text = match thousands_grouped(text) {
        Some(plain) => plain,
        None if decimal_comma && !text.contains('.') => text.replacen(',', ".", 1),
        None => text.to_string(),
    };
    let digits = text.strip_prefix('-').unwrap_or(&text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = !whole.is_empty()
        && whole.len() <= 15
        && fraction.len() <= 4
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && !(digits.contains('.') && fraction.is_empty());
    plain
        .then(|| Decimal::from_str(&text).ok())
        .flatten()
        .map(|d| d.normalize())
}

/// `28.937` → `28937`, `-1.234.567,5` → `-1234567.5`: an amount whose integer part is groups
/// of three digits after dots (the first of one to three), with an optional decimal comma.
/// `None` for any other shape, read as a plain decimal instead.
fn thousands_grouped(text: &str) -> Option<String> {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (whole, fraction) = match digits.split_once(',') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (digits, None),
    };
    let mut groups = whole.split('.');
    let first = groups.next()?;
    let rest: Vec<&str> = groups.collect();
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let grouped = !rest.is_empty()
        && all_digits(first)
        && first.len() <= 3
        && rest.iter().all(|g| g.len() == 3 && all_digits(g))
        && fraction.is_none_or(all_digits);
    grouped.then(|| {
        let whole: String = whole.chars().filter(|c| *c != '.').collect();
        match fraction {
            Some(fraction) => format!("{sign}{whole}.{fraction}"),
            None => format!("{sign}{whole}"),
        }
    })
}

/// An entry the acquirer should pay out (or deduct): what a payout line must show for it.
#[derive(Clone, Debug)]
pub struct PayoutDue {
    pub reference: String,
    /// Net of the acquirer's fee for charges; the negative amount for reversals.
    pub amount: Decimal,
    pub business_date: NaiveDate,
    /// Within the report's period, so a missing line is reported.
    pub expected: bool,
}

impl PayoutDue {
    fn window_holds(&self, date: NaiveDate) -> bool {
        date >= self.business_date
            && self
                .business_date
                .checked_add_days(chrono::Days::new(SETTLEMENT_WINDOW_DAYS))
                .is_none_or(|end| date <= end)
    }
}

/// Why a payout line has no entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// No entry of the commerce carries the reference.
    UnknownReference,
    /// Entries carry the reference, but none with this amount.
    AmountDiffers,
    /// The entry's amount matches, but the line is dated outside its settlement window.
    OutsideSettlementWindow,
    /// The entry was already matched by an earlier line of the report.
    DuplicateLine,
}

impl Mismatch {
    pub fn as_str(self) -> &'static str {
        match self {
            Mismatch::UnknownReference => "UNKNOWN_REFERENCE",
            Mismatch::AmountDiffers => "AMOUNT_DIFFERS",
            Mismatch::OutsideSettlementWindow => "OUTSIDE_SETTLEMENT_WINDOW",
            Mismatch::DuplicateLine => "DUPLICATE_LINE",
        }
    }
}

/// The outcome of matching, by index into the lines and the dues.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Matching {
    /// (line, due) pairs.
    pub matched: Vec<(usize, usize)>,
    /// Expected dues no line paid.
    pub unpaid: Vec<usize>,
    pub unmatched_lines: Vec<(usize, Mismatch)>,
}

/// Matches each line, in file order, with the first due not yet matched that has its reference
/// and amount and whose settlement window holds the line's date.
pub fn match_payouts(dues: &[PayoutDue], lines: &[PayoutLine]) -> Matching {
    let mut taken = HashSet::new();
    let mut matching = Matching::default();
    for (l, line) in lines.iter().enumerate() {
        let same_reference: Vec<usize> = (0..dues.len())
            .filter(|d| dues[*d].reference == line.reference)
            .collect();
        let same_amount: Vec<usize> = same_reference
            .iter()
            .copied()
            .filter(|d| dues[*d].amount == line.amount)
            .collect();
        let free = same_amount.iter().copied().find(|d| !taken.contains(d));
        let fitting = same_amount
            .iter()
            .copied()
            .find(|d| !taken.contains(d) && dues[*d].window_holds(line.date));
        match fitting {
            Some(d) => {
                taken.insert(d);
                matching.matched.push((l, d));
            }
            None => {
                let reason = if same_reference.is_empty() {
                    Mismatch::UnknownReference
                } else if same_amount.is_empty() {
                    Mismatch::AmountDiffers
                } else if free.is_some() {
                    Mismatch::OutsideSettlementWindow
                } else {
                    Mismatch::DuplicateLine
                };
                matching.unmatched_lines.push((l, reason));
            }
        }
    }
    matching.unpaid = (0..dues.len())
        .filter(|d| dues[*d].expected && !taken.contains(d))
        .collect();
    matching
}

/// The period a report covers: from its first to its last line's date.
pub fn report_period(lines: &[PayoutLine]) -> Option<(NaiveDate, NaiveDate)> {
    let first = lines.iter().map(|l| l.date).min()?;
    let last = lines.iter().map(|l| l.date).max()?;
    Some((first, last))
}

/// Writes a payout report in the form `parse_payout_report` reads.
pub fn write_payout_report(lines: &[(NaiveDate, String, Decimal)]) -> String {
    let mut out = String::from("date,reference,amount\n");
    for (date, reference, amount) in lines {
        out.push_str(&format!("{date},{reference},{}\n", amount.normalize()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::domain::money::Currency;

    fn clp(n: i64) -> Money {
        Money::from_decimal(Decimal::from(n), Currency::Clp).unwrap()
    }

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn fees_are_the_commission_plus_iva_each_rounded() {
        let cases = [
            (clp(10_000), PaymentMethod::CreditCard, "351"), // 295 + 56.05
            (clp(10_000), PaymentMethod::DebitCard, "213"),  // 179 + 34.01
            (clp(10_000), PaymentMethod::Pac, "71"),         // 60 + 11.4
            (clp(1), PaymentMethod::CreditCard, "0"),
            (
                Money::from_decimal(Decimal::from(100), Currency::Usd).unwrap(),
                PaymentMethod::CreditCard,
                "3.51",
            ),
        ];
        for (amount, method, fee) in cases {
            assert_eq!(acquirer_fee(&amount, method).to_string(), fee, "{method:?}");
        }
    }

    #[test]
    fn reports_read_with_either_separator_and_decimal_comma_after_semicolons() {
        let comma = parse_payout_report("date,reference,amount\n2026-12-01,AUT-1,9649\n").unwrap();
        let semi =
            parse_payout_report("\u{feff}Amount;Date;Reference\r\n9649,5;2026-12-01;AUT-1\r\n\r\n")
                .unwrap();
        assert_eq!(comma[0].amount, Decimal::from(9649));
        assert_eq!(semi[0].amount, "9649.5".parse::<Decimal>().unwrap());
        assert_eq!((semi[0].line, semi[0].reference.as_str()), (2, "AUT-1"));
    }

    #[test]
    fn chilean_thousands_and_day_first_dates_are_read() {
        let report = "date;reference;amount\n07-12-2026;AUT-1;28.937\n07/12/2026;AUT-2;-1.234.567,5\n2026-12-07;AUT-3;9649,5\n";
        let lines = parse_payout_report(report).unwrap();
        assert_eq!(lines[0].amount, Decimal::from(28937));
        assert_eq!(lines[0].date, d("2026-12-07"));
        assert_eq!(lines[1].amount, "-1234567.5".parse::<Decimal>().unwrap());
        assert_eq!(lines[1].date, d("2026-12-07"));
        assert_eq!(lines[2].amount, "9649.5".parse::<Decimal>().unwrap());
        let comma = parse_payout_report(
            "date,reference,amount\n2026-12-07,AUT-1,28.937\n2026-12-07,AUT-2,9649.5\n",
        )
        .unwrap();
        assert_eq!(comma[0].amount, Decimal::from(28937));
        assert_eq!(comma[1].amount, "9649.5".parse::<Decimal>().unwrap());
    }

    #[test]
    fn every_bad_cell_is_named_by_line_and_column() {
        let errors = parse_payout_report(
            "date,reference,amount\n2026-12-01,AUT-1,1 000\n2026-02-30,,12\n2026-12-01,AUT-2,1e3\n2026-12-01,AUT-3,1.000,5\n",
        )
        .unwrap_err()
        .into_vec();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "csv.line[2].amount",
                "csv.line[3].date",
                "csv.line[3].reference",
                "csv.line[4].amount",
                "csv.line[5]"
            ]
        );
        let missing = parse_payout_report("fecha,reference,amount\n")
            .unwrap_err()
            .into_vec();
        assert_eq!(missing[0].field, "csv.line[1].date");
        assert_eq!(
            parse_payout_report("").unwrap_err().into_vec()[0].field,
            "csv"
        );
    }

    #[test]
    fn lines_match_by_reference_amount_and_window() {
        let due = |reference: &str, amount: i64, date: &str, expected: bool| PayoutDue {
            reference: reference.into(),
            amount: Decimal::from(amount),
            business_date: d(date),
            expected,
        };
        let line = |n: usize, date: &str, reference: &str, amount: i64| PayoutLine {
            line: n,
            date: d(date),
            reference: reference.into(),
            amount: Decimal::from(amount),
        };
        let dues = [
            due("A", 9649, "2026-12-01", true),
            due("A", -10000, "2026-12-01", true),
            due("B", 500, "2026-12-01", true),
            due("C", 700, "2026-11-01", false),
            due("D", 800, "2026-12-01", true),
        ];
        let lines = [
            line(2, "2026-12-01", "A", 9649),
            line(3, "2026-12-04", "A", -10000),
            line(4, "2026-12-01", "B", 501),
            line(5, "2026-12-01", "Z", 1),
            line(6, "2026-12-01", "C", 700),
            line(7, "2026-12-01", "A", 9649),
        ];
        let m = match_payouts(&dues, &lines);
        assert_eq!(m.matched, [(0, 0), (1, 1)]);
        assert_eq!(
            m.unmatched_lines,
            [
                (2, Mismatch::AmountDiffers),
                (3, Mismatch::UnknownReference),
                (4, Mismatch::OutsideSettlementWindow),
                (5, Mismatch::DuplicateLine),
            ]
        );
        assert_eq!(m.unpaid, [2, 4]);
    }
}
