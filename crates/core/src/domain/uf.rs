//! UF values (Unidad de Fomento, in pesos per UF) as merchants import them: a CSV of
//! `date,value` lines, or `date;value` lines whose values take a decimal comma
//! (`2026-12-01;39.123,45`), the form Chilean spreadsheets export. Dates are `YYYY-MM-DD` or
//! day first (`21-12-2026`, `21/12/2026`). A first line that is not a date is a header and is
//! skipped. Every line must be valid, or nothing is imported; every bad line is reported.

use rust_decimal::Decimal;

use super::date::Date;

/// One day's UF value, positive and without trailing zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UfValue {
    pub date: Date,
    pub value: Decimal,
}

/// Why a file of UF values was refused: the first bad line, numbered from 1.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UfCsvError {
    #[error("line {line}: expected date,value")]
    Shape { line: u64 },
    #[error("line {line}: {date:?} is not a date DD-MM-YYYY or YYYY-MM-DD")]
    Date { line: u64, date: String },
    #[error("line {line}: {value:?} is not a positive amount")]
    Amount { line: u64, value: String },
    #[error("line {line}: {message}")]
    Unreadable { line: u64, message: String },
    #[error("the file holds no UF values")]
    Empty,
}

impl UfCsvError {
    /// The line it is about, numbered from 1; none for a file without values.
    pub fn line(&self) -> Option<u64> {
        match self {
            UfCsvError::Shape { line }
            | UfCsvError::Date { line, .. }
            | UfCsvError::Amount { line, .. }
            | UfCsvError::Unreadable { line, .. } => Some(*line),
            UfCsvError::Empty => None,
        }
    }

    /// The column at fault: `date` or `value`; none when the line as a whole is.
    pub fn column(&self) -> Option<&'static str> {
        match self {
            UfCsvError::Date { .. } => Some("date"),
            UfCsvError::Amount { .. } => Some("value"),
            _ => None,
        }
    }
}

/// Parses a whole file and answers its first problem; see [`parse_csv_all`].
pub fn parse_csv(text: &str) -> Result<Vec<UfValue>, UfCsvError> {
    parse_csv_all(text).map_err(|mut errors| errors.remove(0))
}

/// Parses a whole file, or answers every problem (never an empty list). The separator is the
/// first line's: `;` (values with a decimal comma) when it has one, `,` otherwise.
pub fn parse_csv_all(text: &str) -> Result<Vec<UfValue>, Vec<UfCsvError>> {
    let first_line = text.lines().find(|line| !line.trim().is_empty());
    let decimal_comma = first_line.is_some_and(|line| line.contains(';'));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .delimiter(if decimal_comma { b';' } else { b',' })
        .from_reader(text.as_bytes());
    let mut values = Vec::new();
    let mut errors = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                // The reader cannot go on past a line it cannot read.
                errors.push(UfCsvError::Unreadable {
                    line: e.position().map_or(0, |p| p.line()),
                    message: e.to_string(),
                });
                break;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        if record.iter().all(str::is_empty) {
            continue;
        }
        let [date, value] = [record.get(0), record.get(1)];
        let (Some(date), Some(value), 2) = (date, value, record.len()) else {
            errors.push(UfCsvError::Shape { line });
            continue;
        };
        // A `Date`: stored dates are compared as text, so only up to 9999.
        let parsed_date = Date::parse_imported(date);
        if parsed_date.is_err() && line == 1 {
            continue; // a header
        }
        let parsed_value = parse_amount(value, decimal_comma);
        match (parsed_date, parsed_value) {
            (Ok(date), Some(value)) => values.push(UfValue { date, value }),
            (date_result, amount) => {
                if date_result.is_err() {
                    errors.push(UfCsvError::Date {
                        line,
                        date: date.to_string(),
                    });
                }
                if amount.is_none() {
                    errors.push(UfCsvError::Amount {
                        line,
                        value: value.to_string(),
                    });
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if values.is_empty() {
        return Err(vec![UfCsvError::Empty]);
    }
    Ok(values)
}

/// A positive amount; with a decimal comma, dots group thousands (`39.123,45`).
fn parse_amount(text: &str, decimal_comma: bool) -> Option<Decimal> {
    let normalized = if decimal_comma {
        text.replace('.', "").replace(',', ".")
    } else {
        text.to_string()
    };
    normalized
        .parse::<Decimal>()
        .ok()
        .filter(|value| *value > Decimal::ZERO)
        .map(|value| value.normalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Date {
        Date::parse(text).unwrap()
    }

    #[test]
    fn commas_and_semicolons_with_a_header() {
        let values =
            parse_csv("date,value\n2026-12-01,39123.45\n\n2026-12-02,\"39124.50\"\n").unwrap();
        assert_eq!(
            values,
            vec![
                UfValue {
                    date: day("2026-12-01"),
                    value: "39123.45".parse().unwrap()
                },
                UfValue {
                    date: day("2026-12-02"),
                    value: "39124.5".parse().unwrap()
                },
            ]
        );
        let values = parse_csv("fecha;valor\r\n2026-12-01;39.123,45\r\n").unwrap();
        assert_eq!(values[0].value, "39123.45".parse::<Decimal>().unwrap());
    }

    #[test]
    fn the_chilean_form_day_first_with_dots_and_a_decimal_comma() {
        let values = parse_csv("21-12-2026;39.740,55\n22/12/2026;39.741\n").unwrap();
        assert_eq!(values[0].date, day("2026-12-21"));
        assert_eq!(values[0].value, "39740.55".parse::<Decimal>().unwrap());
        assert_eq!(values[1].date, day("2026-12-22"));
        assert_eq!(values[1].value, Decimal::from(39741));
    }

    #[test]
    fn every_bad_line_is_named_with_its_column() {
        let errors =
            parse_csv_all("fecha;valor\n32-12-2026;39.740,55\n2026-12-02;cero\n2026-12-03\n")
                .unwrap_err();
        let named: Vec<_> = errors.iter().map(|e| (e.line(), e.column())).collect();
        assert_eq!(
            named,
            [
                (Some(2), Some("date")),
                (Some(3), Some("value")),
                (Some(4), None)
            ]
        );
    }

    #[test]
    fn every_line_must_be_valid() {
        assert_eq!(
            parse_csv("2026-12-01,1\n2026-13-01,2\n"),
            Err(UfCsvError::Date {
                line: 2,
                date: "2026-13-01".into()
            })
        );
        assert_eq!(
            parse_csv("2026-12-01,0\n"),
            Err(UfCsvError::Amount {
                line: 1,
                value: "0".into()
            })
        );
        assert_eq!(
            parse_csv("2026-12-01\n"),
            Err(UfCsvError::Shape { line: 1 })
        );
        assert_eq!(
            parse_csv("2026-12-01,1,2\n"),
            Err(UfCsvError::Shape { line: 1 })
        );
        assert_eq!(parse_csv("date,value\n"), Err(UfCsvError::Empty));
        assert_eq!(parse_csv(""), Err(UfCsvError::Empty));
    }
}
