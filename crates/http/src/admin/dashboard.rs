//! The dashboard: mandates and installments by state, the month's money per currency
//! (collected, overdue, rejected), amounts collected and rejected per day, the next charges,
//! failing webhooks and the last charging run.

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

use axum::extract::{Query, State};
use chrono::{Datelike, Duration, NaiveDate};
use rust_decimal::Decimal;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::charging::RunDto;
use super::paging::{MoneyDto, Params, stored_amount};
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::wire::StateDto;
use mandato_core::domain::holidays::{ChargingRule, HolidayCalendar};
use mandato_core::domain::state::{InstallmentState, MandateState};
use mandato_core::error::FieldErrors;
use mandato_engine::records::DatedAmount;
use mandato_engine::staff::views::{DashboardData, DashboardPeriods};

/// How many days the chart covers, today included.
const CHART_DAYS: i64 = 30;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct DashboardQuery {
    /// Only this commerce (its code); every commerce when absent.
    commerce: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateCount {
    pub state: StateDto,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayAmounts {
    /// A business date, `YYYY-MM-DD`.
    pub date: String,
    /// The ledger's money of that business date, per currency: charges and payments marked
    /// paid, less reversals (a UF installment's charge in pesos).
    pub collected: Vec<MoneyDto>,
    /// Charge attempts rejected that day, per currency.
    pub rejected: Vec<MoneyDto>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NextCharge {
    pub installment_internal_id: String,
    pub installment_id: String,
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
    /// The contractual due date, `YYYY-MM-DD`.
    pub installment_due_date: String,
    /// The business day it is charged, `YYYY-MM-DD`: the due date moved off weekends and
    /// holidays by its commerce's charging rule (the due date itself when that is a business
    /// day).
    pub charge_date: String,
    pub mandate_internal_id: String,
    pub mandate_id: String,
    pub mandate_name: String,
    pub commerce: String,
    pub customer_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailingEvent {
    pub event_id: String,
    pub kind: String,
    pub url: Option<String>,
    /// FAILED, or PENDING after failed attempts (retrying).
    pub delivery_state: String,
    pub attempts: i64,
    pub created_at: String,
    pub mandate_internal_id: Option<String>,
    /// The merchant's mandate id (mandateId).
    pub mandate_id: Option<String>,
    /// The mandate's customer, first and last name.
    pub customer_name: Option<String>,
    pub commerce: String,
    /// The latest attempt's HTTP status, when an answer came.
    pub last_status: Option<i64>,
    /// The latest attempt's error or response excerpt.
    pub last_error: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailingWebhooks {
    pub failed: i64,
    pub retrying: i64,
    /// The newest ten.
    pub recent: Vec<FailingEvent>,
}

/// The money of one currency, as exact decimals written as text (`"29990"`, `"1.2345"`):
/// a JSON number would pass through binary floating point in the browser.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoneyTotals {
    #[schema(example = "CLP")]
    pub currency_id: String,
    /// The ledger's money of business dates of this month: charges (in pesos for a UF
    /// installment) and payments marked paid, less reversals; equal to the ledger's entries of
    /// the month without annulments, which move no money.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "1259580")]
    pub collected_this_month: String,
    /// Installments of ACTIVE mandates due before today and still unpaid (PENDING, or
    /// REJECTED and waiting for a retry).
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "59980")]
    pub overdue: String,
    /// Charge attempts rejected on business dates of this month (an installment rejected
    /// twice counts twice).
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "29990")]
    pub rejected_this_month: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    /// The business date.
    pub today: String,
    /// `sandbox` or `production`.
    pub environment: &'static str,
    /// Every mandate state, with zero counts too.
    pub mandates: Vec<StateCount>,
    /// Every installment state, with zero counts too.
    pub installments: Vec<StateCount>,
    /// The first day of this business month, `YYYY-MM-DD`.
    pub month_start: String,
    /// One entry per currency with any money this month or overdue, by currency code.
    pub totals: Vec<MoneyTotals>,
    /// The last 30 days, oldest first.
    pub days: Vec<DayAmounts>,
    /// The ten next installments to charge.
    pub next_charges: Vec<NextCharge>,
    pub failing_webhooks: FailingWebhooks,
    pub last_run: Option<RunDto>,
    /// Commerces a production installation cannot charge on some rail (no acquirer set,
    /// CONTRACT 13): nothing of those rails is offered or charged. Empty in a sandbox.
    pub unserved: Vec<UnservedCommerce>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnservedCommerce {
    pub commerce: String,
    /// `cards` and/or `bank`.
    pub rails: Vec<&'static str>,
}

/// The dashboard's figures.
#[utoipa::path(get, path = "/dashboard", tag = "staff", params(DashboardQuery),
    responses(
        (status = 200, description = "DASHBOARD_OK", body = Envelope<Dashboard>),
        (status = 400, description = "Unknown commerce", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn dashboard(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<Dashboard>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let commerce = params.commerce_id(&state, &mut errors);
    errors.into_result()?;
    let today = state.today();
    let first_day = today - Duration::days(CHART_DAYS - 1);
    let month_start = today.with_day(1).unwrap_or(today);
    let periods = DashboardPeriods {
        chart_first_day: &first_day.to_string(),
        month_first_day: &month_start.to_string(),
        today: &today.to_string(),
    };
    let engine = std::sync::Arc::clone(&state.engine);
    let DashboardData {
        mandate_counts,
        installment_counts,
        paid,
        rejected,
        month_paid,
        overdue,
        month_rejected,
        next_charges: next,
        failing_webhooks: failing,
        last_run: runs,
        calendar,
        charging_rules: rules,
    } = tokio::task::block_in_place(|| engine.dashboard(commerce, &periods))?;
    let unserved = tokio::task::block_in_place(|| engine.unserved_rails())?
        .into_iter()
        .map(|(commerce, rails)| UnservedCommerce {
            commerce,
            rails: rails.iter().map(|r| r.as_str()).collect(),
        })
        .collect();

    let mandates = MandateState::ALL
        .iter()
        .map(|s| StateCount {
            state: StateDto {
                id: s.id(),
                name: s.name(),
            },
            count: count_of(&mandate_counts, s.id()),
        })
        .collect();
    let installments = InstallmentState::ALL
        .iter()
        .map(|s| StateCount {
            state: StateDto {
                id: s.id(),
                name: s.name(),
            },
            count: count_of(&installment_counts, s.id()),
        })
        .collect();
    let days = per_day(first_day, today, &paid, &rejected);
    Ok(Envelope::ok(
        "DASHBOARD_OK",
        "dashboard",
        Dashboard {
            today: today.to_string(),
            environment: state.config.environment.as_str(),
            mandates,
            installments,
            month_start: month_start.to_string(),
            totals: totals(&month_paid, &overdue, &month_rejected),
            days,
            next_charges: next
                .into_iter()
                .map(|n| NextCharge {
                    charge_date: charge_date(&calendar, &rules, &n.commerce_code, &n.due_date),
                    installment_internal_id: n.installment_id,
                    installment_id: n.external_id,
                    amount: stored_amount(&n.amount),
                    currency_id: n.currency,
                    installment_due_date: n.due_date,
                    mandate_internal_id: n.mandate_id,
                    mandate_id: n.mandate_external_id,
                    mandate_name: n.mandate_name,
                    commerce: n.commerce_code,
                    customer_name: n.customer_name,
                })
                .collect(),
            failing_webhooks: FailingWebhooks {
                failed: failing.failed,
                retrying: failing.retrying,
                recent: failing
                    .recent
                    .into_iter()
                    .map(|e| FailingEvent {
                        event_id: e.event_id,
                        kind: e.kind,
                        url: e.url,
                        delivery_state: e.delivery_state,
                        attempts: e.attempts,
                        created_at: e.created_at,
                        mandate_internal_id: e.mandate_id,
                        mandate_id: e.mandate_external_id,
                        customer_name: e.customer_name,
                        commerce: e.commerce_code,
                        last_status: e.last_status,
                        last_error: e.last_error,
                    })
                    .collect(),
            },
            last_run: runs.into_iter().next().map(run_dto),
            unserved,
        },
    ))
}

/// Sums each list per currency: every currency that appears in any of them gets a line.
fn totals(
    collected: &[DatedAmount],
    overdue: &[DatedAmount],
    rejected: &[DatedAmount],
) -> Vec<MoneyTotals> {
    let mut sums: BTreeMap<String, [Decimal; 3]> = BTreeMap::new();
    for (slot, items) in [collected, overdue, rejected].into_iter().enumerate() {
        for item in items {
            let amount = Decimal::from_str(&item.amount).unwrap_or_default();
            sums.entry(item.currency.clone()).or_default()[slot] += amount;
        }
    }
    sums.into_iter()
        .map(|(currency, [collected, overdue, rejected])| MoneyTotals {
            currency_id: currency,
            collected_this_month: collected.normalize().to_string(),
            overdue: overdue.normalize().to_string(),
            rejected_this_month: rejected.normalize().to_string(),
        })
        .collect()
}

/// The day an installment of `commerce` due on `due` is charged, by that commerce's rule.
fn charge_date(
    calendar: &HolidayCalendar,
    rules: &HashMap<String, ChargingRule>,
    commerce: &str,
    due: &str,
) -> String {
    match due.parse::<NaiveDate>() {
        Ok(due) => {
            let rule = rules.get(commerce).copied().unwrap_or_default();
            calendar.charge_date(due, rule).to_string()
        }
        // Stored due dates are always dates; anything else is shown as it is.
        Err(_) => due.to_string(),
    }
}

/// The run as the charging screen shows it.
pub fn run_dto(r: mandato_engine::records::RunRow) -> RunDto {
    RunDto {
        business_date: r.business_date,
        trigger: r.trigger,
        state: r.state,
        started_at: r.started_at,
        finished_at: r.finished_at,
        total: r.counts.total,
        done: r.counts.done,
        attempted: r.counts.attempted,
        paid: r.counts.paid,
        rejected: r.counts.rejected,
        in_validation: r.counts.in_validation,
        in_process: r.counts.in_process,
        settled: r.counts.settled,
        waiting_uf: r.counts.waiting_uf,
        acquirer_not_configured: r.counts.acquirer_not_configured,
    }
}

fn count_of(counts: &[(i64, i64)], id: i64) -> i64 {
    counts
        .iter()
        .find(|(state, _)| *state == id)
        .map_or(0, |(_, n)| *n)
}

/// Sums amounts per business date and currency; both lists carry their business dates.
fn per_day(
    first: NaiveDate,
    last: NaiveDate,
    paid: &[DatedAmount],
    rejected: &[DatedAmount],
) -> Vec<DayAmounts> {
    type Sums = BTreeMap<NaiveDate, BTreeMap<String, Decimal>>;
    let add = |sums: &mut Sums, date: Option<NaiveDate>, item: &DatedAmount| {
        let Some(date) = date.filter(|d| *d >= first && *d <= last) else {
            return;
        };
        let amount = Decimal::from_str(&item.amount).unwrap_or_default();
        *sums
            .entry(date)
            .or_default()
            .entry(item.currency.clone())
            .or_default() += amount;
    };
    let mut collected = Sums::new();
    for item in paid {
        add(&mut collected, NaiveDate::from_str(&item.at).ok(), item);
    }
    let mut refused = Sums::new();
    for item in rejected {
        add(&mut refused, NaiveDate::from_str(&item.at).ok(), item);
    }
    let money = |sums: &Sums, date: NaiveDate| -> Vec<MoneyDto> {
        sums.get(&date)
            .map(|m| m.iter().map(|(c, a)| MoneyDto::new(*a, c)).collect())
            .unwrap_or_default()
    };
    first
        .iter_days()
        .take_while(|d| *d <= last)
        .map(|date| DayAmounts {
            date: date.to_string(),
            collected: money(&collected, date),
            rejected: money(&refused, date),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(at: &str, amount: &str, currency: &str) -> DatedAmount {
        DatedAmount {
            at: at.into(),
            amount: amount.into(),
            currency: currency.into(),
        }
    }

    #[test]
    fn totals_are_exact_per_currency() {
        let collected = [
            item("2026-11-02T12:00:00Z", "0.1", "CLF"),
            item("2026-11-03T12:00:00Z", "0.2", "CLF"),
            item("2026-11-03T12:00:00Z", "29990", "CLP"),
        ];
        let overdue = [item("2026-10-01", "1.2345", "CLF")];
        let rejected = [item("2026-11-04", "15000.00", "CLP")];
        let json = serde_json::to_value(totals(&collected, &overdue, &rejected)).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"currencyId": "CLF", "collectedThisMonth": "0.3", "overdue": "1.2345", "rejectedThisMonth": "0"},
                {"currencyId": "CLP", "collectedThisMonth": "29990", "overdue": "0", "rejectedThisMonth": "15000"},
            ])
        );
    }

    #[test]
    fn amounts_are_summed_per_day_and_currency_within_the_range() {
        let first = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap();
        let last = NaiveDate::from_ymd_opt(2026, 11, 3).unwrap();
        let paid = [
            item("2026-11-01", "100", "CLP"),
            item("2026-11-01", "50.5", "CLP"),
            item("2026-11-01", "1.25", "USD"),
            item("2026-10-31", "999", "CLP"),
        ];
        let rejected = [item("2026-11-03", "29990", "CLP")];
        let days = per_day(first, last, &paid, &rejected);
        assert_eq!(days.len(), 3);
        let json = serde_json::to_value(&days).unwrap();
        assert_eq!(
            json[0]["collected"],
            serde_json::json!([{"amount": 150.5, "currencyId": "CLP"}, {"amount": 1.25, "currencyId": "USD"}])
        );
        assert_eq!(json[1]["collected"], serde_json::json!([]));
        assert_eq!(
            json[2]["rejected"],
            serde_json::json!([{"amount": 29990, "currencyId": "CLP"}])
        );
    }
}
