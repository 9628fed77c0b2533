//! Amounts of money as exact decimals in a currency's major unit (CONTRACT 5, "Money").
//!
//! Amounts arrive as JSON numbers. Because `serde_json` is built with `arbitrary_precision`, a
//! `serde_json::Number` keeps the text the merchant sent, and [`Money::parse`] reads that text
//! digit by digit, so `10.1` is exactly ten point one and never a binary fraction. Nothing in this
//! module uses floating point.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use thiserror::Error;

/// The currencies an amount may be expressed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Currency {
    /// Chilean peso, without decimals.
    Clp,
    /// Unidad de Fomento, the inflation-indexed unit, with four decimals; charged in CLP at the
    /// UF value of the charge date.
    Clf,
    /// United States dollar, with cents.
    Usd,
}

impl Currency {
    /// Every currency, in the order the API reference lists them.
    pub const ALL: &'static [Currency] = &[Currency::Clp, Currency::Clf, Currency::Usd];

    /// Reads an ISO 4217 code. Only the exact upper-case codes are accepted, because the wire
    /// format is a fixed enumeration and guessing would hide a client bug.
    pub fn parse(code: &str) -> Option<Currency> {
        match code {
            "CLP" => Some(Currency::Clp),
            "CLF" => Some(Currency::Clf),
            "USD" => Some(Currency::Usd),
            _ => None,
        }
    }

    /// The ISO 4217 code, as sent in `currencyId`.
    pub fn code(self) -> &'static str {
        match self {
            Currency::Clp => "CLP",
            Currency::Clf => "CLF",
            Currency::Usd => "USD",
        }
    }

    /// How many decimals an amount in this currency may have.
    pub fn decimals(self) -> u32 {
        match self {
            Currency::Clp => 0,
            Currency::Clf => 4,
            Currency::Usd => 2,
        }
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Why a number is not an acceptable amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum MoneyError {
    /// The amount has more significant decimals than its currency allows (trailing zeros do not
    /// count: `29990.0` is a whole number of pesos).
    #[error("the amount has more decimals than the currency allows ({allowed})")]
    TooManyDecimals {
        /// The number of decimals the currency allows.
        allowed: u32,
    },
    /// The amount is zero or negative; every charge and payment moves a positive amount.
    #[error("the amount must be greater than zero")]
    NotPositive,
    /// The amount is not a plain decimal number, or is larger than any real amount
    /// ([`Money::MAX_EXCLUSIVE`] or more).
    #[error("the amount is not a valid number or is too large")]
    Invalid,
}

/// A positive amount in a currency, with no more decimals than the currency has. Two amounts are
/// equal when their values are equal, whatever trailing zeros they were written with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Money {
    amount: Decimal,
    currency: Currency,
}

impl Money {
    /// Amounts must stay below 10^14 major units. That is far beyond any real charge, keeps sums of
    /// many installments and CLF-to-CLP conversions far from the decimal type's limits, and keeps
    /// an amount in minor units (up to 4 decimals) within an `i64`.
    pub const MAX_EXCLUSIVE: Decimal = Decimal::from_parts(0x107A_4000, 0x5AF3, 0, false, 0);

    /// Reads a JSON number from its exact text. Exponent forms (`1e3`, `2.5E-1`) are accepted and
    /// expanded exactly; the result must be positive, below [`Money::MAX_EXCLUSIVE`], and have no
    /// more significant decimals than `currency` allows.
    pub fn parse(number: &serde_json::Number, currency: Currency) -> Result<Money, MoneyError> {
        let amount = parse_exact(&number.to_string(), currency)?;
        Money::from_decimal(amount, currency)
    }

    /// Builds an amount from a decimal already in hand (for example one read back from storage),
    /// under the same rules as [`Money::parse`].
    pub fn from_decimal(amount: Decimal, currency: Currency) -> Result<Money, MoneyError> {
        let amount = amount.normalize();
        if amount.is_zero() || amount.is_sign_negative() {
            return Err(MoneyError::NotPositive);
        }
        if amount.scale() > currency.decimals() {
            return Err(MoneyError::TooManyDecimals {
                allowed: currency.decimals(),
            });
        }
        if amount >= Money::MAX_EXCLUSIVE {
            return Err(MoneyError::Invalid);
        }
        Ok(Money { amount, currency })
    }

