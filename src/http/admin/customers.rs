//! Customers for staff: search across commerces by name, RUT or userId, and one customer with
//! their mandates.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::mandates::MandateLineDto;
use super::paging::Params;
use super::session::Staff;
use crate::error::{Error, FieldErrors};
use crate::http::AppState;
use crate::http::envelope::Envelope;
use crate::http::error::{ApiResult, ErrorBody};
use crate::http::wire::CustomerDto;
use crate::store::staff_views::{self as views, CustomerFilter, Keyset};

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct CustomersQuery {
    /// A name (or part of one), a RUT (with or without dots; a prefix finds too), a userId,
    /// an internalUserId (usr_...) or the start of an e-mail.
    q: Option<String>,
    /// Only this commerce (its code).
    commerce: Option<String>,
    /// 1 to 200, default 50.
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerLineDto {
    pub customer: CustomerDto,
    pub commerce: String,
    /// How many mandates the customer has.
    pub mandates: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomersPage {
    pub items: Vec<CustomerLineDto>,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

/// Customers of every commerce, newest first.
#[utoipa::path(get, path = "/customers", tag = "staff", params(CustomersQuery),
    responses(
        (status = 200, description = "CUSTOMERS_OK", body = Envelope<CustomersPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<CustomersPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 200, &mut errors);
    let filter = CustomerFilter {
        text: params.get("q"),
        commerce_id: params.commerce_id(&state, &mut errors),
        before: params.keyset(&mut errors),
        limit: limit + 1,
    };
    errors.into_result()?;
    let mut rows = state
        .store
        .read(|c| Ok(views::search_customers(c, &filter)?))?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| {
            Keyset {
                created_at: r.customer.created_at.clone(),
                seq: r.customer.seq,
            }
            .encode()
        })
    } else {
        None
    };
    let items = rows
        .iter()
        .map(|r| CustomerLineDto {
            customer: CustomerDto::from(&r.customer),
            commerce: r.commerce_code.clone(),
            mandates: r.mandates,
        })
        .collect();
    Ok(Envelope::ok(
        "CUSTOMERS_OK",
        "customers",
        CustomersPage { items, next_cursor },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerDetail {
    pub customer: CustomerDto,
    pub commerce: String,
    /// Newest first.
    pub mandates: Vec<MandateLineDto>,
}

/// One customer and every mandate of theirs.
#[utoipa::path(get, path = "/customers/{internalUserId}", tag = "staff",
    params(("internalUserId" = String, Path, description = "usr_...")),
    responses(
        (status = 200, description = "CUSTOMER_OK", body = Envelope<CustomerDetail>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "CUSTOMER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn detail(
    State(state): State<AppState>,
    _staff: Staff,
    Path(id): Path<String>,
) -> ApiResult<Envelope<CustomerDetail>> {
    let detail = state.store.read(|c| {
        let (customer, commerce) =
            views::customer_by_id(c, &id)?.ok_or(Error::not_found("customer"))?;
        let mandates = views::mandates_of_customer(c, customer.seq)?;
        Ok(CustomerDetail {
            customer: CustomerDto::from(&customer),
            commerce,
            mandates: mandates.iter().map(MandateLineDto::from).collect(),
        })
    })?;
    Ok(Envelope::ok("CUSTOMER_OK", "customer", detail))
}
