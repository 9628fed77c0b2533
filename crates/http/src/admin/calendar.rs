//! The business-day calendar for staff (Settings): a year's holidays, one-off holidays added
//! and removed (admin), and each commerce's charging rule (admin). Every change is recorded in
//! the staff audit log in its own transaction.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use mandato_core::domain::holidays::{
    ChargingRule, FIRST_YEAR, Holiday, HolidayCalendar, HolidayYear, LAST_YEAR,
};
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::records::Role;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct StaffHolidaysQuery {
    /// The calendar year.
    #[param(minimum = 2008, maximum = 2999)]
    year: i32,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffHolidayDto {
    #[schema(format = Date)]
    pub date: String,
    pub name: String,
    /// Added by staff (and so removable); false for the computed ones.
    pub added: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffHolidaysPayload {
    pub year: i32,
    pub holidays: Vec<StaffHolidayDto>,
}

fn year_of(query: &HashMap<String, String>) -> Result<HolidayYear, Error> {
    let text = query
        .get("year")
        .ok_or_else(|| Error::validation("query.year", "REQUIRED", "a year is required"))?;
    HolidayYear::parse(text).map_err(|_| {
        Error::validation(
            "query.year",
            "OUT_OF_RANGE",
            format!("a year from {FIRST_YEAR} to {LAST_YEAR}"),
        )
    })
}

/// A year's holidays: the computed ones, 31 December (banks) and the added ones, by date.
#[utoipa::path(get, path = "/calendar/holidays", tag = "staff",
    params(StaffHolidaysQuery),
    responses(
        (status = 200, description = "HOLIDAYS_OK", body = Envelope<StaffHolidaysPayload>),
        (status = 400, description = "VALIDATION_ERROR at `query.year`", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list_holidays(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<StaffHolidaysPayload>> {
    let year = year_of(&query)?;
    let added = state.added_holidays()?;
    let added_days: Vec<Holiday> = added.clone();
    let holidays = HolidayCalendar::new(added)
        .holidays(year)
        .into_iter()
        .map(|h| StaffHolidayDto {
            added: added_days.contains(&h),
            date: h.date.to_string(),
            name: h.name,
        })
        .collect();
    Ok(Envelope::ok(
        "HOLIDAYS_OK",
        "holidays of the year",
        StaffHolidaysPayload {
            year: year.get(),
            holidays,
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewHolidayRequest {
    /// A day of the years 2008 to 2999, YYYY-MM-DD.
    #[schema(format = Date)]
    pub date: Option<String>,
    /// 1 to 100 characters, as lists show it.
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
}

/// Adds a one-off holiday (admin): no charge is made and no bank debit settles on it.
#[utoipa::path(post, path = "/calendar/holidays", tag = "staff",
    request_body = NewHolidayRequest,
    responses(
        (status = 201, description = "HOLIDAY_ADDED", body = Envelope<StaffHolidayDto>),
        (status = 400, description = "VALIDATION_ERROR naming `date` and `name`, or HOLIDAY_EXISTS", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn add_holiday(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<NewHolidayRequest>,
) -> ApiResult<Envelope<StaffHolidayDto>> {
    staff.require(Role::Admin)?;
    let holiday = Holiday::added(
        body.date.as_deref().unwrap_or_default(),
        body.name.as_deref().unwrap_or_default(),
    )
    .map_err(|errors| {
        let mut fields = FieldErrors::new();
        for e in errors {
            fields.push(e.field(), e.code(), e.to_string());
        }
        fields.into_result().expect_err("at least one error")
    })?;
    state.add_holiday(staff.email(), &holiday)?;
    Ok(Envelope::created(
        "HOLIDAY_ADDED",
        "holiday added",
        StaffHolidayDto {
            date: holiday.date.to_string(),
            name: holiday.name,
            added: true,
        },
    ))
}

/// Removes a holiday staff added (admin); the computed ones cannot be removed.
#[utoipa::path(delete, path = "/calendar/holidays/{date}", tag = "staff",
    params(("date" = String, Path, format = Date)),
    responses(
        (status = 200, description = "HOLIDAY_REMOVED", body = Envelope<StaffHolidayDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "HOLIDAY_NOT_FOUND: no holiday was added that day", body = ErrorBody),
    ))]
pub async fn remove_holiday(
    State(state): State<AppState>,
    staff: Staff,
    Path(date): Path<String>,
) -> ApiResult<Envelope<StaffHolidayDto>> {
    staff.require(Role::Admin)?;
    let day = mandato_core::domain::date::Date::parse(&date)
        .map_err(|_| Error::not_found("holiday"))?
        .naive();
    let name = state.remove_holiday(staff.email(), day)?;
    Ok(Envelope::ok(
        "HOLIDAY_REMOVED",
        "holiday removed",
        StaffHolidayDto {
            date: day.to_string(),
            name,
            added: false,
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChargingRuleRequest {
    /// Where a charge due on a weekend or holiday goes: `NEXT` business day (the default) or
    /// `PREVIOUS`.
    pub charging_rule: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChargingRuleDto {
    /// `NEXT` or `PREVIOUS`.
    pub charging_rule: &'static str,
}

/// Sets a commerce's charging rule (admin).
#[utoipa::path(put, path = "/commerces/{code}/charging-rule", tag = "staff",
    params(("code" = String, Path)),
    request_body = ChargingRuleRequest,
    responses(
        (status = 200, description = "CHARGING_RULE_OK", body = Envelope<ChargingRuleDto>),
        (status = 400, description = "VALIDATION_ERROR at `chargingRule`", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "COMMERCE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn set_charging_rule(
    State(state): State<AppState>,
    staff: Staff,
    Path(code): Path<String>,
    Body(body): Body<ChargingRuleRequest>,
) -> ApiResult<Envelope<ChargingRuleDto>> {
    staff.require(Role::Admin)?;
    let rule = body
        .charging_rule
        .as_deref()
        .and_then(ChargingRule::parse)
        .ok_or_else(|| Error::validation("chargingRule", "INVALID_VALUE", "NEXT or PREVIOUS"))?;
    state.set_charging_rule(staff.email(), &code, rule)?;
    Ok(Envelope::ok(
        "CHARGING_RULE_OK",
        "charging rule saved",
        ChargingRuleDto {
            charging_rule: rule.as_str(),
        },
    ))
}
