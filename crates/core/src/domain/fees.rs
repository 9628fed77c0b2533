//! What an acquirer charges a commerce for an approved charge (CONTRACT 13): a fee rule per
//! commerce and payment method, a commission percent of the amount, a fixed amount and, when
//! it applies, IVA on both. Neither Transbank nor Fintoc reports fees when they charge, so
//! the ledger takes the fee from the commerce's rule; a reconciliation import (the acquirer's
//! payout report) corrects it afterwards. A method without a rule of its own uses the
//! simulated acquirer's rates (`ledger::commission_rate`, no fixed amount, IVA).

use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use super::ledger::{IVA, commission_rate};
use super::money::Money;
use super::state::PaymentMethod;
use crate::error::{Error, FieldErrors};

/// The most a commission may be, in percent: nothing an acquirer charges comes near it, and
/// a rule above it is a typing mistake (10 written as 100).
pub const MAX_COMMISSION_PERCENT: u32 = 20;
/// The largest fixed amount per charge, in pesos.
pub const MAX_FIXED_PESOS: u32 = 100_000;

/// One method's fee rule. Built only by [`FeeRule::parse`] or [`FeeRule::default_for`], so its
/// numbers are always in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeeRule {
    /// Percent of the amount (2.95 means 2.95 %), at most 4 decimals.
    commission_percent: Decimal,
    /// Whole pesos per approved charge.
    fixed: Decimal,
    /// Whether IVA (19 %) is added on the commission and the fixed amount.
    iva: bool,
}

/// A rule as typed: text, so every bad field is named at once.
#[derive(Debug, Default, Clone)]
pub struct FeeRuleInput {
    pub commission_percent: Option<String>,
    pub fixed: Option<String>,
    pub iva: Option<bool>,
}

impl FeeRule {
    /// The simulated acquirer's rule for `method` (the default of every commerce).
    pub fn default_for(method: PaymentMethod) -> FeeRule {
        FeeRule {
            commission_percent: (commission_rate(method) * Decimal::ONE_HUNDRED).normalize(),
            fixed: Decimal::ZERO,
            iva: true,
        }
    }

    /// A rule from stored or typed text, naming every bad field.
    pub fn parse(input: &FeeRuleInput) -> Result<FeeRule, Error> {
        let mut errors = FieldErrors::new();
        let commission_percent = match input.commission_percent.as_deref().map(str::trim) {
            None | Some("") => {
                errors.missing("commissionPercent");
                None
            }
            Some(text) => match Decimal::from_str(text) {
                Ok(d)
                    if d >= Decimal::ZERO
                        && d <= Decimal::from(MAX_COMMISSION_PERCENT)
                        && d.normalize().scale() <= 4 =>
                {
                    Some(d.normalize())
                }
                _ => {
                    errors.push(
                        "commissionPercent",
                        "INVALID_COMMISSION",
                        format!(
                            "a percent from 0 to {MAX_COMMISSION_PERCENT} with at most 4 decimals \
                             (2.95 for 2.95 %)"
                        ),
                    );
                    None
                }
            },
        };
        let fixed = match input.fixed.as_deref().map(str::trim) {
            None | Some("") => Some(Decimal::ZERO),
            Some(text) => match Decimal::from_str(text) {
                Ok(d)
                    if d >= Decimal::ZERO
                        && d <= Decimal::from(MAX_FIXED_PESOS)
                        && d.normalize().scale() == 0 =>
                {
                    Some(d.normalize())
                }
                _ => {
                    errors.push(
                        "fixed",
                        "INVALID_FIXED_FEE",
                        format!("whole pesos from 0 to {MAX_FIXED_PESOS}"),
                    );
                    None
                }
            },
        };
        errors.into_result()?;
        Ok(FeeRule {
            commission_percent: commission_percent.unwrap_or_default(),
            fixed: fixed.unwrap_or_default(),
            iva: input.iva.unwrap_or(true),
        })
    }

    pub fn commission_percent(&self) -> Decimal {
        self.commission_percent
    }

    pub fn fixed(&self) -> Decimal {
        self.fixed
    }

    pub fn iva(&self) -> bool {
        self.iva
    }

    /// The fee of an approved charge of `amount`: the commission and the fixed amount, each
    /// rounded half away from zero to the currency's decimals (whole pesos for CLP), plus IVA
    /// on their sum when the rule says so. Never more than the amount itself.
    pub fn fee(&self, amount: &Money) -> Decimal {
        let round = |d: Decimal| {
            d.round_dp_with_strategy(
                amount.currency().decimals(),
                RoundingStrategy::MidpointAwayFromZero,
            )
        };
        let commission = round(amount.amount() * self.commission_percent / Decimal::ONE_HUNDRED);
        let base = commission + self.fixed;
        let tax = if self.iva {
            round(base * IVA)
        } else {
            Decimal::ZERO
        };
        (base + tax).min(amount.amount()).normalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ledger::acquirer_fee;
    use crate::domain::money::Currency;

    fn clp(n: i64) -> Money {
        Money::from_decimal(Decimal::from(n), Currency::Clp).unwrap()
    }

    fn input(commission: &str, fixed: &str, iva: bool) -> FeeRuleInput {
        FeeRuleInput {
            commission_percent: Some(commission.into()),
            fixed: Some(fixed.into()),
            iva: Some(iva),
        }
    }

    #[test]
    fn the_default_rule_is_the_simulated_acquirers_fee() {
        for &method in PaymentMethod::ALL {
            for amount in [1, 99, 15_990, 1_234_567] {
                assert_eq!(
                    FeeRule::default_for(method).fee(&clp(amount)),
                    acquirer_fee(&clp(amount), method),
                    "{method:?} {amount}"
                );
            }
        }
    }

    #[test]
    fn commission_fixed_and_iva_add_up_in_whole_pesos() {
        // 1.49 % of 10.000 = 149, + 50 fixed = 199, + IVA 37.81 → 38: 237.
        let rule = FeeRule::parse(&input("1.49", "50", true)).unwrap();
        assert_eq!(rule.fee(&clp(10_000)).to_string(), "237");
        let untaxed = FeeRule::parse(&input("1.49", "50", false)).unwrap();
        assert_eq!(untaxed.fee(&clp(10_000)).to_string(), "199");
        // Never more than the charge.
        assert_eq!(rule.fee(&clp(40)).to_string(), "40");
    }

    #[test]
    fn every_bad_field_is_named() {
        let Err(Error::Validation(errors)) = FeeRule::parse(&input("150", "1.5", true)) else {
            panic!("refused");
        };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["commissionPercent", "fixed"]);
        for bad in ["-1", "abc", "2.123456", "NaN"] {
            assert!(FeeRule::parse(&input(bad, "0", true)).is_err(), "{bad}");
        }
        assert!(FeeRule::parse(&FeeRuleInput::default()).is_err());
        let zero = FeeRule::parse(&input("0", "", false)).unwrap();
        assert_eq!(zero.fee(&clp(5000)).to_string(), "0");
    }
}
