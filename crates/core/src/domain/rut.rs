//! The Chilean RUT (Rol Único Tributario), the customer's identification document (CONTRACT 5).
//!
//! Merchants send a RUT in whatever form their own systems keep it: with or without the
//! thousands dots, with or without the dash, with an upper- or lower-case `K`. A `Rut` is only
//! ever built by [`Rut::parse`], which checks the modulo-11 check digit and keeps one normalized
//! form (`12345678-5`), so that uniqueness checks and responses never depend on how it was typed.

use std::fmt;

use thiserror::Error;

/// The largest RUT body accepted: eight digits, which covers every RUT ever issued.
pub const MAX_BODY: u32 = 99_999_999;

/// Why a text is not a RUT. The two cases are told apart because a wrong check digit is usually
/// a typing mistake the merchant can show to the customer, while a malformed text is a bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum RutError {
    /// The text does not have the shape of a RUT: a body of 1 to 8 significant digits (optionally
    /// grouped by dots in threes), an optional dash, and a check digit `0`-`9` or `K`.
    #[error("the RUT is malformed: expected digits, an optional dash and a check digit (0-9 or K)")]
    Malformed,
    /// The text has the shape of a RUT but its check digit does not match its body.
    #[error("the RUT check digit does not match its number")]
    WrongCheckDigit,
}

/// A valid Chilean RUT, kept in its normalized form `12345678-5` (no dots, a dash, upper-case `K`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rut {
    body: u32,
    normalized: String,
}

impl Rut {
    /// Parses a RUT written with or without dots and dash, in either case, and verifies its check
    /// digit. Surrounding whitespace is ignored; leading zeros of the body are dropped, so
    /// `012.345.678-5` and `12345678-5` are the same RUT.
    pub fn parse(text: &str) -> Result<Rut, RutError> {
        let text = text.trim();
        let (body_text, check_text) = match text.split_once('-') {
            Some((body, check)) => (body, check),
            None => {
                // Without a dash the check digit is the last character. Splitting at a char
                // boundary keeps a non-ASCII last character from panicking.
                let last = text.chars().next_back().ok_or(RutError::Malformed)?;
                (
                    &text[..text.len() - last.len_utf8()],
                    &text[text.len() - last.len_utf8()..],
                )
            }
        };
        let check = parse_check_digit(check_text)?;
        let body = parse_body(body_text)?;
        if check_digit(body) != check {
            return Err(RutError::WrongCheckDigit);
        }
        Ok(Rut {
            body,
            normalized: format!("{body}-{check}"),
        })
    }

    /// The normalized form `12345678-5`, the one stored and returned in responses.
    pub fn as_str(&self) -> &str {
        &self.normalized
    }

    /// The number without its check digit, for callers that need it as a number.
    pub fn body(&self) -> u32 {
        self.body
    }
}

/// A RUT as people in Chile read it, with dots between thousands: `76.123.456-0`. Text that is
/// not a valid RUT (a commerce code of another shape) comes back as it is.
pub fn dotted(text: &str) -> String {
    let Ok(rut) = Rut::parse(text) else {
        return text.to_string();
    };
    let body = rut.body.to_string();
    let check = rut.normalized.rsplit('-').next().unwrap_or_default();
    let mut grouped = String::new();
    for (i, digit) in body.chars().enumerate() {
        if i > 0 && (body.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(digit);
    }
    format!("{grouped}-{check}")
}

impl fmt::Display for Rut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized)
    }
}

/// Whether a code is written as a RUT (digits, optional thousands dots, a dash and one check
/// digit or `K`). Commerce codes of that shape must be valid RUTs: `76123456-1` is a mistyped
/// RUT, never an issued code.
pub fn looks_like_rut(text: &str) -> bool {
    text.trim().split_once('-').is_some_and(|(body, check)| {
        !body.is_empty()
            && body.chars().all(|c| c.is_ascii_digit() || c == '.')
            && check.len() == 1
            && check
                .chars()
                .all(|c| c.is_ascii_digit() || c == 'k' || c == 'K')
    })
}

/// The modulo-11 check digit of a RUT body: the digits from the right are weighted 2, 3, 4, 5, 6,
/// 7, 2, 3, ..., and the digit is `11 - sum % 11`, written `K` for 10 and `0` for 11.
pub fn check_digit(body: u32) -> char {
    let mut rest = body;
    let mut weight = 2;
    let mut sum = 0;
    while rest > 0 {
        sum += (rest % 10) * weight;
        rest /= 10;
        weight = if weight == 7 { 2 } else { weight + 1 };
    }
    match 11 - sum % 11 {
        11 => '0',
        10 => 'K',
        digit => char::from_digit(digit, 10).unwrap_or('0'),
    }
}

/// Reads the check digit: exactly one character, a decimal digit or `K` in either case.
fn parse_check_digit(text: &str) -> Result<char, RutError> {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(c @ '0'..='9'), None) => Ok(c),
        (Some('k' | 'K'), None) => Ok('K'),
        _ => Err(RutError::Malformed),
    }
}

/// The number of a RUT written with a dash (`12.345.678-9`), whatever its check digit: what a
/// message about a wrong check digit names, with the digit it should have.
pub fn body_before_dash(text: &str) -> Option<u32> {
    parse_body(text.trim().split_once('-')?.0).ok()
}

