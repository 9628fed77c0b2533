//! `GET /calendar/holidays?year=Y`: the year's holidays, national and added, that charging
//! follows.

use std::collections::HashMap;

use axum::extract::{Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use mandato_core::domain::holidays::{FIRST_YEAR, Holiday, HolidayYear, LAST_YEAR};
use mandato_core::error::Error;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct HolidaysQuery {
    /// The calendar year.
    #[param(minimum = 2008, maximum = 2999)]
    year: i32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HolidayDto {
    #[schema(format = Date)]
    pub date: String,
    pub name: String,
}

impl From<Holiday> for HolidayDto {
    fn from(h: Holiday) -> Self {
        HolidayDto {
            date: h.date.to_string(),
            name: h.name,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HolidaysPayload {
    pub year: i32,
    /// By date: the national holidays, 31 December (banks) and the days staff added.
    pub holidays: Vec<HolidayDto>,
}

/// The year's list, as the API and the CLI show it.
pub fn holidays_payload(
    calendar: &mandato_core::domain::holidays::HolidayCalendar,
    year: HolidayYear,
) -> HolidaysPayload {
    HolidaysPayload {
        year: year.get(),
        holidays: calendar
            .holidays(year)
            .into_iter()
            .map(HolidayDto::from)
            .collect(),
    }
}

/// The holidays of a year: no charge is made and no bank debit settles on them (nor on
/// weekends); an installment due on one is charged on the commerce's `chargeDate`.
#[utoipa::path(get, path = "/calendar/holidays", tag = "calendar",
    params(super::common::CommonHeaders, HolidaysQuery),
    responses(
        (status = 200, description = "HOLIDAYS_OK", body = Envelope<HolidaysPayload>),
        (status = 400, description = "Invalid common headers, or VALIDATION_ERROR at `query.year` (missing, or not a year from 2008 to 2999)", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn list_holidays(
    State(state): State<AppState>,
    _authed: Authed,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<HolidaysPayload>> {
    let year = match query.get("year") {
        None => {
            return Err(Error::validation("query.year", "REQUIRED", "a year is required").into());
        }
        Some(text) => HolidayYear::parse(text).map_err(|_| {
            Error::validation(
                "query.year",
                "OUT_OF_RANGE",
                format!("a year from {FIRST_YEAR} to {LAST_YEAR}"),
            )
        })?,
    };
    // The Chilean calendar whatever the installation charges on: this is the list of holidays.
    let added = state.added_holidays()?;
    let calendar = mandato_core::domain::holidays::HolidayCalendar::new(added);
    Ok(Envelope::ok(
        "HOLIDAYS_OK",
        "holidays of the year",
        holidays_payload(&calendar, year),
    ))
}
