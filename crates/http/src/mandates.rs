//! Mandates: create, look up (by either id, and the ONEPAY confirm form), cancel.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::fields;
use super::json::{HashedBody, parse};
use super::replay::{self, Created};
use super::users::{external_id, optional_text, required_text, shown_text};
use super::wire::MandatePayload;
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::date::{DATE_OUT_OF_RANGE, Date};
use mandato_core::domain::mandate::{Charges, SubscriptionEnd};
use mandato_core::domain::schedule::{Periodicity, ScheduleError};
use mandato_core::domain::state::{MandateType, PaymentMethod};
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::operations::installments::check_against_charges;
use mandato_engine::operations::mandates::{self, CreateMandate, MagicLinkPolicy, Urls};
use mandato_engine::operations::signed_activation;
use mandato_engine::operations::{CustomerRef, MandateRef};
use mandato_engine::records::{Creation, NewInstallment};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateRequest {
    /// Exactly one of `userId` and `internalUserId`.
    pub customer: Option<CustomerRefIn>,
    pub mandate: Option<MandateIn>,
    /// Subset of 3, 4, 11, 5, 6, 14; omitted: the commerce's enabled methods.
    pub payment_methods: Option<Vec<i64>>,
    /// DYNAMIC: any number; ONEPAY: at most one, for the total; others: none.
    pub installments: Option<Vec<InstallmentIn>>,
    /// Merchant-owned JSON object, returned as sent.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub urls: Option<UrlsIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerRefIn {
    pub user_id: Option<String>,
    pub internal_user_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateIn {
    /// The merchant's mandate id, unique per commerce.
    pub id: Option<String>,
    /// DYNAMIC, PERMANENT, SUBSCRIPTION or ONEPAY.
    #[serde(rename = "type")]
    pub mandate_type: Option<String>,
    pub name: Option<String>,
    pub detail: Option<String>,
    pub charges: Option<ChargesIn>,
    /// ONEPAY: defaults to true (the mandate finishes once paid).
    pub terminate_when_charged: Option<bool>,
    /// `DIRECT` (enrolling the instrument activates) or `SIGNATURE` (the customer then signs
    /// the mandate document; its completion activates); absent: the commerce's default.
    pub activation: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChargesIn {
    pub currency_id: Option<String>,
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub amount: Option<serde_json::Number>,
    /// WEEKLY, MONTHLY, BIMONTHLY, QUARTERLY, SEMIANNUAL, ANNUAL.
    pub periodicity: Option<String>,
    pub start_date: Option<String>,
    #[serde(default, deserialize_with = "fields::json_integer")]
    pub count: Option<i64>,
    /// Inclusive.
    pub end_date: Option<String>,
    /// ONEPAY; defaults to today.
    pub due_date: Option<String>,
    /// DYNAMIC: the largest amount of one installment.
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub max_amount: Option<serde_json::Number>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallmentIn {
    pub id: Option<String>,
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub amount: Option<serde_json::Number>,
    pub installment_due_date: Option<String>,
    pub currency_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UrlsIn {
    pub callback: Option<String>,
    pub activation_webhook: Option<String>,
    pub payment_webhook: Option<String>,
}

/// Create a mandate; its installments are scheduled per `charges` and its Magic Link issued.
///
/// The same request again for the same `mandate.id` (JSON compared canonically) is answered
/// exactly as the first was, with `Mandato-Replayed: true`, and creates nothing; another
/// request for that id is `DUPLICATED_MANDATE_ID`.
#[utoipa::path(post, path = "/mandate", tag = "mandates",
    params(super::common::CommonHeaders),
    request_body = MandateRequest,
    responses(
        (status = 201, description = "MANDATE_CREATE_OK", body = Envelope<MandatePayload>,
            headers(("Mandato-Replayed" = String, description = "`true` when this answer repeats the one given to an earlier equal request for the same merchant id; absent otherwise"))),
        (status = 400, description = "Invalid field, unknown customer, duplicated mandate id; DATE_OUT_OF_RANGE: a due date past 9999-12-31; WEBHOOK_URL_NOT_ALLOWED: in production, a webhook URL whose host is a loopback, private or other reserved address, or localhost", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn create_mandate(
    State(state): State<AppState>,
    authed: Authed,
    HashedBody(body, sha256): HashedBody<MandateRequest>,
) -> ApiResult<Created> {
    let mandate_id = body.mandate.as_ref().and_then(|m| m.id.clone());
    let request = replay::request(Creation::Mandate, mandate_id, sha256);
    let checked = parse_mandate(body, state.today())
        .and_then(|command| check_webhook_destinations(&state, &command).map(|()| command));
    let command = match checked {
        Ok(command) => command,
        Err(refused) => {
            return replay::earlier_or(&state, &authed.commerce, request.as_ref(), refused);
        }
    };
    let policy = MagicLinkPolicy {
        valid_days: state.config.magic_link_days,
        business_offset_days: state.calendar.offset_days(),
    };
    let base = Arc::clone(&state.public_base_url);
    replay::create(&state, authed.commerce, request, move |tx, ctx| {
        let view = mandates::create(tx, ctx, &command, &policy)?;
        Ok(Envelope::created(
            "MANDATE_CREATE_OK",
            "mandate created",
            MandatePayload::new(view, &base),
        ))
    })
    .await
}

fn mandate_ref(type_id: &str, id: String, errors: &mut FieldErrors) -> Option<MandateRef> {
    match type_id {
        "id" => Some(MandateRef::External(id)),
        "internalId" => Some(MandateRef::Internal(id)),
        _ => {
            errors.push(
                "path.mandateTypeId",
                "INVALID_VALUE",
                "must be id or internalId",
            );
            None
        }
    }
}

/// Look up a mandate by the merchant's id (`/mandate/id/{id}`) or ours (`/mandate/internalId/{id}`).
#[utoipa::path(get, path = "/mandate/{mandateTypeId}/{mandateId}", tag = "mandates",
    params(super::common::CommonHeaders,
        ("mandateTypeId" = String, Path, description = "`id` (the merchant's mandate.id) or `internalId`"),
        ("mandateId" = String, Path, description = "The mandate id of that kind")),
    responses(
        (status = 200, description = "MANDATE_DETAIL_OK", body = Envelope<MandatePayload>),
        (status = 400, description = "Bad mandateTypeId", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such mandate in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn find_mandate(
    State(state): State<AppState>,
    authed: Authed,
    Path((type_id, id)): Path<(String, String)>,
) -> ApiResult<Envelope<MandatePayload>> {
    let mut errors = FieldErrors::new();
    let reference = mandate_ref(&type_id, id.clone(), &mut errors);
    errors.into_result()?;
    let reference = reference.expect("validated");
    let view = state
        .read(&authed.commerce, |conn, ctx| {
            mandates::find(conn, ctx, &reference)
        })
        .map_err(|e| e.located("path.mandateId", &id))?;
    Ok(Envelope::ok(
        "MANDATE_DETAIL_OK",
        "mandate found",
        MandatePayload::new(view, &state.public_base_url),
    ))
}

/// Look up a ONEPAY mandate by the merchant's id, to confirm its payment.
#[utoipa::path(get, path = "/mandate/onepay/confirm/id/{mandateExternalId}", tag = "mandates",
    params(super::common::CommonHeaders,
        ("mandateExternalId" = String, Path, description = "The merchant's mandate.id")),
    responses(
        (status = 200, description = "MANDATE_DETAIL_OK", body = Envelope<MandatePayload>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such ONEPAY mandate in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn find_onepay(
    State(state): State<AppState>,
    authed: Authed,
    Path(external_id): Path<String>,
) -> ApiResult<Envelope<MandatePayload>> {
    let view = state
        .read(&authed.commerce, |conn, ctx| {
            mandates::find_onepay(conn, ctx, &external_id)
        })
        .map_err(|e| e.located("path.mandateExternalId", &external_id))?;
    Ok(Envelope::ok(
        "MANDATE_DETAIL_OK",
        "ONEPAY mandate found",
        MandatePayload::new(view, &state.public_base_url),
    ))
}

/// The sealed mandate document of a signature-activated mandate.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateDocumentDto {
    /// The signature process that sealed it (`sig_...`).
    pub signature_internal_id: String,
    pub document_name: String,
    /// Always `application/pdf`.
    pub content_type: &'static str,
    /// Lowercase hex SHA-256 of the PDF: the `signedDocument.sha256` of the activation event.
    pub sha256: String,
    /// The sealed PDF (stamped, with its completion certificate), base64.
    pub content_base64: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MandateDocumentPayload {
    pub document: MandateDocumentDto,
}

/// The sealed mandate document of a mandate activated by its signature (`SIGNATURE`
/// activation): the mandate document the customer signed, stamped and sealed with its
/// completion certificate.
#[utoipa::path(get, path = "/mandate/{mandateTypeId}/{mandateId}/document", tag = "mandates",
    params(super::common::CommonHeaders,
        ("mandateTypeId" = String, Path, description = "`id` (the merchant's mandate.id) or `internalId`"),
        ("mandateId" = String, Path, description = "The mandate id of that kind")),
    responses(
        (status = 200, description = "MANDATE_DOCUMENT_OK", body = Envelope<MandateDocumentPayload>),
        (status = 400, description = "Bad mandateTypeId", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND: no such mandate in this commerce; SIGNED_MANDATE_DOCUMENT_NOT_FOUND: its signature has not completed (or it is a DIRECT mandate)", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn mandate_document(
    State(state): State<AppState>,
    authed: Authed,
    Path((type_id, id)): Path<(String, String)>,
) -> ApiResult<Envelope<MandateDocumentPayload>> {
    let mut errors = FieldErrors::new();
    let reference = mandate_ref(&type_id, id.clone(), &mut errors);
    errors.into_result()?;
    let reference = reference.expect("validated");
    let document = state
        .read(&authed.commerce, |conn, ctx| {
            signed_activation::signed_document(conn, ctx, &reference)
        })
        .map_err(|e| e.located("path.mandateId", &id))?;
    use base64::Engine;
    Ok(Envelope::ok(
        "MANDATE_DOCUMENT_OK",
        "signed mandate document",
        MandateDocumentPayload {
            document: MandateDocumentDto {
                signature_internal_id: document.signature_internal_id,
                document_name: document.name,
                content_type: "application/pdf",
                sha256: document.sha256,
                content_base64: base64::engine::general_purpose::STANDARD.encode(&document.bytes),
            },
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CancelRequest {
    /// The reason, 3 to 500 characters (also accepted as the query parameter `description`).
    pub description: Option<String>,
}

/// Cancel a PENDING or ACTIVE mandate. Installments not yet submitted are annulled (each
/// notified), then the activation webhook is told the mandate is CANCELLED.
#[utoipa::path(delete, path = "/mandate/cancel/{mandateTypeId}/{mandateId}/{userTypeId}/{userId}", tag = "mandates",
    params(super::common::CommonHeaders,
        ("mandateTypeId" = String, Path, description = "`id` or `internalId`"),
        ("mandateId" = String, Path),
        ("userTypeId" = String, Path, description = "`userId` or `internalUserId`"),
        ("userId" = String, Path),
        ("description" = Option<String>, Query, description = "The reason, unless sent in the body")),
    request_body(content = Option<CancelRequest>, description = "Optional: the reason in JSON"),
    responses(
        (status = 200, description = "MANDATE_CANCEL_OK", body = Envelope<MandatePayload>),
        (status = 400, description = "Missing description, or MANDATE_STATE_CONFLICT", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "No such mandate of this customer in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn cancel_mandate(
    State(state): State<AppState>,
    authed: Authed,
    Path((type_id, id, user_type_id, user_id)): Path<(String, String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> ApiResult<Envelope<MandatePayload>> {
    let mut errors = FieldErrors::new();
    let mandate = mandate_ref(&type_id, id.clone(), &mut errors);
    let customer = match user_type_id.as_str() {
        "userId" => Some(CustomerRef::UserId(user_id)),
        "internalUserId" => Some(CustomerRef::InternalUserId(user_id)),
        _ => {
            errors.push(
                "path.userTypeId",
                "INVALID_VALUE",
                "must be userId or internalUserId",
            );
            None
        }
    };
    let from_body = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        parse::<CancelRequest>(&body)?.description
    };
    let description = query.get("description").cloned().or(from_body);
    let description = match description.as_deref().map(str::trim) {
        None | Some("") => {
            errors.missing("description");
            None
        }
        Some(d) if !(3..=500).contains(&d.chars().count()) => {
            errors.push("description", "INVALID_LENGTH", "3 to 500 characters");
            None
        }
        // One line like every shown text (`domain::text` says why).
        Some(d) => shown_text(d, "description", 500, &mut errors),
    };
    errors.into_result()?;
    let (mandate, customer, description) = (
        mandate.expect("validated"),
        customer.expect("validated"),
        description.expect("validated"),
    );
    let view = state
        .write(authed.commerce, move |tx, ctx| {
            mandates::cancel(tx, ctx, &mandate, &customer, &description)
        })
        .await
        .map_err(|e| e.located("path.mandateId", &id))?;
    Ok(Envelope::ok(
        "MANDATE_CANCEL_OK",
        "mandate cancelled",
        MandatePayload::new(view, &state.public_base_url),
    ))
}

/// A new mandate's webhook URLs may be sent to (in production, no loopback, private or
/// reserved address): `WEBHOOK_URL_NOT_ALLOWED` at the URL's field otherwise.
pub(crate) fn check_webhook_destinations(
    state: &AppState,
    command: &CreateMandate,
) -> Result<(), Error> {
    fields::webhook_destinations(
        mandato_engine::notify::destination::Destinations::of(&state.config),
        [
            (
                "urls.activationWebhook",
                command.urls.activation_webhook.as_deref(),
            ),
            (
                "urls.paymentWebhook",
                command.urls.payment_webhook.as_deref(),
            ),
        ],
    )
}

/// The whole validation of a `POST /mandate` body, without a database: the bytes as sent, and
/// the business date the dates are checked against. The same `Err` the API answers with (a
/// 400 naming every bad field); never a panic, for any input. Entry point for fuzzing.
pub fn validate_request(body: &[u8], today: NaiveDate) -> Result<CreateMandate, Error> {
    parse_mandate(parse::<MandateRequest>(body)?, today)
}

/// Turns the wire request into a validated command, reporting every problem found.
fn parse_mandate(body: MandateRequest, today: NaiveDate) -> Result<CreateMandate, Error> {
    let mut errors = FieldErrors::new();
    let customer = match &body.customer {
        None => {
            errors.missing("customer");
            None
        }
        Some(c) => fields::customer_ref(
            c.user_id.as_ref(),
            c.internal_user_id.as_ref(),
            "customer",
            &mut errors,
        ),
    };
    let Some(m) = &body.mandate else {
        errors.missing("mandate");
        return Err(Error::Validation(errors.into_vec()));
    };
    let external = external_id(m.id.as_ref(), "mandate.id", &mut errors);
    let name = required_text(m.name.as_ref(), "mandate.name", 200, &mut errors);
    let detail = optional_text(m.detail.as_ref(), "mandate.detail", 1000, &mut errors);
    let mandate_type = match &m.mandate_type {
        None => {
            errors.missing("mandate.type");
            None
        }
        Some(t) => {
            let parsed = MandateType::from_name(t);
            if parsed.is_none() {
                errors.push(
                    "mandate.type",
                    "INVALID_VALUE",
                    "must be DYNAMIC, PERMANENT, SUBSCRIPTION or ONEPAY",
                );
            }
            parsed
        }
    };
    let installments = parse_installments(body.installments.as_deref(), today, &mut errors);
    let charges = match (&m.charges, mandate_type) {
        (None, _) => {
            errors.missing("mandate.charges");
            None
        }
        (Some(c), Some(t)) => parse_charges(c, t, installments.as_deref(), today, &mut errors),
        (Some(_), None) => None,
    };
    if let (Some(t), Some(items)) = (mandate_type, &installments) {
        check_installments_for_type(t, items, charges.as_ref(), &mut errors);
    }
    let activation = m.activation.as_deref().and_then(|text| {
        let mode = ActivationMode::from_name(text);
        if mode.is_none() {
            errors.push(
                "mandate.activation",
                "INVALID_VALUE",
                "must be DIRECT or SIGNATURE",
            );
        }
        mode
    });
    let payment_methods = parse_methods(body.payment_methods.as_deref(), &mut errors);
    let metadata = match &body.metadata {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) if v.to_string().len() <= 16 * 1024 => Some(v.clone()),
        Some(Value::Object(_)) => {
            errors.push("metadata", "TOO_LARGE", "at most 16 KiB of JSON");
            None
        }
        Some(_) => {
            errors.push("metadata", "INVALID_TYPE", "must be a JSON object");
            None
        }
    };
    let urls = body.urls.as_ref();
    let urls = Urls {
        callback: fields::callback_url(
            urls.and_then(|u| u.callback.as_ref()),
            "urls.callback",
            &mut errors,
        ),
        activation_webhook: fields::https_url(
            urls.and_then(|u| u.activation_webhook.as_ref()),
            "urls.activationWebhook",
            &mut errors,
        ),
        payment_webhook: fields::https_url(
            urls.and_then(|u| u.payment_webhook.as_ref()),
            "urls.paymentWebhook",
            &mut errors,
        ),
    };
    errors.into_result()?;
    let mandate_type = mandate_type.expect("validated");
    Ok(CreateMandate {
        customer: customer.expect("validated"),
        external_id: external.expect("validated").as_str().to_string(),
        name: name.expect("validated"),
        detail,
        charges: charges.expect("validated"),
        terminate_when_charged: m
            .terminate_when_charged
            .unwrap_or(mandate_type == MandateType::Onepay),
        payment_methods,
        installments: installments.unwrap_or_default(),
        metadata,
        urls,
        activation,
    })
}

fn parse_installments(
    items: Option<&[InstallmentIn]>,
    today: NaiveDate,
    errors: &mut FieldErrors,
) -> Option<Vec<NewInstallment>> {
    let items = items?;
    let parsed = parse_installment_list(items, today, errors);
    (parsed.len() == items.len()).then_some(parsed)
}

/// The installments of a request (a new mandate's, or those added to a DYNAMIC one): each with
/// an `id` new to the request, an amount in its currency, and a due date today or later.
/// Every bad field goes to `errors` at `installments[i].<field>`; the answer holds the valid
/// ones only.
pub fn parse_installment_list(
    items: &[InstallmentIn],
    today: NaiveDate,
    errors: &mut FieldErrors,
) -> Vec<NewInstallment> {
    let mut parsed = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = |f: &str| format!("installments[{i}].{f}");
        let id = external_id(item.id.as_ref(), &path("id"), errors);
        if let Some(id) = &id
            && !seen.insert(id.as_str().to_string())
        {
            errors.push(
                path("id"),
                "DUPLICATED_INSTALLMENT_ID",
                "the id appears twice in the request",
            );
        }
        let currency = fields::currency(item.currency_id.as_ref(), &path("currencyId"), errors);
        let amount = fields::money(item.amount.as_ref(), currency, &path("amount"), errors);
        let due = fields::future_date(
            item.installment_due_date.as_ref(),
            &path("installmentDueDate"),
            today,
            errors,
        );
        if let (Some(id), Some(amount), Some(due_date)) = (id, amount, due) {
            parsed.push(NewInstallment {
                external_id: id.as_str().to_string(),
                amount,
                due_date,
            });
        }
    }
    parsed
}

fn parse_charges(
    c: &ChargesIn,
    mandate_type: MandateType,
    installments: Option<&[NewInstallment]>,
    today: NaiveDate,
    errors: &mut FieldErrors,
) -> Option<Charges> {
    let currency = fields::currency(c.currency_id.as_ref(), "mandate.charges.currencyId", errors);
    let not_allowed = |present: bool, name: &str, errors: &mut FieldErrors| {
        if present {
            errors.push(
                format!("mandate.charges.{name}"),
                "NOT_ALLOWED",
                format!("{} mandates do not take {name}", mandate_type.name()),
            );
        }
    };
    let amount_of = |errors: &mut FieldErrors| {
        fields::money(
            c.amount.as_ref(),
            currency,
            "mandate.charges.amount",
            errors,
        )
    };
    let periodicity_of = |errors: &mut FieldErrors| match &c.periodicity {
        None => {
            errors.missing("mandate.charges.periodicity");
            None
        }
        Some(p) => {
            let parsed = Periodicity::parse(p);
            if parsed.is_none() {
                errors.push(
                    "mandate.charges.periodicity",
                    "INVALID_VALUE",
                    "must be WEEKLY, MONTHLY, BIMONTHLY, QUARTERLY, SEMIANNUAL or ANNUAL",
                );
            }
            parsed
        }
    };
    let start_of = |errors: &mut FieldErrors| {
        fields::future_date(
            c.start_date.as_ref(),
            "mandate.charges.startDate",
            today,
            errors,
        )
    };
    match mandate_type {
        MandateType::Onepay => {
            for (present, name) in [
                (c.periodicity.is_some(), "periodicity"),
                (c.start_date.is_some(), "startDate"),
                (c.count.is_some(), "count"),
                (c.end_date.is_some(), "endDate"),
                (c.max_amount.is_some(), "maxAmount"),
            ] {
                not_allowed(present, name, errors);
            }
            let total = amount_of(errors);
            let given = installments.and_then(|i| i.first()).map(|i| i.due_date);
            let due_date = match &c.due_date {
                // The business date is within the range: the sandbox clock cannot pass 9999.
                None => match given.map_or_else(|| Date::new(today), Ok) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        errors.push("mandate.charges.dueDate", e.code(), e.to_string());
                        None
                    }
                },
                Some(_) => fields::future_date(
                    c.due_date.as_ref(),
                    "mandate.charges.dueDate",
                    today,
                    errors,
                ),
            };
            Some(Charges::Onepay {
                total: total?,
                due_date: due_date?,
            })
        }
        MandateType::Subscription | MandateType::Permanent => {
            not_allowed(c.due_date.is_some(), "dueDate", errors);
            not_allowed(c.max_amount.is_some(), "maxAmount", errors);
            let amount = amount_of(errors);
            let periodicity = periodicity_of(errors);
            let start_date = start_of(errors);
            if mandate_type == MandateType::Permanent {
                not_allowed(c.count.is_some(), "count", errors);
                not_allowed(c.end_date.is_some(), "endDate", errors);
                let charges = Charges::Permanent {
                    amount: amount?,
                    periodicity: periodicity?,
                    start_date: start_date?,
                };
                return schedule_fits(charges, errors);
            }
            let end = match (c.count, &c.end_date) {
                (Some(n), None) if (1..=1200).contains(&n) => {
                    Some(SubscriptionEnd::Count(n as u32))
                }
                (Some(_), None) => {
                    errors.push(
                        "mandate.charges.count",
                        "OUT_OF_RANGE",
                        "1 to 1200 installments",
                    );
                    None
                }
                (None, Some(_)) => {
                    let end = fields::date(c.end_date.as_ref(), "mandate.charges.endDate", errors);
                    match (end, start_date) {
                        (Some(e), Some(s)) if e < s => {
                            errors.push(
                                "mandate.charges.endDate",
                                "DATE_BEFORE_START",
                                "must not be before startDate",
                            );
                            None
                        }
                        (e, _) => e.map(SubscriptionEnd::EndDate),
                    }
                }
                _ => {
                    errors.push(
                        "mandate.charges",
                        "ONE_OF_REQUIRED",
                        "send exactly one of count and endDate",
                    );
                    None
                }
            };
            let charges = Charges::Subscription {
                amount: amount?,
                periodicity: periodicity?,
                start_date: start_date?,
                end: end?,
            };
            schedule_fits(charges, errors)
        }
        MandateType::Dynamic => {
            for (present, name) in [
                (c.amount.is_some(), "amount"),
                (c.periodicity.is_some(), "periodicity"),
                (c.start_date.is_some(), "startDate"),
                (c.count.is_some(), "count"),
                (c.end_date.is_some(), "endDate"),
                (c.due_date.is_some(), "dueDate"),
            ] {
                not_allowed(present, name, errors);
            }
            let currency = currency?;
            let max_amount = match &c.max_amount {
                None => None,
                Some(_) => Some(fields::money(
                    c.max_amount.as_ref(),
                    Some(currency),
                    "mandate.charges.maxAmount",
                    errors,
                )?),
            };
            Some(Charges::Dynamic {
                currency,
                max_amount,
            })
        }
    }
}

/// The charges, when the installments they generate at creation fit the calendar. A due date
/// past 9999-12-31 is blamed on the field that pushed it there (CONTRACT 12): the count of a
/// SUBSCRIPTION, otherwise the start date (PERMANENT's first twelve; an end date cannot, being
/// a date of the range itself).
fn schedule_fits(charges: Charges, errors: &mut FieldErrors) -> Option<Charges> {
    match charges.scheduled_installments() {
        Ok(_) => Some(charges),
        Err(e @ ScheduleError::DateOutOfRange) => {
            let field = match &charges {
                Charges::Subscription {
                    end: SubscriptionEnd::Count(_),
                    ..
                } => "mandate.charges.count",
                _ => "mandate.charges.startDate",
            };
            errors.push(field, DATE_OUT_OF_RANGE, e.to_string());
            None
        }
        Err(e @ ScheduleError::TooManyInstallments) => {
            errors.push("mandate.charges", "INVALID_SCHEDULE", e.to_string());
            None
        }
    }
}

/// Which installments each type takes in the creation body (CONTRACT 5).
fn check_installments_for_type(
    mandate_type: MandateType,
    items: &[NewInstallment],
    charges: Option<&Charges>,
    errors: &mut FieldErrors,
) {
    match mandate_type {
        MandateType::Subscription | MandateType::Permanent if !items.is_empty() => errors.push(
            "installments",
            "NOT_ALLOWED",
            format!(
                "{} mandates generate their own installments",
                mandate_type.name()
            ),
        ),
        MandateType::Onepay if items.len() > 1 => errors.push(
            "installments",
            "TOO_MANY",
            "a ONEPAY mandate has exactly one installment",
        ),
        _ => {}
    }
    let Some(charges) = charges else { return };
    match charges {
        Charges::Onepay { total, due_date } => {
            if let Some(only) = items.first() {
                if only.amount.currency() == total.currency()
                    && only.amount.amount() != total.amount()
                {
                    errors.push(
                        "installments[0].amount",
                        "AMOUNT_MISMATCH",
                        "must equal mandate.charges.amount",
                    );
                }
                if only.due_date != *due_date {
                    errors.push(
                        "installments[0].installmentDueDate",
                        "DATE_MISMATCH",
                        "must equal mandate.charges.dueDate",
                    );
                }
            }
            check_against_charges(total.currency(), None, items, "installments", errors);
        }
        Charges::Dynamic {
            currency,
            max_amount,
        } => check_against_charges(
            *currency,
            max_amount.as_ref(),
            items,
            "installments",
            errors,
        ),
        _ => {}
    }
}

fn parse_methods(ids: Option<&[i64]>, errors: &mut FieldErrors) -> Option<Vec<PaymentMethod>> {
    let ids = ids?;
    if ids.is_empty() {
        errors.push(
            "paymentMethods",
            "EMPTY",
            "omit paymentMethods to allow every enabled method",
        );
        return None;
    }
    let mut methods = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        match PaymentMethod::from_id(*id) {
            Some(m) if methods.contains(&m) => {
                errors.push(format!("paymentMethods[{i}]"), "DUPLICATED", "listed twice")
            }
            Some(m) => methods.push(m),
            None => errors.push(
                format!("paymentMethods[{i}]"),
                "INVALID_VALUE",
                "must be one of 3, 4, 11, 5, 6, 14",
            ),
        }
    }
    Some(methods)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
    }

    fn body(charges: Value) -> Vec<u8> {
        serde_json::json!({
            "customer": {"userId": "cust-001"},
            "mandate": {"id": "GYM-1", "type": "SUBSCRIPTION", "name": "Plan", "charges": charges},
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn the_validation_entry_point_answers_like_the_api() {
        let ok = body(serde_json::json!({"currencyId": "CLP", "amount": 100,
            "periodicity": "MONTHLY", "startDate": "2026-12-01", "count": 3}));
        let command = validate_request(&ok, today()).unwrap();
        assert_eq!(command.charges.scheduled_installments().unwrap().len(), 3);

        let far = body(serde_json::json!({"currencyId": "CLP", "amount": 100,
            "periodicity": "ANNUAL", "startDate": "9999-12-01", "count": 2}));
        match validate_request(&far, today()) {
            Err(Error::Refused { name, field, .. }) => {
                assert_eq!(name, "DATE_OUT_OF_RANGE");
                assert_eq!(field.as_deref(), Some("mandate.charges.count"));
            }
            other => panic!("{:?}", other.err()),
        }
        for garbage in [
            &b""[..],
            b"null",
            b"[]",
            b"{\"mandate\": 5}",
            b"\xff\xfe",
            b"{\"mandate\": {}}",
        ] {
            assert!(
                matches!(
                    validate_request(garbage, today()),
                    Err(Error::Validation(_))
                ),
                "{garbage:?}"
            );
        }
    }
}
