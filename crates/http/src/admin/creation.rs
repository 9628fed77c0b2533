//! What staff create for a commerce from the back office: a customer, a mandate. The bodies
//! are the merchant API's (`POST /api/v1/user`, `POST /api/v1/mandate`) with the commerce's
//! code beside them, checked by the merchant API's own validation and created by the same
//! engine operations: a rule holds the same whoever asks, and a refusal names the same paths.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use crate::json::Body;
use crate::mandates::MandateRequest;
use crate::users::{
    AddressIn, ContactsIn, CustomerIn, IdentificationDocumentIn, PersonalInformationIn,
    parse_customer,
};
use crate::wire::{CustomerDto, MandatePayload};
use mandato_core::domain::rut::Rut;
use mandato_core::error::{Error, FieldError, FieldErrors};
use mandato_engine::records::{Commerce, Role};
use std::sync::Arc;

/// The commerce a creation is for, by the `commerce` member: missing or unknown is named
/// there, beside the body's own problems.
fn commerce_of(
    state: &AppState,
    code: Option<&str>,
    errors: &mut FieldErrors,
) -> Result<Option<Arc<Commerce>>, Error> {
    match code.map(str::trim) {
        None | Some("") => {
            errors.missing("commerce");
            Ok(None)
        }
        Some(code) => match state.engine.staff_commerce(code) {
            Ok(commerce) => Ok(Some(commerce)),
            Err(Error::Validation(found)) => {
                for e in found {
                    errors.push(e.field, &e.code, e.message);
                }
                Ok(None)
            }
            Err(other) => Err(other),
        },
    }
}

