//! Charging for staff: the runs with their counts and the progress of the one under way, a run
//! now, the sandbox clock, and the UF table.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use crate::sandbox::RunSummaryDto;
use mandato_core::error::Error;
use mandato_engine::records::Role;

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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChargingOverview {
    /// Newest first, at most 50.
    pub runs: Vec<RunDto>,
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
        .map(|r| RunDto {
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
