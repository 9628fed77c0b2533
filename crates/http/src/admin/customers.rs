//! Customers for staff: search across commerces by name, RUT or userId, and one customer with
//! their mandates.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::mandates::MandateLineDto;
use super::paging::Params;
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::wire::CustomerDto;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::records::{CustomerColumn, CustomerFilter, Keyset};

/// The orders of the customers list, as the `sort` parameter writes them.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub enum CustomerSort {
    #[serde(rename = "createdAt.desc")]
    CreatedAtDesc,
    #[serde(rename = "createdAt.asc")]
    CreatedAtAsc,
    #[serde(rename = "name.asc")]
    NameAsc,
    #[serde(rename = "name.desc")]
    NameDesc,
}

/// The orders of the customers list: wire name, store column.
pub const CUSTOMER_SORTS: &[(&str, CustomerColumn)] = &[
    ("createdAt", CustomerColumn::CreatedAt),
    ("name", CustomerColumn::LastName),
];

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct CustomersQuery {
    /// Words of a name (any part, any order; accents and case are ignored), a RUT or part of
    /// one (with or without dots and dash), a userId or part of one, an internalUserId
    /// (usr_...) or an e-mail. A text of fewer than three characters matches the start of a
    /// userId or RUT, or any part of a name.
    q: Option<String>,
    /// The order (default `createdAt.desc`; `name` is the last name, case ignored); a cursor
    /// continues the order it was given in.
    #[param(inline)]
    sort: Option<CustomerSort>,
    /// Only this commerce (its code).
    commerce: Option<String>,
    /// 1 to 200, default 50.
    #[param(minimum = 1, maximum = 200, default = 50)]
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
    /// How many customers the filters select, every page together.
    pub total: i64,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

/// Customers of every commerce, newest first or in the order asked, and how many there are.
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
    let sort = params.sort(CUSTOMER_SORTS, &mut errors);
    let filter = CustomerFilter {
        text: params.get("q"),
        commerce_id: params.commerce_id(&state, &mut errors),
        sort,
        after: params.sorted_keyset(&sort, CustomerColumn::CreatedAt, &mut errors),
        limit: limit + 1,
    };
    errors.into_result()?;
    let (mut rows, total) = state.customers_page(filter)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| {
            Keyset {
                key: sort.column.key_of(&r.customer),
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
        CustomersPage {
            items,
            total,
            next_cursor,
        },
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
    let (customer, commerce, mandates) = state
        .customer_detail(&id)?
        .ok_or(Error::not_found("customer"))?;
    let detail = CustomerDetail {
        customer: CustomerDto::from(&customer),
        commerce,
        mandates: mandates.iter().map(MandateLineDto::from).collect(),
    };
    Ok(Envelope::ok("CUSTOMER_OK", "customer", detail))
}