    /// The exact amount in the currency's major unit, without trailing zeros.
    pub fn amount(&self) -> Decimal {
        self.amount
    }

    /// The currency of the amount.
    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The amount as a JSON number in its shortest exact form: `10.50` becomes `10.5` and
    /// `29990.0` becomes `29990`, so responses never carry meaningless zeros.
    pub fn to_json_number(&self) -> serde_json::Number {
        let text = self.amount.normalize().to_string();
        // A normalized positive decimal prints as plain digits with an optional fraction, which is
        // always a valid JSON number; the fallback only guards against that ever changing.
        serde_json::Number::from_str(&text).unwrap_or_else(|_| serde_json::Number::from(0u8))
    }

    /// Adds two amounts of the same currency; `None` when the currencies differ or the total
    /// would reach [`Money::MAX_EXCLUSIVE`].
    pub fn checked_add(&self, other: &Money) -> Option<Money> {
        if self.currency != other.currency {
            return None;
        }
        let total = self.amount.checked_add(other.amount)?;
        Money::from_decimal(total, self.currency).ok()
    }
}

impl fmt::Display for Money {
    /// Shows the amount and its currency, as in `10.5 USD`, for messages and logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount, self.currency)
    }
}

/// Adds amounts that must all share one currency, as when a payment covers several installments.
/// Returns `None` for an empty list (there is no currency to give the total), for mixed
/// currencies, and for a total that would reach [`Money::MAX_EXCLUSIVE`].
pub fn sum(items: &[Money]) -> Option<Money> {
    let (first, rest) = items.split_first()?;
    rest.iter()
        .try_fold(first.clone(), |total, item| total.checked_add(item))
}

