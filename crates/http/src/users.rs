//! `POST /user`: register or update a customer.

use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::ApiResult;
use super::json::HashedBody;
use super::replay::{self, Created};
use super::wire::CustomerDto;
use mandato_core::domain::contact::Email;
use mandato_core::domain::external_id::ExternalId;
use mandato_core::domain::rut::Rut;
use mandato_core::domain::text;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::records::{Creation, CustomerInput, Upserted};

#[derive(Debug, Deserialize, ToSchema)]
pub struct UserRequest {
    pub customer: Option<CustomerIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerIn {
    /// The merchant's id of the customer; unique per commerce.
    pub user_id: Option<String>,
    pub identification_document: Option<IdentificationDocumentIn>,
    pub personal_information: Option<PersonalInformationIn>,
    pub address: Option<AddressIn>,
    pub contacts: Option<ContactsIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct IdentificationDocumentIn {
    /// `RUT`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The RUT, with or without dots and dash (`12.345.678-5`).
    pub number: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonalInformationIn {
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub second_last_name: Option<String>,
}

#[derive(Debug, Deserialize, serde::Serialize, ToSchema)]
pub struct AddressIn {
    pub street: Option<String>,
    pub number: Option<String>,
    pub apartment: Option<String>,
    pub commune: Option<String>,
    pub city: Option<String>,
    pub region: Option<String>,
    pub country: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ContactsIn {
    pub email: Option<String>,
    pub phone: Option<String>,
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct UserPayload {
    pub customer: CustomerDto,
}

/// Register a customer, or update it when the same `userId` comes again with the same RUT.
///
/// The same request again (JSON compared canonically) is answered as it was the last time,
/// with `Mandato-Replayed: true`, and changes nothing.
#[utoipa::path(post, path = "/user", tag = "customers",
    params(super::common::CommonHeaders),
    request_body = UserRequest,
    responses(
        (status = 201, description = "USER_CREATE_OK", body = Envelope<UserPayload>,
            headers(("Mandato-Replayed" = String, description = "`true` when this answer repeats the one given to an earlier equal request for the same merchant id; absent otherwise"))),
        (status = 200, description = "USER_UPDATE_OK", body = Envelope<UserPayload>,
            headers(("Mandato-Replayed" = String, description = "`true` when this answer repeats the one given to an earlier equal request for the same merchant id; absent otherwise"))),
        (status = 400, description = "Invalid field, or userId/RUT held by another customer", body = super::error::ErrorBody),
        (status = 403, description = "Credentials refused", body = super::error::ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn create_user(
    State(state): State<AppState>,
    authed: Authed,
    HashedBody(body, sha256): HashedBody<UserRequest>,
) -> ApiResult<Created> {
    let user_id = body.customer.as_ref().and_then(|c| c.user_id.clone());
    let request = replay::request(Creation::User, user_id, sha256);
    let input = match parse_customer(body.customer) {
        Ok(input) => input,
        Err(refused) => {
            return replay::earlier_or(&state, &authed.commerce, request.as_ref(), refused);
        }
    };
    replay::create(&state, authed.commerce, request, move |tx, ctx| {
        let upserted = mandato_engine::operations::customers::register(tx, ctx, &input)?;
        Ok(match upserted {
            Upserted::Created(row) => Envelope::created(
                "USER_CREATE_OK",
                "customer created",
                UserPayload {
                    customer: CustomerDto::from(&row),
                },
            ),
            Upserted::Updated(row) => Envelope::ok(
                "USER_UPDATE_OK",
                "customer updated",
                UserPayload {
                    customer: CustomerDto::from(&row),
                },
            ),
        })
    })
    .await
}

/// A required, non-blank text of at most `max` characters, shown to people as it is
/// (`domain::text`: no control, text-direction or invisible characters).
pub fn required_text(
    value: Option<&String>,
    field: &str,
    max: usize,
    errors: &mut FieldErrors,
) -> Option<String> {
    match value.map(|v| v.trim()) {
        None | Some("") => {
            errors.missing(field);
            None
        }
        Some(v) => shown_text(v, field, max, errors),
    }
}

/// An optional text: blank counts as absent. Otherwise as [`required_text`].
pub fn optional_text(
    value: Option<&String>,
    field: &str,
    max: usize,
    errors: &mut FieldErrors,
) -> Option<String> {
    match value.map(|v| v.trim()) {
        None | Some("") => None,
        Some(v) => shown_text(v, field, max, errors),
    }
}

/// A trimmed, non-blank text: at most `max` characters, none of them refused by
/// `domain::text`. Both problems are reported when both are there.
pub fn shown_text(text: &str, field: &str, max: usize, errors: &mut FieldErrors) -> Option<String> {
    let mut ok = true;
    if text.chars().count() > max {
        errors.push(field, "TOO_LONG", format!("at most {max} characters"));
        ok = false;
    }
    if let Err(refused) = text::check_shown_text(text) {
        errors.push(field, text::INVALID_CHARACTERS, refused.to_string());
        ok = false;
    }
    ok.then(|| text.to_string())
}

pub fn external_id(
    value: Option<&String>,
    field: &str,
    errors: &mut FieldErrors,
) -> Option<ExternalId> {
    match value {
        None => {
            errors.missing(field);
            None
        }
        Some(v) => match ExternalId::parse(v) {
            Ok(id) => Some(id),
            Err(_) => {
                errors.push(
                    field,
                    "INVALID_ID",
                    "1 to 64 characters of letters, digits, '-', '_' or '.'",
                );
                None
            }
        },
    }
}

/// The validation of `POST /user`'s `customer`, every problem at its path; the staff API's
/// customer creation takes the same member and checks it here too.
pub(crate) fn parse_customer(customer: Option<CustomerIn>) -> Result<CustomerInput, Error> {
    let mut errors = FieldErrors::new();
    let Some(c) = customer else {
        errors.missing("customer");
        return Err(Error::Validation(errors.into_vec()));
    };
    let user_id = external_id(c.user_id.as_ref(), "customer.userId", &mut errors);
    let rut = match &c.identification_document {
        None => {
            errors.missing("customer.identificationDocument");
            None
        }
        Some(doc) => {
            if let Some(kind) = &doc.kind
                && kind != "RUT"
            {
                errors.push(
                    "customer.identificationDocument.type",
                    "INVALID_VALUE",
                    "must be RUT",
                );
            }
            match &doc.number {
                None => {
                    errors.missing("customer.identificationDocument.number");
                    None
                }
                Some(n) => match Rut::parse(n) {
                    Ok(rut) => Some(rut),
                    Err(e) => {
                        errors.push(
                            "customer.identificationDocument.number",
                            "INVALID_RUT",
                            e.to_string(),
                        );
                        None
                    }
                },
            }
        }
    };
    let (first, last, second) = match &c.personal_information {
        None => {
            errors.missing("customer.personalInformation");
            (None, None, None)
        }
        Some(p) => (
            required_text(
                p.first_name.as_ref(),
                "customer.personalInformation.firstName",
                100,
                &mut errors,
            ),
            required_text(
                p.last_name.as_ref(),
                "customer.personalInformation.lastName",
                100,
                &mut errors,
            ),
            optional_text(
                p.second_last_name.as_ref(),
                "customer.personalInformation.secondLastName",
                100,
                &mut errors,
            ),
        ),
    };
    let (email, phone) = match &c.contacts {
        None => {
            errors.missing("customer.contacts");
            (None, None)
        }
        Some(contacts) => {
            let email = match &contacts.email {
                None => {
                    errors.missing("customer.contacts.email");
                    None
                }
                Some(e) => match Email::parse(e) {
                    Ok(email) => Some(email),
                    Err(_) => {
                        errors.push(
                            "customer.contacts.email",
                            "INVALID_EMAIL",
                            "not a valid e-mail address",
                        );
                        None
                    }
                },
            };
            let phone = optional_text(
                contacts.phone.as_ref(),
                "customer.contacts.phone",
                32,
                &mut errors,
            );
            if let Some(p) = &phone
                && !p
                    .chars()
                    .all(|ch| ch.is_ascii_digit() || " +-()".contains(ch))
            {
                errors.push(
                    "customer.contacts.phone",
                    "INVALID_PHONE",
                    "digits, spaces, '+', '-' and parentheses only",
                );
            }
            (email, phone)
        }
    };
    let address = c.address.as_ref().map(|a| {
        for (name, value) in [
            ("street", &a.street),
            ("number", &a.number),
            ("apartment", &a.apartment),
            ("commune", &a.commune),
            ("city", &a.city),
            ("region", &a.region),
            ("country", &a.country),
        ] {
            optional_text(
                value.as_ref(),
                &format!("customer.address.{name}"),
                200,
                &mut errors,
            );
        }
        serde_json::json!({
            "street": a.street, "number": a.number, "apartment": a.apartment,
            "commune": a.commune, "city": a.city, "region": a.region, "country": a.country,
        })
    });
    errors.into_result()?;
    Ok(CustomerInput {
        user_id: user_id.expect("validated"),
        rut: rut.expect("validated"),
        first_name: first.expect("validated"),
        last_name: last.expect("validated"),
        second_last_name: second,
        address,
        email: email.expect("validated"),
        phone,
    })
}
