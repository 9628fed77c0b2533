//! Charging for staff: the runs with their counts and the progress of the one under way, a run
//! now, the sandbox clock, and the UF table.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use crate::sandbox::RunSummaryDto;
use mandato_core::domain::state::InstallmentState;
use mandato_core::error::Error;
use mandato_core::error::FieldErrors;
use mandato_engine::records::{Role, RunRow};
use mandato_engine::staff::past_due::{RunAttempt, RunAttemptsPage};

use super::paging::{Params, stored_amount};
use crate::wire::StateDto;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDto {
    pub business_date: String,
    /// SCHEDULE, CATCH_UP, MANUAL or SANDBOX.
    pub trigger: String,
    /// RUNNING, FINISHED or INTERRUPTED (the process stopped mid-run; reconciled at start).
    pub state: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub total: i64,
    pub done: i64,
    pub attempted: i64,
    pub paid: i64,
    pub rejected: i64,
    pub in_validation: i64,
    pub in_process: i64,
    pub settled: i64,
    pub waiting_uf: i64,
    /// Due installments not charged because their commerce has no acquirer for the rail
    /// (`ACQUIRER_NOT_CONFIGURED`, production only).
    pub acquirer_not_configured: i64,
}

impl From<RunRow> for RunDto {
    fn from(r: RunRow) -> Self {
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
}

/// A run of the list, with the number that opens it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunLineDto {
    /// The run's number: its page is `GET /charging/runs/{runId}`.
    pub run_id: i64,
    #[serde(flatten)]
    pub run: RunDto,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChargingOverview {
    /// Newest first, at most 50.
    pub runs: Vec<RunLineDto>,
    /// The run under way in this process: its date, done and total (for a progress bar).
    pub running: Option<ProgressDto>,
    /// The business date, and whether the sandbox clock may be moved.
    pub today: String,
    pub sandbox: bool,
    pub offset_days: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgressDto {
    pub date: String,
    pub done: i64,
    pub total: i64,
}

/// Charging runs, the one under way, and the business clock.
#[utoipa::path(get, path = "/charging", tag = "staff",
    responses(
        (status = 200, description = "CHARGING_OK", body = Envelope<ChargingOverview>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn overview(
    State(state): State<AppState>,
    _staff: Staff,
) -> ApiResult<Envelope<ChargingOverview>> {
    let rows = state.charging_runs(50)?;
    let progress = state.charger.progress();
    let runs = rows
        .into_iter()
        .map(|r| RunLineDto {
            run_id: r.seq,
            run: RunDto::from(r),
        })
        .collect();
    Ok(Envelope::ok(
        "CHARGING_OK",
        "charging runs",
        ChargingOverview {
            runs,
            running: progress.date.map(|d| ProgressDto {
                date: d.to_string(),
                done: progress.done,
                total: progress.total,
            }),
            today: state.today().to_string(),
            sandbox: state.config.environment.is_sandbox(),
            offset_days: state.calendar.offset_days(),
        },
    ))
}

/// The states a run's attempt can stand in, as the `state` filter writes them.
const ATTEMPT_STATES: &[&str] = &["PAID", "REJECTED", "IN_PROCESS", "IN_VALIDATION"];

#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RunAttemptsQuery {
    /// Only attempts standing in this state: PAID, REJECTED, IN_PROCESS or IN_VALIDATION.
    state: Option<String>,
    /// 1 to 200, default 100.
    #[param(minimum = 1, maximum = 200, default = 100)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

/// One installment a run charged, and how its charge stands now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunAttemptDto {
    /// The attempt (pay_...).
    pub attempt_id: String,
    /// The installment's attempt number (1 for its first charge).
    pub attempt: i64,
    /// PAID, REJECTED, IN_PROCESS or IN_VALIDATION (a bank debit awaiting its bank; it is
    /// settled on a later run).
    pub outcome: String,
    pub rejection_code: Option<String>,
    pub authorization_code: Option<String>,
    /// What was charged: pesos, for a UF installment too.
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
    /// The installment's own amount (UF for a UF installment).
    #[schema(value_type = f64)]
    pub installment_amount: serde_json::Number,
    pub installment_currency_id: String,
    /// The UF value of the run's date, for a UF installment.
    #[schema(value_type = Option<f64>)]
    pub uf_value: Option<serde_json::Number>,
    pub installment_internal_id: String,
    pub installment_id: String,
    /// The installment's state now.
    pub installment_state: StateDto,
    /// A REJECTED installment's next attempt, `YYYY-MM-DD`; null when none remains.
    pub next_retry_date: Option<String>,
    pub mandate_internal_id: String,
    pub mandate_id: String,
    pub mandate_name: String,
    pub customer_internal_id: String,
    pub customer_name: String,
    pub commerce: String,
    pub started_at: String,
    pub finished_at: Option<String>,
}

impl From<&RunAttempt> for RunAttemptDto {
    fn from(a: &RunAttempt) -> Self {
        let installment_state = InstallmentState::from_id(a.installment_state);
        RunAttemptDto {
            attempt_id: a.id.clone(),
            attempt: a.attempt_no,
            outcome: a.state.clone(),
            rejection_code: a.rejection_code.clone(),
            authorization_code: a.authorization_code.clone(),
            amount: stored_amount(&a.amount),
            currency_id: a.currency.clone(),
            installment_amount: stored_amount(&a.installment_amount),
            installment_currency_id: a.installment_currency.clone(),
            uf_value: a.uf_value.as_deref().map(stored_amount),
            installment_internal_id: a.installment_id.clone(),
            installment_id: a.installment_external_id.clone(),
            installment_state: StateDto {
                id: a.installment_state,
                name: installment_state.map_or("UNKNOWN", InstallmentState::name),
            },
            next_retry_date: a.next_retry_date.clone().filter(|_| {
                installment_state == Some(InstallmentState::Rejected) && a.retry_scheduled
            }),
            mandate_internal_id: a.mandate_id.clone(),
            mandate_id: a.mandate_external_id.clone(),
            mandate_name: a.mandate_name.clone(),
            customer_internal_id: a.customer_id.clone(),
            customer_name: a.customer_name.clone(),
            commerce: a.commerce_code.clone(),
            started_at: a.created_at.clone(),
            finished_at: a.finished_at.clone(),
        }
    }
}

/// How many of a run's attempts stand in each state now.
#[derive(Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOutcomesDto {
    pub paid: i64,
    pub rejected: i64,
    pub in_process: i64,
    pub in_validation: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDetailDto {
    /// The run with the counts it recorded (`waitingUf` and `acquirerNotConfigured` count
    /// due installments it did not charge, so they have no attempt below).
    pub run: RunLineDto,
    /// Its attempts by where they stand now (a bank debit IN_VALIDATION at the run may be
    /// PAID or REJECTED since).
    pub outcomes: RunOutcomesDto,
    /// In the order the run made them.
    pub attempts: Vec<RunAttemptDto>,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

/// One charging run: its counts and the installments it charged, with their outcomes.
#[utoipa::path(get, path = "/charging/runs/{runId}", tag = "staff",
    params(("runId" = i64, Path, description = "The run's number (`runId` of `GET /charging`)"),
        RunAttemptsQuery),
    responses(
        (status = 200, description = "CHARGING_RUN_DETAIL_OK", body = Envelope<RunDetailDto>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "CHARGING_RUN_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn run_detail(
    State(state): State<AppState>,
    _staff: Staff,
    Path(run_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<RunDetailDto>> {
    let seq = run_id
        .parse::<i64>()
        .map_err(|_| Error::not_found_at("charging run", "runId", &run_id))?;
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(100, 200, &mut errors);
    let after = params.seq_cursor(&mut errors);
    let wanted = params.get("state");
    if let Some(s) = &wanted
        && !ATTEMPT_STATES.contains(&s.as_str())
    {
        errors.push(
            "query.state",
            "INVALID_VALUE",
            format!("one of {}", ATTEMPT_STATES.join(", ")),
        );
    }
    errors.into_result()?;
    let page = RunAttemptsPage {
        state: wanted.as_deref(),
        after,
        limit: limit + 1,
    };
    let mut detail = state
        .charging_run(seq, &page)?
        .ok_or_else(|| Error::not_found_at("charging run", "runId", &run_id))?;
    let next_cursor = if detail.attempts.len() as i64 > limit {
        detail.attempts.truncate(limit as usize);
        detail.attempts.last().map(|a| a.seq.to_string())
    } else {
        None
    };
    let mut outcomes = RunOutcomesDto::default();
    for (state, count) in &detail.outcomes {
        match state.as_str() {
            "PAID" => outcomes.paid = *count,
            "REJECTED" => outcomes.rejected = *count,
            "IN_PROCESS" => outcomes.in_process = *count,
            "IN_VALIDATION" => outcomes.in_validation = *count,
            _ => {}
        }
    }
    Ok(Envelope::ok(
        "CHARGING_RUN_DETAIL_OK",
        "charging run",
        RunDetailDto {
            attempts: detail.attempts.iter().map(RunAttemptDto::from).collect(),
            run: RunLineDto {
                run_id: detail.run.seq,
                run: RunDto::from(detail.run),
            },
            outcomes,
            next_cursor,
        },
    ))
}

/// Run today's charging now (operator or admin): only what is due and not yet attempted today.
#[utoipa::path(post, path = "/charging/run", tag = "staff",
    responses(
        (status = 200, description = "CHARGING_RUN_OK", body = Envelope<RunSummaryDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn run_now(
    State(state): State<AppState>,
    staff: Staff,
) -> ApiResult<Envelope<RunSummaryDto>> {
    staff.require(Role::Operator)?;
    let summary = state.run_charging_now(staff.email()).await?;
    Ok(Envelope::ok(
        "CHARGING_RUN_OK",
        "charging run finished",
        RunSummaryDto::from(&summary),
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct UfImport {
    /// `date,value` lines (`2026-12-01,39123.45`); a header line, `;` with dots grouping
    /// thousands and a decimal comma, and dates day first are accepted too
    /// (`21-12-2026;39.740,55`). Every bad line is named at `csv.line[N].date` or `.value`.
    pub csv: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UfImported {
    pub imported: usize,
}

/// Import UF values (admin); every line must be valid or nothing is imported.
#[utoipa::path(post, path = "/uf", tag = "staff",
    request_body = UfImport,
    responses(
        (status = 200, description = "UF_IMPORT_OK", body = Envelope<UfImported>),
        (status = 400, description = "Every bad line, at csv.line[N].date or .value", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn import_uf(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<UfImport>,
) -> ApiResult<Envelope<UfImported>> {
    staff.require(Role::Admin)?;
    let csv = body
        .csv
        .ok_or_else(|| Error::validation("csv", "REQUIRED", "is required"))?;
    let values = mandato_core::domain::uf::parse_csv_all(&csv).map_err(uf_errors)?;
    state.import_uf(staff.email(), &values)?;
    Ok(Envelope::ok(
        "UF_IMPORT_OK",
        "UF values imported",
        UfImported {
            imported: values.len(),
        },
    ))
}

/// Every bad line of a UF file at `csv.line[N].date` or `.value` (N as a spreadsheet numbers
/// it, from 1), or `csv.line[N]` when the line as a whole is wrong, as a payout report's are.
fn uf_errors(errors: Vec<mandato_core::domain::uf::UfCsvError>) -> Error {
    use mandato_core::domain::uf::UfCsvError;
    let mut fields = mandato_core::error::FieldErrors::new();
    for e in errors {
        let code = match e {
            UfCsvError::Date { .. } => "INVALID_DATE",
            UfCsvError::Amount { .. } => "INVALID_AMOUNT",
            UfCsvError::Shape { .. } => "INVALID_FORMAT",
            UfCsvError::Unreadable { .. } => "INVALID_CSV",
            UfCsvError::Empty => "EMPTY",
        };
        let field = match (e.line(), e.column()) {
            (Some(line), Some(column)) => format!("csv.line[{line}].{column}"),
            (Some(line), None) => format!("csv.line[{line}]"),
            (None, _) => "csv".to_string(),
        };
        fields.push(field, code, e.to_string());
    }
    Error::Validation(fields.into_vec())
}

/// Sandbox: move the business clock forward (admin), running every crossed date.
#[utoipa::path(post, path = "/charging/clock", tag = "staff",
    request_body = crate::sandbox::AdvanceRequest,
    responses(
        (status = 200, description = "SANDBOX_CLOCK_OK", body = Envelope<crate::sandbox::ClockPayload>),
        (status = 400, description = "Not forward, or not exactly one of advanceTo and advanceDays", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ))]
pub async fn advance_clock(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<crate::sandbox::AdvanceRequest>,
) -> ApiResult<Envelope<crate::sandbox::ClockPayload>> {
    use crate::sandbox;
    sandbox::sandbox_only(&state)?;
    staff.require(Role::Admin)?;
    sandbox::follow_stored_clock(&state).await?;
    let target = sandbox::advance_target(&body, state.today())?;
    state.record_staff_action(staff.email(), "sandbox.clock", Some(&target.to_string()))?;
    let runs = sandbox::advance_business_clock(&state, target).await?;
    Ok(Envelope::ok(
        "SANDBOX_CLOCK_OK",
        "business clock advanced",
        sandbox::clock_payload(&state, Some(runs)),
    ))
}