/// The body's validation with the commerce's problems first: every bad field in one answer.
fn with_commerce_errors<T>(commerce: Vec<FieldError>, body: Result<T, Error>) -> Result<T, Error> {
    if commerce.is_empty() {
        return body;
    }
    let mut all = commerce;
    match body {
        Ok(_) => {}
        Err(Error::Validation(more)) => all.extend(more),
        Err(Error::Refused {
            name,
            field: Some(field),
            message,
        }) => all.push(FieldError::new(field, name, message)),
        Err(other) => return Err(other),
    }
    Err(Error::Validation(all))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct StaffCustomerRequest {
    /// The code of the commerce the customer is registered with.
    pub commerce: Option<String>,
    #[schema(value_type = StaffCustomerIn)]
    pub customer: Option<CustomerIn>,
}

/// The customer as `POST /api/v1/user` takes it, checked by the same rules; only `userId` may
/// be left out here: the RUT, normalised (`12345678-5`), is the customer's `userId` then.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct StaffCustomerIn {
    /// The merchant's id of the customer; unique per commerce. Default: the RUT.
    user_id: Option<String>,
    identification_document: IdentificationDocumentIn,
    personal_information: PersonalInformationIn,
    address: Option<AddressIn>,
    contacts: ContactsIn,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffCustomerCreated {
    pub commerce: String,
    pub customer: CustomerDto,
}

/// Register a new customer of a commerce (operator or admin), as the merchant's `POST /user`
/// does: the RUT with or without dots and dash, names, e-mail, phone and address under the
/// same rules and at the same paths (`customer.contacts.email`). A staff creation never
/// updates: a `userId` already registered is `DUPLICATED_USER_ID` (`DUPLICATED_RUT` when it
/// is that same RUT's), a RUT held by another customer `DUPLICATED_RUT`. Recorded in the staff
/// audit log (`customer.create`).
#[utoipa::path(post, path = "/customers", tag = "staff",
    request_body = StaffCustomerRequest,
    responses(
        (status = 201, description = "CUSTOMER_CREATED", body = Envelope<StaffCustomerCreated>),
        (status = 400, description = "Invalid field (`commerce`, `customer.*`: REQUIRED, INVALID_RUT, INVALID_EMAIL, INVALID_PHONE, TOO_LONG, INVALID_CHARACTERS, COMMERCE_NOT_FOUND), DUPLICATED_RUT or DUPLICATED_USER_ID at its field", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn create_customer(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<StaffCustomerRequest>,
) -> ApiResult<Envelope<StaffCustomerCreated>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let commerce = commerce_of(&state, body.commerce.as_deref(), &mut errors)?;
    let mut customer = body.customer;
    // Without a userId the customer is known to the merchant by its RUT.
    let mut defaulted = false;
    if let Some(c) = customer.as_mut()
        && c.user_id.as_deref().is_none_or(|id| id.trim().is_empty())
    {
        defaulted = true;
        c.user_id = c
            .identification_document
            .as_ref()
            .and_then(|d| d.number.as_deref())
            .and_then(|n| Rut::parse(n).ok())
            .map(|rut| rut.as_str().to_string());
    }
    let parsed = parse_customer(customer).map_err(|e| match e {
        // A userId left out is not the staff member's problem: the RUT's is named instead.
        Error::Validation(list) if defaulted => Error::Validation(
            list.into_iter()
                .filter(|f| f.field != "customer.userId")
                .collect(),
        ),
        other => other,
    });
    let input = with_commerce_errors(errors.into_vec(), parsed)?;
    let commerce = commerce.expect("validated");
    let code = commerce.code.clone();
    let row = state
        .engine
        .staff_create_customer(staff.email(), commerce, input)
        .await?;
    Ok(Envelope::created(
        "CUSTOMER_CREATED",
        "customer created",
        StaffCustomerCreated {
            commerce: code,
            customer: CustomerDto::from(&row),
        },
    ))
}

/// The staff body of a mandate: the merchant's `POST /mandate` body and the commerce's code.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StaffMandateRequest {
    /// The code of the commerce the mandate is created for; `customer` is one of its customers.
    pub commerce: Option<String>,
    #[serde(flatten)]
    pub request: MandateRequest,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffMandateCreated {
    pub commerce: String,
    /// As `POST /api/v1/mandate` answers it: `mandate.magicLink` is the customer's link.
    pub mandate: MandatePayload,
}

/// Create a mandate for a commerce's customer (operator or admin), as the merchant's
/// `POST /mandate` does: the same body (type DYNAMIC, PERMANENT, SUBSCRIPTION or ONEPAY, its
/// charges, installments in CLP or UF), the same rules, the same paths in a refusal. The
/// answer carries the Magic Link to hand to the customer. Recorded in the staff audit log
/// (`mandate.create`).
#[utoipa::path(post, path = "/mandates", tag = "staff",
    request_body = StaffMandateRequest,
    responses(
        (status = 201, description = "MANDATE_CREATED", body = Envelope<StaffMandateCreated>),
        (status = 400, description = "Invalid field (as POST /api/v1/mandate, and `commerce`: REQUIRED, COMMERCE_NOT_FOUND), USER_NOT_FOUND, DUPLICATED_MANDATE_ID, WEBHOOK_URL_NOT_ALLOWED", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
    ))]
pub async fn create_mandate(
    State(state): State<AppState>,
    staff: Staff,
    Body(body): Body<serde_json::Value>,
) -> ApiResult<Envelope<StaffMandateCreated>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let code = match body.get("commerce") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(code)) => Some(code.clone()),
        Some(_) => {
            errors.push("commerce", "INVALID_TYPE", "must be a commerce code");
            Some(String::new())
        }
    };
    let commerce = if errors.is_empty() {
        commerce_of(&state, code.as_deref(), &mut errors)?
    } else {
        None
    };
    // The merchant's validation reads the body as the merchant sends it (`commerce` is an
    // unknown member there, and ignored).
    let bytes = serde_json::to_vec(&body).map_err(|e| Error::Internal(e.into()))?;
    let command = crate::mandates::validate_request(&bytes, state.today());
    let command = with_commerce_errors(errors.into_vec(), command)?;
    crate::mandates::check_webhook_destinations(&state, &command)?;
    let commerce = commerce.expect("validated");
    let code = commerce.code.clone();
    let view = state
        .engine
        .staff_create_mandate(staff.email(), commerce, command)
        .await?;
    Ok(Envelope::created(
        "MANDATE_CREATED",
        "mandate created",
        StaffMandateCreated {
            commerce: code,
            mandate: MandatePayload::new(view, &state.public_base_url),
        },
    ))
}