/// Reads the body: digits only, or digits grouped in threes by dots (`12.345.678`). Dots in other
/// places are refused, because a misplaced dot usually means a digit was lost or added.
fn parse_body(text: &str) -> Result<u32, RutError> {
    let all_digits = |group: &str| !group.is_empty() && group.bytes().all(|b| b.is_ascii_digit());
    if text.contains('.') {
        let mut groups = text.split('.');
        let first = groups.next().unwrap_or_default();
        if !all_digits(first) || first.len() > 3 {
            return Err(RutError::Malformed);
        }
        if !groups.all(|group| all_digits(group) && group.len() == 3) {
            return Err(RutError::Malformed);
        }
    } else if !all_digits(text) {
        return Err(RutError::Malformed);
    }
    let digits: String = text.chars().filter(|c| *c != '.').collect();
    let significant = digits.trim_start_matches('0');
    if significant.is_empty() || significant.len() > 8 {
        return Err(RutError::Malformed);
    }
    let body: u32 = significant.parse().map_err(|_| RutError::Malformed)?;
    if body > MAX_BODY {
        return Err(RutError::Malformed);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rut_is_shown_with_dots_and_other_text_as_it_is() {
        assert_eq!(dotted("76123456-0"), "76.123.456-0");
        assert_eq!(dotted("1234567-4"), "1.234.567-4");
        assert_eq!(dotted("12.345.678-5"), "12.345.678-5");
        assert_eq!(dotted("GIMNASIO"), "GIMNASIO");
    }

    #[test]
    fn rut_shaped_codes_are_told_from_issued_codes() {
        for shaped in ["76.123.456-0", "76123456-1", "1-K", " 12345678-k "] {
            assert!(looks_like_rut(shaped), "{shaped}");
        }
        for issued in ["SHOP-01", "76123456", "76123456-10", "-5", "A1-2", "gym.cl"] {
            assert!(!looks_like_rut(issued), "{issued}");
        }
    }

    #[test]
    fn check_digits_match_known_ruts() {
        let cases: &[(u32, char)] = &[
            (1, '9'),
            (6, 'K'),
            (14, '0'),
            (19, '1'),
            (7_654_321, '6'),
            (1_000_005, 'K'),
            (5_126_663, '3'),
            (10_000_004, '0'),
            (10_000_013, 'K'),
            (11_111_111, '1'),
            (12_345_678, '5'),
            (22_222_222, '2'),
            (24_965_885, '5'),
            (30_686_957, '4'),
            (76_354_771, 'K'),
            (99_999_999, '9'),
        ];
        for (body, expected) in cases {
            assert_eq!(check_digit(*body), *expected, "body {body}");
        }
    }

    #[test]
    fn accepts_every_written_form_and_normalizes() {
        let cases: &[(&str, &str)] = &[
            ("12.345.678-5", "12345678-5"),
            ("12345678-5", "12345678-5"),
            ("123456785", "12345678-5"),
            ("12.345.6785", "12345678-5"),
            ("  12.345.678-5 ", "12345678-5"),
            ("012.345.678-5", "12345678-5"),
            ("0012345678-5", "12345678-5"),
            ("10.000.013-K", "10000013-K"),
            ("10.000.013-k", "10000013-K"),
            ("10000013k", "10000013-K"),
            ("76354771K", "76354771-K"),
            ("1.000.005-k", "1000005-K"),
            ("6-K", "6-K"),
            ("6k", "6-K"),
            ("1-9", "1-9"),
            ("19", "1-9"),
            ("14-0", "14-0"),
            ("7.654.321-6", "7654321-6"),
            ("99.999.999-9", "99999999-9"),
            ("999.999-K", "999999-K"),
        ];
        for (input, normalized) in cases {
            let rut = Rut::parse(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
            assert_eq!(rut.as_str(), *normalized, "input {input:?}");
            assert_eq!(rut.to_string(), *normalized, "input {input:?}");
        }
    }

    #[test]
    fn checks_the_999999_k_case_independently() {
        // 999999: weights 2..7 over six nines give 9 * 27 = 243, 243 % 11 = 1, 11 - 1 = 10 -> K.
        assert_eq!(check_digit(999_999), 'K');
    }

    #[test]
    fn refuses_malformed_text() {
        let cases: &[&str] = &[
            "",
            "   ",
            "-",
            "5",
            "-5",
            "12345678-",
            "12345678--5",
            "12-345-678-5",
            "12345678-55",
            "12345678-X",
            "12345678-k5",
            "1234567a-5",
            "12 345 678-5",
            "12.345.678 -5",
            "12.345.678.-5",
            ".12.345.678-5",
            "12..345.678-5",
            "1234.5678-5",
            "12.3456.78-5",
            "12.34.678-5",
            "1234.567-8",
            "0-0",
            "000-0",
            "0.000.000-0",
            "123456789-2",
            "100.000.000-4",
            "99999999999999999999-9",
            "+12345678-5",
            "12345678-٥",
            "1234567é",
            "１２３４５６７８-5",
        ];
        for input in cases {
            assert_eq!(
                Rut::parse(input),
                Err(RutError::Malformed),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn refuses_wrong_check_digits() {
        let cases: &[&str] = &[
            "12.345.678-4",
            "12345678-K",
            "123456784",
            "10.000.013-0",
            "6-0",
            "1-1",
            "14-K",
            "99.999.999-K",
            "0012345678-6",
        ];
        for input in cases {
            assert_eq!(
                Rut::parse(input),
                Err(RutError::WrongCheckDigit),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn equal_ruts_compare_equal_whatever_their_written_form() {
        let a = Rut::parse("12.345.678-5").unwrap();
        let b = Rut::parse("0123456785").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.body(), 12_345_678);
        let mut set = std::collections::HashSet::new();
        set.insert(a);
        assert!(set.contains(&b));
    }
}
