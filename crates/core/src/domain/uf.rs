//! UF values (Unidad de Fomento, in pesos per UF) as merchants import them: a CSV of
//! `date,value` lines, or `date;value` lines whose values take a decimal comma
//! (`2026-12-01;39.123,45`), the form Chilean spreadsheets export. A first line that is not a
//! date is a header and is skipped. Every line must be valid, or nothing is imported.

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
    #[error("line {line}: {date:?} is not a date YYYY-MM-DD")]
    Date { line: u64, date: String },
    #[error("line {line}: {value:?} is not a positive amount")]
    Amount { line: u64, value: String },
    #[error("line {line}: {message}")]
    Unreadable { line: u64, message: String },
    #[error("the file holds no UF values")]
    Empty,
}

/// Parses a whole file. The separator is the first line's: `;` (values with a decimal comma)
/// when it has one, `,` otherwise.
pub fn parse_csv(text: &str) -> Result<Vec<UfValue>, UfCsvError> {
    let first_line = text.lines().find(|line| !line.trim().is_empty());
    let decimal_comma = first_line.is_some_and(|line| line.contains(';'));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .delimiter(if decimal_comma { b';' } else { b',' })
        .from_reader(text.as_bytes());
    let mut values = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| UfCsvError::Unreadable {
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        let line = record.position().map_or(0, |p| p.line());
        if record.iter().all(str::is_empty) {
            continue;
        }
        let [date, value] = [record.get(0), record.get(1)];
        let (Some(date), Some(value), 2) = (date, value, record.len()) else {
            return Err(UfCsvError::Shape { line });
        };
        // A `Date`: stored dates are compared as text, so only `YYYY-MM-DD` up to 9999.
        let Ok(date) = Date::parse(date) else {
            if line == 1 {
                continue; // a header
            }
            return Err(UfCsvError::Date {
                line,
                date: date.to_string(),
            });
        };
        let value = parse_amount(value, decimal_comma).ok_or_else(|| UfCsvError::Amount {
            line,
            value: value.to_string(),
        })?;
        values.push(UfValue { date, value });
    }
    if values.is_empty() {
        return Err(UfCsvError::Empty);
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
