//! What staff read: the dashboard's figures, the customers and mandates lists with their
//! counts, a customer's page, the staff and request audits, and the refusals seen before
//! authentication. Each read is one snapshot.

use std::collections::HashMap;

use mandato_core::domain::holidays::{ChargingRule, HolidayCalendar};
use mandato_core::error::Result;
use mandato_store::audit::{self, RefusalCount};
use mandato_store::charging::RunRow;
use mandato_store::customers::CustomerRow;
use mandato_store::staff_audit::{self, Verification};
use mandato_store::staff_views::{
    self as views, CustomerFilter, CustomerLine, DatedAmount, FailingWebhooks, InstallmentLine,
    MandateFilter, MandateLine, RequestAuditFilter, RequestAuditLine, StaffAuditFilter,
    StaffAuditLine,
};

use crate::Engine;

/// The dashboard's figures, of one commerce or of all.
pub struct DashboardData {
    /// `(state id, count)` of mandates.
    pub mandate_counts: Vec<(i64, i64)>,
    /// `(state id, count)` of installments.
    pub installment_counts: Vec<(i64, i64)>,
    /// The ledger's money (charges, payments marked paid, reversals) since the chart's first
    /// business date; `at` is the business date.
    pub paid: Vec<DatedAmount>,
    /// Rejected attempts since the chart's first day.
    pub rejected: Vec<DatedAmount>,
    /// The same since the month's first business date.
    pub month_paid: Vec<DatedAmount>,
    pub overdue: Vec<DatedAmount>,
    pub month_rejected: Vec<DatedAmount>,
    pub next_charges: Vec<InstallmentLine>,
    pub failing_webhooks: FailingWebhooks,
    pub last_run: Vec<RunRow>,
    pub calendar: HolidayCalendar,
    pub charging_rules: HashMap<String, ChargingRule>,
}

/// Where the dashboard's periods start, as business dates (`YYYY-MM-DD`): money is counted by
/// the business date the ledger and the charge attempts carry, never by a timestamp's day.
pub struct DashboardPeriods<'a> {
    pub chart_first_day: &'a str,
    pub month_first_day: &'a str,
    pub today: &'a str,
}

/// A refusals page: the latest per minute, totals per reason, and the retention in days.
pub struct Refusals {
    pub rows: Vec<RefusalCount>,
    pub totals: Vec<(String, i64)>,
    pub retention_days: i64,
}

impl Engine {
    pub fn dashboard(
        &self,
        commerce: Option<i64>,
        periods: &DashboardPeriods<'_>,
    ) -> Result<DashboardData> {
        self.store().read(|c| {
            Ok(DashboardData {
                mandate_counts: views::mandate_counts(c, commerce)?,
                installment_counts: views::installment_counts(c, commerce)?,
                paid: views::ledger_money_since(c, periods.chart_first_day, commerce)?,
                rejected: views::rejected_attempts_since(c, periods.chart_first_day, commerce)?,
                month_paid: views::ledger_money_since(c, periods.month_first_day, commerce)?,
                overdue: views::overdue_amounts(c, periods.today, commerce)?,
                month_rejected: views::rejected_attempts_since(
                    c,
                    periods.month_first_day,
                    commerce,
                )?,
                next_charges: views::next_charges(c, 10, commerce)?,
                failing_webhooks: views::failing_webhooks(c, 10)?,
                last_run: mandato_store::charging::runs(c, 1)?,
                calendar: mandato_store::calendar::load(c)?,
                charging_rules: mandato_store::calendar::charging_rules(c)?,
            })
        })
    }

    /// The customers the filter selects (`filter.limit` of them) and how many match in all.
    pub fn customers_page(&self, mut filter: CustomerFilter) -> Result<(Vec<CustomerLine>, i64)> {
        self.store().read(|c| {
            let rows = views::search_customers(c, &filter)?;
            filter.after = None;
            Ok((rows, views::count_customers(c, &filter)?))
        })
    }

    /// A customer by internal id, its commerce's code and its mandates, newest first.
    pub fn customer_detail(
        &self,
        id: &str,
    ) -> Result<Option<(CustomerRow, String, Vec<MandateLine>)>> {
        self.store().read(|c| {
            let Some((customer, commerce)) = views::customer_by_id(c, id)? else {
                return Ok(None);
            };
            let mandates = views::mandates_of_customer(c, customer.seq)?;
            Ok(Some((customer, commerce, mandates)))
        })
    }

    /// The mandates the filter selects, of the customers whose name, RUT or id matches
    /// `customer` when given, and how many match in all.
    pub fn mandates_page(
        &self,
        customer: Option<&str>,
        mut filter: MandateFilter,
    ) -> Result<(Vec<MandateLine>, i64)> {
        self.store().read(|c| {
            filter.customer_seqs = customer
                .map(|text| views::customer_seqs_matching(c, text))
                .transpose()?;
            let rows = views::list_mandates(c, &filter)?;
            filter.after = None;
            Ok((rows, views::count_mandates(c, &filter)?))
        })
    }

    pub fn staff_audit(&self, filter: &StaffAuditFilter) -> Result<Vec<StaffAuditLine>> {
        self.store().read(|c| Ok(views::staff_audit(c, filter)?))
    }

    pub fn request_audit(&self, filter: &RequestAuditFilter) -> Result<Vec<RequestAuditLine>> {
        self.store().read(|c| Ok(views::request_audit(c, filter)?))
    }

    /// Requests refused before authentication between two stored timestamps.
    pub fn refusals(&self, from: Option<&str>, to: Option<&str>, limit: i64) -> Result<Refusals> {
        self.store().read(|c| {
            Ok(Refusals {
                rows: audit::refusals(c, from, to, limit)?,
                totals: audit::refusal_totals(c, from, to)?,
                retention_days: audit::retention_days(c).unwrap_or(audit::DEFAULT_RETENTION_DAYS),
            })
        })
    }

    /// Recomputes the staff audit's hash chain, off the async workers (it reads every entry).
    pub async fn verify_staff_audit(&self) -> Result<Verification> {
        let store = std::sync::Arc::clone(self.store());
        tokio::task::spawn_blocking(move || store.read(|c| Ok(staff_audit::verify(c)?)))
            .await
            .map_err(|e| mandato_core::error::Error::Internal(e.into()))?
    }
}
