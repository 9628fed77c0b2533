//! Query-string parsing shared by the staff lists: page size, cursors, commerce codes, dates.
//! Every problem is collected into the request's `FieldErrors` at its `query.<name>` path.

use std::collections::HashMap;

use chrono::{NaiveDate, TimeZone};
use rust_decimal::Decimal;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;
use mandato_core::clock::timestamp;
use mandato_core::error::FieldErrors;
use mandato_engine::records::{Keyset, Sort};

/// The query string of a list, with empty values treated as absent.
pub struct Params(pub HashMap<String, String>);

impl Params {
    pub fn get(&self, name: &str) -> Option<String> {
        self.0
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }

    /// Page size: 1 to `max`, `default` when absent.
    pub fn limit(&self, default: i64, max: i64, errors: &mut FieldErrors) -> i64 {
        match self.get("limit").map(|l| l.parse::<i64>()) {
            None => default,
            Some(Ok(n)) if (1..=max).contains(&n) => n,
            Some(_) => {
                errors.push("query.limit", "OUT_OF_RANGE", format!("1 to {max}"));
                default
            }
        }
    }

    pub fn keyset(&self, errors: &mut FieldErrors) -> Option<Keyset> {
        let text = self.get("cursor")?;
        let keyset = Keyset::decode(&text);
        if keyset.is_none() {
            errors.push(
                "query.cursor",
                "INVALID_CURSOR",
                "pass nextCursor unchanged",
            );
        }
        keyset
    }

    /// The `sort` parameter: `<column>.asc` or `<column>.desc` for one of `columns` (wire name,
    /// store column); the list's default order when absent.
    pub fn sort<C: Copy + Default>(
        &self,
        columns: &[(&str, C)],
        errors: &mut FieldErrors,
    ) -> Sort<C> {
        let Some(text) = self.get("sort") else {
            return Sort::default();
        };
        let parsed = text.rsplit_once('.').and_then(|(name, direction)| {
            let column = columns.iter().find(|(n, _)| *n == name)?.1;
            let descending = match direction {
                "asc" => false,
                "desc" => true,
                _ => return None,
            };
            Some(Sort { column, descending })
        });
        parsed.unwrap_or_else(|| {
            errors.push(
                "query.sort",
                "INVALID_VALUE",
                sort_values(columns).join(", "),
            );
            Sort::default()
        })
    }

    /// The cursor of a list sorted by `sort`: a creation-time order takes only cursors whose
    /// key is a timestamp, as its pages write them.
    pub fn sorted_keyset<C: PartialEq>(
        &self,
        sort: &Sort<C>,
        by_time: C,
        errors: &mut FieldErrors,
    ) -> Option<Keyset> {
        let keyset = self.keyset(errors)?;
        if sort.column == by_time && chrono::DateTime::parse_from_rfc3339(&keyset.key).is_err() {
            errors.push(
                "query.cursor",
                "INVALID_CURSOR",
                "pass nextCursor unchanged, with the sort it came from",
            );
            return None;
        }
        Some(keyset)
    }

    /// A numeric cursor (the `seq` of the last row shown).
    pub fn seq_cursor(&self, errors: &mut FieldErrors) -> Option<i64> {
        let text = self.get("cursor")?;
        match text.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                errors.push(
                    "query.cursor",
                    "INVALID_CURSOR",
                    "pass nextCursor unchanged",
                );
                None
            }
        }
    }

    /// A commerce code, resolved to its id; an unknown code is a field error.
    pub fn commerce_id(&self, state: &AppState, errors: &mut FieldErrors) -> Option<i64> {
        let code = self.get("commerce")?;
        let found = state.commerce_by_code(&code).ok().flatten();
        if found.is_none() {
            errors.push(
                "query.commerce",
                "COMMERCE_NOT_FOUND",
                format!("no commerce with code {code}"),
            );
        }
        found.map(|c| c.id)
    }

    /// A date (`YYYY-MM-DD`, the start of that day in the environment's time zone) or an
    /// RFC 3339 instant, as a stored timestamp. `end` makes a date mean the start of the next
    /// day, so that `to=2026-11-30` includes the 30th.
    pub fn instant(
        &self,
        name: &str,
        end: bool,
        state: &AppState,
        errors: &mut FieldErrors,
    ) -> Option<String> {
        let text = self.get(name)?;
        if let Ok(at) = chrono::DateTime::parse_from_rfc3339(&text) {
            return Some(timestamp(at.with_timezone(&chrono::Utc)));
        }
        match NaiveDate::parse_from_str(&text, "%Y-%m-%d") {
            Ok(date) => {
                let date = if end { date.succ_opt()? } else { date };
                let local = date.and_hms_opt(0, 0, 0)?;
                let at = state
                    .calendar
                    .time_zone()
                    .from_local_datetime(&local)
                    .earliest()?;
                Some(timestamp(at.with_timezone(&chrono::Utc)))
            }
            Err(_) => {
                errors.push(
                    format!("query.{name}"),
                    "INVALID_DATE",
                    "a date YYYY-MM-DD or an RFC 3339 date-time",
                );
                None
            }
        }
    }

    /// A comma-separated list of wire names or ids, each turned into an id by `lookup`.
    pub fn ids(
        &self,
        name: &str,
        lookup: impl Fn(&str) -> Option<i64>,
        expected: &str,
        errors: &mut FieldErrors,
    ) -> Vec<i64> {
        let Some(text) = self.get(name) else {
            return Vec::new();
        };
        let mut ids = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match lookup(part) {
                Some(id) => ids.push(id),
                None => {
                    errors.push(
                        format!("query.{name}"),
                        "INVALID_VALUE",
                        format!("{part} is not one of {expected}"),
                    );
                }
            }
        }
        ids
    }
}

/// Every value the `sort` parameter of a list accepts.
pub fn sort_values<C>(columns: &[(&str, C)]) -> Vec<String> {
    columns
        .iter()
        .flat_map(|(name, _)| [format!("{name}.asc"), format!("{name}.desc")])
        .collect()
}

/// An amount in a currency, the way the API writes amounts (a JSON number, shortest form).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoneyDto {
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
}

impl MoneyDto {
    pub fn new(amount: Decimal, currency: &str) -> MoneyDto {
        MoneyDto {
            amount: decimal_number(amount),
            currency_id: currency.to_string(),
        }
    }
}

/// A stored decimal as a JSON number in its shortest form.
pub fn decimal_number(amount: Decimal) -> serde_json::Number {
    use std::str::FromStr;
    serde_json::Number::from_str(&amount.normalize().to_string())
        .unwrap_or_else(|_| serde_json::Number::from(0u8))
}

/// A stored amount (TEXT) as a JSON number; unreadable text counts as 0.
pub fn stored_amount(text: &str) -> serde_json::Number {
    use std::str::FromStr;
    decimal_number(Decimal::from_str(text).unwrap_or_default())
}