/// Reads the text of a JSON number (`-?digits[.digits][(e|E)[+-]digits]`) into an exact decimal,
/// applying the exponent by moving the decimal point rather than by arithmetic. `currency` only
/// names the allowance when the number has more decimals than any decimal can hold.
fn parse_exact(text: &str, currency: Currency) -> Result<Decimal, MoneyError> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (integer, fraction) = match mantissa.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (mantissa, None),
    };
    let is_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !is_digits(integer) || fraction.is_some_and(|f| !is_digits(f)) {
        return Err(MoneyError::Invalid);
    }
    let fraction = fraction.unwrap_or_default();
    let exponent: i64 = match exponent {
        None => 0,
        Some(text) => {
            let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
            if !is_digits(digits) {
                return Err(MoneyError::Invalid);
            }
            // An exponent this large cannot describe a real amount; refusing it early keeps the
            // arithmetic below from overflowing.
            if digits.trim_start_matches('0').len() > 6 {
                return Err(MoneyError::Invalid);
            }
            text.parse().map_err(|_| MoneyError::Invalid)?
        }
    };

    // The value is digits * 10^-scale.
    let mut digits: String = format!("{integer}{fraction}");
    let mut scale = fraction.len() as i64 - exponent;
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
        scale -= 1;
    }
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Ok(Decimal::ZERO);
    }
    // More decimals than the decimal type holds can never be accepted; the error is the one
    // `Money::from_decimal` would give, a sign problem first, then the decimals.
    if scale > i64::from(Decimal::MAX_SCALE) {
        return Err(if negative {
            MoneyError::NotPositive
        } else {
            MoneyError::TooManyDecimals {
                allowed: currency.decimals(),
            }
        });
    }
    // The largest amount accepted has 14 integer digits and 4 decimals, so a number with more than
    // 28 significant digits (the most a decimal holds) is far too large.
    let padding = if scale < 0 { (-scale) as usize } else { 0 };
    if digits.len() + padding > 28 {
        return Err(MoneyError::Invalid);
    }
    let mut mantissa: i128 = digits.parse().map_err(|_| MoneyError::Invalid)?;
    for _ in 0..padding {
        mantissa = mantissa.checked_mul(10).ok_or(MoneyError::Invalid)?;
    }
    if negative {
        mantissa = -mantissa;
    }
    Decimal::try_from_i128_with_scale(mantissa, scale.max(0) as u32)
        .map_err(|_| MoneyError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> serde_json::Number {
        serde_json::Number::from_str(text)
            .unwrap_or_else(|e| panic!("{text:?} is not a JSON number: {e}"))
    }

    fn decimal(text: &str) -> Decimal {
        Decimal::from_str(text).unwrap()
    }

    #[test]
    fn currencies_parse_only_exact_codes() {
        let cases: &[(&str, Option<Currency>)] = &[
            ("CLP", Some(Currency::Clp)),
            ("CLF", Some(Currency::Clf)),
            ("USD", Some(Currency::Usd)),
            ("clp", None),
            ("Usd", None),
            (" CLP", None),
            ("CLP ", None),
            ("EUR", None),
            ("UF", None),
            ("", None),
        ];
        for (code, expected) in cases {
            assert_eq!(Currency::parse(code), *expected, "code {code:?}");
        }
    }

    #[test]
    fn currencies_know_their_code_and_decimals() {
        let cases: &[(Currency, &str, u32)] = &[
            (Currency::Clp, "CLP", 0),
            (Currency::Clf, "CLF", 4),
            (Currency::Usd, "USD", 2),
        ];
        for (currency, code, decimals) in cases {
            assert_eq!(currency.code(), *code);
            assert_eq!(currency.to_string(), *code);
            assert_eq!(currency.decimals(), *decimals);
            assert_eq!(Currency::parse(code), Some(*currency));
        }
        assert_eq!(Currency::ALL.len(), 3);
    }

    #[test]
    fn max_is_ten_to_the_fourteenth() {
        assert_eq!(Money::MAX_EXCLUSIVE, decimal("100000000000000"));
    }

    #[test]
    fn accepts_valid_amounts() {
        let cases: &[(&str, Currency, &str)] = &[
            ("29990", Currency::Clp, "29990"),
            ("1", Currency::Clp, "1"),
            ("29990.0", Currency::Clp, "29990"),
            ("29990.000", Currency::Clp, "29990"),
            ("1e2", Currency::Clp, "100"),
            ("1E2", Currency::Clp, "100"),
            ("1e+2", Currency::Clp, "100"),
            ("2.999e4", Currency::Clp, "29990"),
            ("100e-2", Currency::Clp, "1"),
            ("0.5e1", Currency::Clp, "5"),
            ("1e0", Currency::Clp, "1"),
            ("1e000", Currency::Clp, "1"),
            ("99999999999999", Currency::Clp, "99999999999999"),
            ("10.5", Currency::Usd, "10.5"),
            ("10.50", Currency::Usd, "10.5"),
            ("10.55", Currency::Usd, "10.55"),
            ("10.550", Currency::Usd, "10.55"),
            ("0.01", Currency::Usd, "0.01"),
            ("1e-2", Currency::Usd, "0.01"),
            ("1055e-2", Currency::Usd, "10.55"),
            ("1.2345", Currency::Clf, "1.2345"),
            ("1.23450", Currency::Clf, "1.2345"),
            ("0.0001", Currency::Clf, "0.0001"),
            ("12345e-4", Currency::Clf, "1.2345"),
            ("99999999999999.9999", Currency::Clf, "99999999999999.9999"),
        ];
        for (text, currency, expected) in cases {
            let money = Money::parse(&number(text), *currency)
                .unwrap_or_else(|e| panic!("{text:?} {currency} refused: {e}"));
            assert_eq!(money.amount(), decimal(expected), "input {text:?}");
            assert_eq!(
                money.amount().to_string(),
                *expected,
                "input {text:?} is stored normalized"
            );
            assert_eq!(money.currency(), *currency);
        }
    }

    #[test]
    fn refuses_too_many_decimals() {
        let cases: &[(&str, Currency)] = &[
            ("0.5", Currency::Clp),
            ("29990.5", Currency::Clp),
            ("29990.01", Currency::Clp),
            ("1e-1", Currency::Clp),
            ("10.555", Currency::Usd),
            ("10.5551", Currency::Usd),
            ("10.5550001", Currency::Usd),
            ("1e-3", Currency::Usd),
            ("1.23456", Currency::Clf),
            ("0.00001", Currency::Clf),
            ("1e-5", Currency::Clf),
            ("1e-40", Currency::Usd),
            ("1.00000000000000000000000000000000001", Currency::Usd),
        ];
        for (text, currency) in cases {
            assert_eq!(
                Money::parse(&number(text), *currency),
                Err(MoneyError::TooManyDecimals {
                    allowed: currency.decimals()
                }),
                "input {text:?}"
            );
        }
    }

    #[test]
    fn refuses_zero_and_negative_amounts() {
        let cases: &[(&str, Currency)] = &[
            ("0", Currency::Clp),
            ("0.0", Currency::Usd),
            ("-0", Currency::Clp),
            ("0e5", Currency::Clp),
            ("0.0000", Currency::Clf),
            ("-1", Currency::Clp),
            ("-10.5", Currency::Usd),
            ("-1e2", Currency::Clp),
            ("-0.0001", Currency::Clf),
            ("-1e-40", Currency::Usd),
            ("-10.555", Currency::Usd),
        ];
        for (text, currency) in cases {
            assert_eq!(
                Money::parse(&number(text), *currency),
                Err(MoneyError::NotPositive),
                "input {text:?}"
            );
        }
    }

    #[test]
    fn refuses_too_large_amounts() {
        let cases: &[(&str, Currency)] = &[
            ("100000000000000", Currency::Clp),
            ("1e14", Currency::Clp),
            ("1e28", Currency::Clp),
            ("1e29", Currency::Clp),
            ("1e400", Currency::Clp),
            ("1e99999999999999999999", Currency::Clp),
            ("123456789012345678901234567890", Currency::Clp),
            ("100000000000000.0001", Currency::Clf),
        ];
        for (text, currency) in cases {
            assert_eq!(
                Money::parse(&number(text), *currency),
                Err(MoneyError::Invalid),
                "input {text:?}"
            );
        }
    }

    #[test]
    fn refuses_text_that_is_not_a_plain_number() {
        // `serde_json::Number` only ever holds valid JSON numbers, so these reach `parse_exact`
        // only through a bug elsewhere; they are still refused rather than guessed at.
        let cases: &[&str] = &[
            "", "-", "abc", "1.", ".5", "1e", "1e+", "1.2.3", "+1", "1_000", "0x10", "NaN", "inf",
        ];
        for text in cases {
            assert_eq!(
                parse_exact(text, Currency::Usd),
                Err(MoneyError::Invalid),
                "input {text:?}"
            );
        }
    }

    #[test]
    fn from_decimal_applies_the_same_rules() {
        let ok: &[(&str, Currency, &str)] = &[
            ("29990", Currency::Clp, "29990"),
            ("29990.00", Currency::Clp, "29990"),
            ("10.50", Currency::Usd, "10.5"),
            ("1.2345", Currency::Clf, "1.2345"),
        ];
        for (text, currency, expected) in ok {
            let money = Money::from_decimal(decimal(text), *currency).unwrap();
            assert_eq!(money.amount().to_string(), *expected);
        }
        let refused: &[(&str, Currency, MoneyError)] = &[
            ("0", Currency::Clp, MoneyError::NotPositive),
            ("-1", Currency::Clp, MoneyError::NotPositive),
            (
                "10.555",
                Currency::Usd,
                MoneyError::TooManyDecimals { allowed: 2 },
            ),
            (
                "1.23456",
                Currency::Clf,
                MoneyError::TooManyDecimals { allowed: 4 },
            ),
            (
                "0.5",
                Currency::Clp,
                MoneyError::TooManyDecimals { allowed: 0 },
            ),
            ("100000000000000", Currency::Clp, MoneyError::Invalid),
        ];
        for (text, currency, error) in refused {
            assert_eq!(
                Money::from_decimal(decimal(text), *currency),
                Err(*error),
                "input {text:?}"
            );
        }
    }

    #[test]
    fn json_output_is_the_shortest_exact_form() {
        let cases: &[(&str, Currency, &str)] = &[
            ("29990", Currency::Clp, "29990"),
            ("29990.0", Currency::Clp, "29990"),
            ("1e2", Currency::Clp, "100"),
            ("10.50", Currency::Usd, "10.5"),
            ("10.5", Currency::Usd, "10.5"),
            ("10.00", Currency::Usd, "10"),
            ("0.10", Currency::Usd, "0.1"),
            ("1.2340", Currency::Clf, "1.234"),
            ("0.0001", Currency::Clf, "0.0001"),
        ];
        for (text, currency, expected) in cases {
            let money = Money::parse(&number(text), *currency).unwrap();
            let json = money.to_json_number();
            assert_eq!(json.to_string(), *expected, "input {text:?}");
            assert_eq!(
                serde_json::to_string(&json).unwrap(),
                *expected,
                "input {text:?}"
            );
        }
        // Values built from a decimal with trailing zeros print just as short.
        let money = Money::from_decimal(decimal("29990.00"), Currency::Clp).unwrap();
        assert_eq!(money.to_json_number().to_string(), "29990");
    }

    #[test]
    fn parse_reads_numbers_from_deserialized_json() {
        let value: serde_json::Value =
            serde_json::from_str(r#"{"a": 10.10, "b": 1e3, "c": 0.1}"#).unwrap();
        let read = |key: &str, currency| {
            let n = value[key].as_number().unwrap();
            Money::parse(n, currency).map(|m| m.amount().to_string())
        };
        assert_eq!(read("a", Currency::Usd), Ok("10.1".to_string()));
        assert_eq!(read("b", Currency::Clp), Ok("1000".to_string()));
        assert_eq!(read("c", Currency::Usd), Ok("0.1".to_string()));
    }

    #[test]
    fn equality_ignores_trailing_zeros() {
        let a = Money::parse(&number("10.5"), Currency::Usd).unwrap();
        let b = Money::parse(&number("10.50"), Currency::Usd).unwrap();
        assert_eq!(a, b);
        let c = Money::parse(&number("10.5"), Currency::Clf).unwrap();
        assert_ne!(a, c, "the same value in another currency is another amount");
    }

    #[test]
    fn sums_amounts_of_one_currency() {
        let clp = |t: &str| Money::parse(&number(t), Currency::Clp).unwrap();
        let usd = |t: &str| Money::parse(&number(t), Currency::Usd).unwrap();
        let cases: &[(Vec<Money>, Option<Money>)] = &[
            (vec![], None),
            (vec![clp("29990")], Some(clp("29990"))),
            (vec![clp("29990"), clp("29990")], Some(clp("59980"))),
            (vec![usd("0.1"), usd("0.2")], Some(usd("0.3"))),
            (vec![usd("10.55"), usd("0.45"), usd("1")], Some(usd("12"))),
            (vec![clp("1"), usd("1")], None),
            (vec![clp("99999999999999"), clp("1")], None),
        ];
        for (items, expected) in cases {
            assert_eq!(sum(items), *expected, "items {items:?}");
        }
        assert_eq!(clp("1").checked_add(&clp("2")), Some(clp("3")));
        assert_eq!(clp("1").checked_add(&usd("2")), None);
    }

    #[test]
    fn displays_amount_and_currency() {
        let money = Money::parse(&number("10.50"), Currency::Usd).unwrap();
        assert_eq!(money.to_string(), "10.5 USD");
    }
}
