//! What staff read of money not collected: the past-due mandates with their rejected
//! installments, one charging run with the attempts it made, and a customer's payment history.
//! Each read is one snapshot.

use std::str::FromStr;

use rust_decimal::Decimal;

use mandato_core::error::Result;
use mandato_store::charging::{RunRow, run_by_seq};
use mandato_store::customers::CustomerRow;
use mandato_store::staff_past_due as store;
pub use mandato_store::staff_past_due::{
    PastDueFilter, PastDueMandate, PaymentLine, PaymentSource, RejectedInstallment, RunAttempt,
};
use mandato_store::staff_views;

use crate::Engine;

/// A past-due mandate, its rejected installments (by due date) and what they add up to.
#[derive(Debug, Clone)]
pub struct PastDueLine {
    pub mandate: PastDueMandate,
    pub installments: Vec<RejectedInstallment>,
}

impl PastDueLine {
    /// The latest rejected installment: its reason is the mandate's latest one.
    pub fn latest(&self) -> Option<&RejectedInstallment> {
        self.installments
            .iter()
            .max_by(|a, b| a.rejected_at.cmp(&b.rejected_at))
    }

    /// The earliest retry any of its installments waits for; `None` when every one was
    /// declined for good. A REJECTED installment holds a retry date only while one is
    /// scheduled, as the mandate's page reads it.
    pub fn next_retry_date(&self) -> Option<&str> {
        self.installments
            .iter()
            .filter_map(|i| i.next_retry_date.as_deref().filter(|_| i.retry_scheduled))
            .min()
    }

    /// The rejected amounts added up per currency, in the order the currencies appear.
    pub fn amounts_due(&self) -> Vec<(Decimal, String)> {
        let mut sums: Vec<(Decimal, String)> = Vec::new();
        for i in &self.installments {
            let amount = Decimal::from_str(&i.amount).unwrap_or_default();
            match sums.iter_mut().find(|(_, c)| *c == i.currency) {
                Some((sum, _)) => *sum += amount,
                None => sums.push((amount, i.currency.clone())),
            }
        }
        sums
    }
}

/// A charging run, how its attempts stand by state, and a page of them.
pub struct RunDetail {
    pub run: RunRow,
    pub outcomes: Vec<(String, i64)>,
    pub attempts: Vec<RunAttempt>,
}

/// Which of a run's attempts to read.
pub struct RunAttemptsPage<'a> {
    pub state: Option<&'a str>,
    /// The seq of the last attempt shown.
    pub after: Option<i64>,
    pub limit: i64,
}

/// A page of a customer's payment history and how many lines it has in all.
pub struct CustomerPayments {
    pub customer: CustomerRow,
    pub lines: Vec<PaymentLine>,
    pub total: i64,
}

impl Engine {
    /// The past-due mandates the filter selects (`filter.limit` of them) and how many there
    /// are in all.
    pub fn past_due_page(&self, filter: &PastDueFilter) -> Result<(Vec<PastDueLine>, i64)> {
        self.store().read(|c| {
            let mandates = store::past_due_page(c, filter)?;
            let seqs: Vec<i64> = mandates.iter().map(|m| m.seq).collect();
            let mut installments = store::rejected_installments(c, &seqs)?;
            let total = store::count_past_due(c, filter.commerce_id)?;
            let lines = mandates
                .into_iter()
                .map(|mandate| {
                    let (mine, rest) = installments
                        .drain(..)
                        .partition(|i| i.mandate_seq == mandate.seq);
                    installments = rest;
                    PastDueLine {
                        mandate,
                        installments: mine,
                    }
                })
                .collect();
            Ok((lines, total))
        })
    }

    /// A charging run by its number, with a page of its attempts; `None` when there is none.
    pub fn charging_run(&self, seq: i64, page: &RunAttemptsPage<'_>) -> Result<Option<RunDetail>> {
        self.store().read(|c| {
            let Some(run) = run_by_seq(c, seq)? else {
                return Ok(None);
            };
            Ok(Some(RunDetail {
                outcomes: store::run_attempt_counts(c, seq)?,
                attempts: store::run_attempts(c, seq, page.state, page.after, page.limit)?,
                run,
            }))
        })
    }

    /// A page of the payment history of the customer `id` (usr_...), newest first, after
    /// `after`; `None` when there is no such customer.
    pub fn customer_payments(
        &self,
        id: &str,
        after: Option<(&str, PaymentSource, i64)>,
        limit: i64,
    ) -> Result<Option<CustomerPayments>> {
        self.store().read(|c| {
            let Some((customer, _)) = staff_views::customer_by_id(c, id)? else {
                return Ok(None);
            };
            let lines =
                store::customer_payments(c, customer.seq, customer.commerce_id, after, limit)?;
            let total = store::count_customer_payments(c, customer.seq, customer.commerce_id)?;
            Ok(Some(CustomerPayments {
                customer,
                lines,
                total,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(
        amount: &str,
        currency: &str,
        at: &str,
        retry: Option<&str>,
    ) -> RejectedInstallment {
        RejectedInstallment {
            mandate_seq: 1,
            id: format!("ins_{at}"),
            external_id: at.to_string(),
            amount: amount.to_string(),
            currency: currency.to_string(),
            due_date: "2026-11-01".to_string(),
            rejected_at: at.to_string(),
            attempts: 1,
            rejection_code: Some(format!("CODE_{at}")),
            rejection_message: None,
            next_retry_date: retry.map(str::to_string),
            retry_scheduled: retry.is_some(),
        }
    }

    fn line(installments: Vec<RejectedInstallment>) -> PastDueLine {
        PastDueLine {
            mandate: PastDueMandate {
                seq: 1,
                id: "man_1".into(),
                external_id: "M-1".into(),
                name: "Plan".into(),
                state: 2,
                commerce_code: "76123456-0".into(),
                customer_id: "usr_1".into(),
                customer_name: "Ana Pérez".into(),
                customer_rut: "12345678-5".into(),
                last_rejected_at: "2".into(),
                rejected: installments.len() as i64,
            },
            installments,
        }
    }

    #[test]
    fn a_past_due_line_adds_its_amounts_and_takes_the_earliest_retry_and_latest_reason() {
        let l = line(vec![
            rejected("15000", "CLP", "1", Some("2026-11-10")),
            rejected("2500.5", "CLP", "3", None),
            rejected("1000", "CLP", "2", Some("2026-11-08")),
        ]);
        assert_eq!(
            l.amounts_due(),
            vec![(Decimal::from_str("18500.5").unwrap(), "CLP".to_string())]
        );
        assert_eq!(l.next_retry_date(), Some("2026-11-08"));
        assert_eq!(
            l.latest().unwrap().rejection_code.as_deref(),
            Some("CODE_3")
        );
    }

    #[test]
    fn a_line_declined_for_good_has_no_retry() {
        let mut stale = rejected("1", "CLF", "1", Some("2026-11-10"));
        stale.retry_scheduled = false;
        assert_eq!(line(vec![stale]).next_retry_date(), None);
    }
}
