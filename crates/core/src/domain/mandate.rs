//! What a mandate charges, and the installments that follow from it (CONTRACT 5).

use serde_json::{Value, json};

use super::date::Date;
use super::money::{Currency, Money};
use super::schedule::{self, Periodicity};
use super::state::MandateType;

/// How many upcoming installments a PERMANENT mandate keeps generated.
pub const PERMANENT_HORIZON: u32 = 12;

/// Where a SUBSCRIPTION stops: after a number of installments, or on an inclusive end date.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubscriptionEnd {
    Count(u32),
    EndDate(Date),
}

/// The accepted `mandate.charges`, one shape per mandate type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Charges {
    Onepay {
        total: Money,
        due_date: Date,
    },
    Subscription {
        amount: Money,
        periodicity: Periodicity,
        start_date: Date,
        end: SubscriptionEnd,
    },
    Permanent {
        amount: Money,
        periodicity: Periodicity,
        start_date: Date,
    },
    Dynamic {
        currency: Currency,
        max_amount: Option<Money>,
    },
}

/// One installment the service itself schedules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedInstallment {
    pub id: String,
    pub amount: Money,
    pub due_date: Date,
}

impl Charges {
    pub fn mandate_type(&self) -> MandateType {
        match self {
            Charges::Onepay { .. } => MandateType::Onepay,
            Charges::Subscription { .. } => MandateType::Subscription,
            Charges::Permanent { .. } => MandateType::Permanent,
            Charges::Dynamic { .. } => MandateType::Dynamic,
        }
    }

    pub fn currency(&self) -> Currency {
        match self {
            Charges::Onepay { total, .. } => total.currency(),
            Charges::Subscription { amount, .. } | Charges::Permanent { amount, .. } => {
                amount.currency()
            }
            Charges::Dynamic { currency, .. } => *currency,
        }
    }

    /// The installments the service generates at creation. ONEPAY's single installment is
    /// generated only when the merchant sent none; DYNAMIC has none of its own.
    pub fn scheduled_installments(
        &self,
    ) -> Result<Vec<PlannedInstallment>, schedule::ScheduleError> {
        let numbered = |amount: &Money, dates: Vec<Date>| {
            dates
                .into_iter()
                .enumerate()
                .map(|(i, due_date)| PlannedInstallment {
                    id: (i + 1).to_string(),
                    amount: amount.clone(),
                    due_date,
                })
                .collect()
        };
        Ok(match self {
            Charges::Onepay { total, due_date } => numbered(total, vec![*due_date]),
            Charges::Subscription {
                amount,
                periodicity,
                start_date,
                end,
            } => {
                let dates = match end {
                    SubscriptionEnd::Count(n) => {
                        schedule::dates_by_count(*start_date, *periodicity, *n)?
                    }
                    SubscriptionEnd::EndDate(end) => {
                        schedule::dates_until(*start_date, *periodicity, *end)?
                    }
                };
                numbered(amount, dates)
            }
            Charges::Permanent {
                amount,
                periodicity,
                start_date,
            } => numbered(
                amount,
                schedule::dates_by_count(*start_date, *periodicity, PERMANENT_HORIZON)?,
            ),
            Charges::Dynamic { .. } => Vec::new(),
        })
    }

    /// The wire form, as stored and as shown in lookups. Absent parts are `null`.
    pub fn to_json(&self) -> Value {
        let (amount, periodicity, start, count, end, due, max) = match self {
            Charges::Onepay { total, due_date } => {
                (Some(total), None, None, None, None, Some(*due_date), None)
            }
            Charges::Subscription {
                amount,
                periodicity,
                start_date,
                end,
            } => {
                let (count, end_date) = match end {
                    SubscriptionEnd::Count(n) => (Some(*n), None),
                    SubscriptionEnd::EndDate(d) => (None, Some(*d)),
                };
                (
                    Some(amount),
                    Some(*periodicity),
                    Some(*start_date),
                    count,
                    end_date,
                    None,
                    None,
                )
            }
            Charges::Permanent {
                amount,
                periodicity,
                start_date,
            } => (
                Some(amount),
                Some(*periodicity),
                Some(*start_date),
                None,
                None,
                None,
                None,
            ),
            Charges::Dynamic { max_amount, .. } => {
                (None, None, None, None, None, None, max_amount.as_ref())
            }
        };
        json!({
            "currencyId": self.currency().code(),
            "amount": amount.map(Money::to_json_number),
            "periodicity": periodicity.map(Periodicity::as_str),
            "startDate": start.map(|d| d.to_string()),
            "count": count,
            "endDate": end.map(|d| d.to_string()),
            "dueDate": due.map(|d| d.to_string()),
            "maxAmount": max.map(Money::to_json_number),
        })
    }
}
