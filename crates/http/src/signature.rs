//! Signature processes for the merchant (CONTRACT 8): create, look up, cancel.
//!
//! `POST /signature` takes up to 16 MiB (the route's own body limit; the listener's is 1 MiB):
//! one or more PDFs in base64, at most 10 MiB each decoded, each parsed (not sniffed) for its
//! pages and their sizes, so every MANUAL box is checked against the page it is on.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::HeaderMap;
use base64::Engine;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::{UtoipaMethodRouter, UtoipaMethodRouterExt};

use super::AppState;
use super::auth::Authed;
use super::envelope::{Empty, Envelope};
use super::error::{ApiError, ApiResult, ErrorBody};
use super::fields;
use super::json::{Body, HashedBody};
use super::replay::{self, Created};
use super::users::{optional_text, required_text};
use super::wire::StateDto;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::esign::ceremony::{self, Act, CancelOutcome, ProcessView};
use mandato_engine::esign::pages;
use mandato_engine::esign::pdf::{self, DocumentError, Inspection};
use mandato_engine::esign::{
    self, CreateProcess, NewDocument, NewSignatory, Placement, SignatureType,
};
use mandato_engine::operations::CustomerRef;
use mandato_engine::records::{Creation, CustomerRow};

/// `POST /signature` with its own body limit (16 MiB) instead of the listener's 1 MiB.
pub fn with_body_limit(route: UtoipaMethodRouter<AppState>) -> UtoipaMethodRouter<AppState> {
    route.layer(DefaultBodyLimit::max(esign::BODY_LIMIT))
}

// ----- requests -----

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureRequest {
    pub process: Option<ProcessIn>,
    /// One or more (at most 50), each a customer of the commerce.
    pub signatories: Option<Vec<SignatoryIn>>,
    /// One or more PDFs (at most 20).
    pub documents: Option<Vec<DocumentIn>>,
    pub urls: Option<SignatureUrlsIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessIn {
    /// 1 to 200 characters.
    pub process_name: Option<String>,
    /// The merchant's id of the process, up to 64 characters; unique per commerce.
    pub external_process_id: Option<String>,
    /// Who asked for it, up to 200 characters.
    pub request_user: Option<String>,
    /// Days (business time) the signing links stay valid: 1 to 365, default 30.
    #[schema(value_type = Option<i64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub expiration_days: Option<serde_json::Number>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatoryIn {
    /// Exactly one of `userId` and `internalUserId`.
    pub user_id: Option<String>,
    pub internal_user_id: Option<String>,
    /// 1 to 1000: lower orders sign first, equal orders in parallel.
    #[schema(value_type = Option<i64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub order: Option<serde_json::Number>,
    /// `FES` (RUT and one-time code), `FEA` (and the identity card's serial number) or `FAO`
    /// (and an online identity check). In the sandbox the extra step accepts serial
    /// `123456789` and refuses `999999999`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatoryRefIn {
    pub user_id: Option<String>,
    pub internal_user_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentIn {
    /// 1 to 200 characters.
    pub document_name: Option<String>,
    /// The PDF in base64 (standard alphabet); at most 10 MiB decoded.
    pub content_base64: Option<String>,
    /// Where each signatory signs: every signatory at least once per document.
    pub signature_data: Option<Vec<SignatureDataIn>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureDataIn {
    /// One of the process's signatories, by `userId` or `internalUserId`.
    pub signatory: Option<SignatoryRefIn>,
    /// `MANUAL` (a box on a page) or `LAST_PAGE` (on a signature page appended at sealing).
    pub mode: Option<String>,
    /// MANUAL: 1-based page of the document.
    #[schema(value_type = Option<i64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub page: Option<serde_json::Number>,
    /// MANUAL: the box in PDF points, origin at the top-left corner of the page as displayed
    /// (after CropBox and Rotate); it must lie inside the page.
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub x: Option<serde_json::Number>,
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub y: Option<serde_json::Number>,
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub width: Option<serde_json::Number>,
    #[schema(value_type = Option<f64>)]
    #[serde(default, deserialize_with = "fields::json_number")]
    pub height: Option<serde_json::Number>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SignatureUrlsIn {
    /// Where the signatory's browser returns after signing or rejecting (`https://`, or
    /// `http://localhost` for development).
    pub callback: Option<String>,
    /// Where the process's events go (`https://` only).
    pub webhook: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CancelSignatureRequest {
    pub process: Option<CancelProcessIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelProcessIn {
    pub internal_id: Option<String>,
}

// ----- responses -----

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureProcessDto {
    pub internal_id: String,
    pub process_name: String,
    pub external_process_id: Option<String>,
    pub request_user: Option<String>,
    /// 1 PENDING, 2 IN_PROGRESS, 3 COMPLETED, 4 CANCELLED, 5 REJECTED, 6 EXPIRED.
    pub state: StateDto,
    /// The reason given by the signatory who rejected.
    pub rejection_reason: Option<String>,
    /// Business time (the sandbox clock moves it).
    pub expires_at: String,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatoryDto {
    pub internal_id: String,
    pub user_id: String,
    pub internal_user_id: String,
    pub order: i64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// 1 PENDING, 2 SIGNED, 3 REJECTED.
    pub state: StateDto,
    /// The signatory's own link; it is the only credential, send it to that person only.
    pub signing_url: String,
    pub viewed_at: Option<String>,
    pub identity_confirmed_at: Option<String>,
    pub signed_at: Option<String>,
    pub rejected_at: Option<String>,
    pub rejection_reason: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureDocumentDto {
    pub internal_id: String,
    pub document_name: String,
    pub page_count: i64,
    pub size_bytes: i64,
    /// Lowercase hex SHA-256 of the bytes uploaded.
    pub sha256: String,
    /// Of the sealed PDF, once the process is COMPLETED.
    pub sealed_sha256: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SignatureUrlsDto {
    pub callback: String,
    pub webhook: String,
}

/// The payload of creation and lookup.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignaturePayload {
    pub process: SignatureProcessDto,
    pub signatories: Vec<SignatoryDto>,
    pub documents: Vec<SignatureDocumentDto>,
    pub urls: SignatureUrlsDto,
}

impl SignaturePayload {
    pub fn new(view: &ProcessView, public_base_url: &str) -> Self {
        let p = &view.process;
        SignaturePayload {
            process: SignatureProcessDto {
                internal_id: p.id.clone(),
                process_name: p.process_name.clone(),
                external_process_id: p.external_process_id.clone(),
                request_user: p.request_user.clone(),
                state: StateDto {
                    id: p.state.id(),
                    name: p.state.name(),
                },
                rejection_reason: p.rejection_reason.clone(),
                expires_at: p.expires_at.clone(),
                created_at: p.created_at.clone(),
                updated_at: p.updated_at.clone(),
                finished_at: p.finished_at.clone(),
            },
            signatories: view
                .signatories
                .iter()
                .map(|s| SignatoryDto {
                    internal_id: s.id.clone(),
                    user_id: s.user_id.clone(),
                    internal_user_id: s.customer_id.clone(),
                    order: s.order,
                    kind: s.kind.name(),
                    state: StateDto {
                        id: s.state.id(),
                        name: s.state.name(),
                    },
                    signing_url: format!("{public_base_url}/sign/{}", s.token),
                    viewed_at: s.viewed_at.clone(),
                    identity_confirmed_at: s.identity_confirmed_at.clone(),
                    signed_at: s.signed_at.clone(),
                    rejected_at: s.rejected_at.clone(),
                    rejection_reason: s.rejection_reason.clone(),
                })
                .collect(),
            documents: view
                .documents
                .iter()
                .map(|d| SignatureDocumentDto {
                    internal_id: d.id.clone(),
                    document_name: d.name.clone(),
                    page_count: d.page_count,
                    size_bytes: d.size_bytes,
                    sha256: d.sha256.clone(),
                    sealed_sha256: d.sealed_sha256.clone(),
                })
                .collect(),
            urls: SignatureUrlsDto {
                callback: p.url_callback.clone(),
                webhook: p.url_webhook.clone(),
            },
        }
    }
}

// ----- handlers -----

/// The whole validation of a `POST /signature` body for a commerce: its documents parsed,
/// its signatories found among the commerce's customers, its webhook's destination allowed.
/// The staff API's process creation validates its body here too.
pub(crate) async fn validated_command(
    state: &AppState,
    commerce: &mandato_engine::records::Commerce,
    body: SignatureRequest,
) -> Result<CreateProcess, ApiError> {
    // PDF parsing is bounded (CONTRACT 12): at most two requests parse at once, each on one
    // blocking thread, outside any store transaction, and one commerce at most one of them.
    // Waiting here ends with the request.
    let permit = pdf::turn(pdf::Party::Commerce(commerce.id)).await;
    let mut draft = tokio::task::spawn_blocking(move || {
        let draft = Draft::parse(body);
        drop(permit);
        draft
    })
    .await
    .map_err(|e| ApiError(Error::Internal(e.into())))?;
    if let Some((field, message)) = draft.too_complex.take() {
        return Err(Error::refused_at("DOCUMENT_TOO_COMPLEX", field, message).into());
    }
    let references: Vec<_> = draft
        .signatories
        .iter()
        .map(|s| s.as_ref().map(|s| &s.reference))
        .collect();
    let resolved = state.read(commerce, |conn, ctx| {
        pages::customers_named(conn, ctx, &references)
    })?;
    let command = draft.finish(&resolved)?;
    fields::webhook_destinations(
        mandato_engine::notify::destination::Destinations::of(&state.config),
        [("urls.webhook", Some(command.webhook.as_str()))],
    )?;
    Ok(command)
}

pub(crate) fn client(
    headers: &HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
) -> (Option<String>, Option<String>) {
    let ip = connect.map(|Extension(ConnectInfo(addr))| addr.ip().to_string());
    let agent = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(512).collect());
    (ip, agent)
}

/// Create a signature process: its documents, signatories and one signing link each.
///
/// Validation names every problem at its JSON path (`documents[0].signatureData[1].page`):
/// 1+ signatories, each an existing customer of the commerce by exactly one of `userId` and
/// `internalUserId`, `order` ≥ 1, type FES/FEA/FAO; 1+ documents, each a readable,
/// unencrypted PDF of at most 10 MiB; `signatureData` locating every signatory on every
/// document, MANUAL boxes on an existing page and inside it, or LAST_PAGE; `urls.callback`
/// and `urls.webhook` (`https://`). Events (`SIGNATORY_SIGNED`, `SIGNATURE_COMPLETED`,
/// `SIGNATURE_REJECTED`, `SIGNATURE_CANCELLED`, `SIGNATURE_EXPIRED`) go to `urls.webhook`,
/// signed like payment events, with a `sequence` per process. Sandbox: the one-time codes
/// are shown to staff (`GET /admin/api/signatures/{internalId}`); the FEA/FAO identity step
/// approves serial `123456789` and refuses `999999999`.
///
/// `externalProcessId` names one process of the commerce: the same request again (JSON
/// compared canonically) is answered exactly as the first was, with `Mandato-Replayed: true`,
/// and creates nothing; another request with that id is `DUPLICATED_EXTERNAL_PROCESS_ID`.
#[utoipa::path(post, path = "/signature", tag = "signatures",
    params(super::common::CommonHeaders),
    request_body = SignatureRequest,
    responses(
        (status = 201, description = "SIGNATURE_CREATE_OK", body = Envelope<SignaturePayload>,
            headers(("Mandato-Replayed" = String, description = "`true` when this answer repeats the one given to an earlier equal request for the same merchant id; absent otherwise"))),
        (status = 400, description = "VALIDATION_ERROR: every invalid field, unknown signatory customer, unreadable PDF, box outside its page; DUPLICATED_EXTERNAL_PROCESS_ID: an externalProcessId already used, with another request; WEBHOOK_URL_NOT_ALLOWED: in production, `urls.webhook` whose host is a loopback, private or other reserved address, or localhost; DOCUMENT_TOO_COMPLEX (at `documents[i].contentBase64`): parsing the PDF would inflate past 256 MiB in all or hold more than 1,000,000 values", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE: over 16 MiB", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn create_signature(
    State(state): State<AppState>,
    authed: Authed,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    HashedBody(body, sha256): HashedBody<SignatureRequest>,
) -> ApiResult<Created> {
    let external_id = body
        .process
        .as_ref()
        .and_then(|p| p.external_process_id.clone());
    let request = replay::request(Creation::Signature, external_id, sha256);
    if let Some(replayed) = replay::earlier(&state, &authed.commerce, request.as_ref())? {
        return Ok(replayed);
    }
    let command = validated_command(&state, &authed.commerce, body).await?;
    let (ip, agent) = client(&headers, connect);
    let now = state.clock.now();
    let business_now = state.calendar.now(now);
    let sandbox = state.config.environment.is_sandbox();
    let base = Arc::clone(&state.public_base_url);
    replay::create(&state, authed.commerce, request, move |tx, ctx| {
        let act = Act {
            now,
            business_now,
            ip: ip.as_deref(),
            user_agent: agent.as_deref(),
            sandbox,
        };
        let view = ceremony::create_for_merchant(tx, ctx.commerce, &act, &command)?;
        Ok(Envelope::created(
            "SIGNATURE_CREATE_OK",
            "signature process created",
            SignaturePayload::new(&view, &base),
        ))
    })
    .await
}

/// Look up a signature process: its state, each signatory's state and times, and the
/// documents' hashes (`sha256` of the original, `sealedSha256` once sealed). An open process
/// past its expiry is made EXPIRED (and `SIGNATURE_EXPIRED` sent) by the lookup itself.
#[utoipa::path(get, path = "/signature/internalId/{internalId}", tag = "signatures",
    params(super::common::CommonHeaders,
        ("internalId" = String, Path, description = "The process's `internalId` (`sig_...`)")),
    responses(
        (status = 200, description = "SIGNATURE_DETAIL_OK", body = Envelope<SignaturePayload>),
        (status = 400, description = "Invalid common headers", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "SIGNATURE_PROCESS_NOT_FOUND: not in this commerce", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn find_signature(
    State(state): State<AppState>,
    authed: Authed,
    Path(internal_id): Path<String>,
) -> ApiResult<Envelope<SignaturePayload>> {
    let now = state.clock.now();
    let business_now = state.calendar.now(now);
    let id = internal_id.clone();
    let view = state
        .read(&authed.commerce, |conn, ctx| {
            pages::process_of_commerce(conn, ctx, &id)
        })
        .map_err(|e| e.located("path.internalId", &internal_id))?;
    let due = view.process.state.is_open()
        && view.process.expires_at <= mandato_core::clock::timestamp(business_now);
    let view = if due {
        let sandbox = state.config.environment.is_sandbox();
        state
            .write(authed.commerce, move |tx, ctx| {
                let act = Act {
                    now,
                    business_now,
                    ip: None,
                    user_agent: None,
                    sandbox,
                };
                ceremony::find(tx, ctx.commerce, &act, &internal_id)
            })
            .await?
    } else {
        view
    };
    Ok(Envelope::ok(
        "SIGNATURE_DETAIL_OK",
        "signature process found",
        SignaturePayload::new(&view, &state.public_base_url),
    ))
}

/// Cancel a PENDING or IN_PROGRESS process (body `{"process": {"internalId"}}`). Its
/// documents and audit trail are kept; `SIGNATURE_CANCELLED` goes to the webhook.
#[utoipa::path(delete, path = "/signature/cancel", tag = "signatures",
    params(super::common::CommonHeaders),
    request_body = CancelSignatureRequest,
    responses(
        (status = 200, description = "SIGNATURE_CANCEL_OK, empty payload", body = Envelope<Empty>),
        (status = 400, description = "Missing process.internalId, or SIGNATURE_STATE_CONFLICT: COMPLETED, REJECTED or EXPIRED", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "SIGNATURE_PROCESS_NOT_FOUND: not in this commerce", body = ErrorBody),
        (status = 410, description = "SIGNATURE_ALREADY_CANCELLED", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn cancel_signature(
    State(state): State<AppState>,
    authed: Authed,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    Body(body): Body<CancelSignatureRequest>,
) -> ApiResult<Envelope<Empty>> {
    let internal_id = match body.process.as_ref() {
        None => return Err(Error::validation("process", "REQUIRED", "is required").into()),
        Some(p) => match p.internal_id.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(
                    Error::validation("process.internalId", "REQUIRED", "is required").into(),
                );
            }
            Some(id) => id.to_string(),
        },
    };
    let (ip, agent) = client(&headers, connect);
    let now = state.clock.now();
    let business_now = state.calendar.now(now);
    let sandbox = state.config.environment.is_sandbox();
    let cancelled = internal_id.clone();
    let outcome = state
        .write(authed.commerce, move |tx, ctx| {
            let act = Act {
                now,
                business_now,
                ip: ip.as_deref(),
                user_agent: agent.as_deref(),
                sandbox,
            };
            ceremony::cancel(tx, ctx.commerce, &act, &cancelled)
        })
        .await
        .map_err(|e| e.located("process.internalId", &internal_id))?;
    match outcome {
        CancelOutcome::Cancelled => Ok(Envelope::ok(
            "SIGNATURE_CANCEL_OK",
            "signature process cancelled",
            Empty {},
        )),
        CancelOutcome::AlreadyCancelled => Err(Error::Gone {
            name: "SIGNATURE_ALREADY_CANCELLED",
            message: "the signature process was already cancelled".into(),
        }
        .into()),
        CancelOutcome::Final(s) => Err(Error::refused(
            "SIGNATURE_STATE_CONFLICT",
            format!("a {} signature process cannot be cancelled", s.name()),
        )
        .into()),
    }
}

// ----- validation -----

struct SignatoryDraft {
    reference: CustomerRef,
    order: Option<i64>,
    kind: Option<SignatureType>,
}

struct EntryDraft {
    index: usize,
    signatory: Option<CustomerRef>,
    placement: Option<Placement>,
}

struct DocumentDraft {
    name: Option<String>,
    pdf: Option<(Vec<u8>, Inspection)>,
    /// `None` when `signatureData` itself was missing or bad (already reported).
    entries: Option<Vec<EntryDraft>>,
}

/// Everything that can be checked without the database; the customers come next.
struct Draft {
    errors: FieldErrors,
    too_complex: TooComplex,
    name: Option<String>,
    external_id: Option<String>,
    request_user: Option<String>,
    expiry_days: i64,
    /// Index-aligned with the request's signatories (`None`: its reference was bad).
    signatories: Vec<Option<SignatoryDraft>>,
    signatories_ok: bool,
    documents: Vec<DocumentDraft>,
    callback: Option<String>,
    webhook: Option<String>,
}

fn integer(
    value: Option<&serde_json::Number>,
    field: &str,
    errors: &mut FieldErrors,
) -> Option<i64> {
    let Some(n) = value else {
        errors.missing(field);
        return None;
    };
    // A JSON integer may carry a zero fraction (`2.0`), as JSON Schema counts it.
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    });
    match whole {
        Some(i) => Some(i),
        None => {
            errors.push(field, "INVALID_VALUE", "must be a whole number");
            None
        }
    }
}

fn coordinate(
    value: Option<&serde_json::Number>,
    field: &str,
    positive: bool,
    errors: &mut FieldErrors,
) -> Option<f64> {
    let Some(n) = value else {
        errors.missing(field);
        return None;
    };
    match n.as_f64().filter(|v| v.is_finite()) {
        Some(v) if positive && v <= 0.0 => {
            errors.push(field, "OUT_OF_RANGE", "must be greater than 0");
            None
        }
        Some(v) if !positive && v < 0.0 => {
            errors.push(field, "OUT_OF_RANGE", "must be 0 or more");
            None
        }
        Some(v) => Some(v),
        None => {
            errors.push(field, "INVALID_VALUE", "must be a number");
            None
        }
    }
}

/// A list that must have 1 to `max` items.
fn list<'a, T>(
    value: Option<&'a Vec<T>>,
    field: &str,
    max: usize,
    errors: &mut FieldErrors,
) -> Option<&'a [T]> {
    match value {
        None => {
            errors.missing(field);
            None
        }
        Some(items) if items.is_empty() => {
            errors.push(field, "EMPTY", "needs at least one item");
            None
        }
        Some(items) if items.len() > max => {
            errors.push(field, "TOO_MANY", format!("at most {max} items"));
            None
        }
        Some(items) => Some(items),
    }
}

impl Draft {
    fn parse(body: SignatureRequest) -> Draft {
        let mut errors = FieldErrors::new();
        let (name, external_id, request_user, expiry_days) = match &body.process {
            None => {
                errors.missing("process");
                (None, None, None, esign::DEFAULT_EXPIRY_DAYS)
            }
            Some(p) => {
                let name = required_text(
                    p.process_name.as_ref(),
                    "process.processName",
                    200,
                    &mut errors,
                );
                let external = optional_text(
                    p.external_process_id.as_ref(),
                    "process.externalProcessId",
                    64,
                    &mut errors,
                );
                let user = optional_text(
                    p.request_user.as_ref(),
                    "process.requestUser",
                    200,
                    &mut errors,
                );
                let days = match &p.expiration_days {
                    None => esign::DEFAULT_EXPIRY_DAYS,
                    Some(_) => match integer(
                        p.expiration_days.as_ref(),
                        "process.expirationDays",
                        &mut errors,
                    ) {
                        Some(d) if (1..=esign::MAX_EXPIRY_DAYS).contains(&d) => d,
                        Some(_) => {
                            errors.push(
                                "process.expirationDays",
                                "OUT_OF_RANGE",
                                format!("1 to {} days", esign::MAX_EXPIRY_DAYS),
                            );
                            esign::DEFAULT_EXPIRY_DAYS
                        }
                        None => esign::DEFAULT_EXPIRY_DAYS,
                    },
                };
                (name, external, user, days)
            }
        };

        let signatory_list = list(
            body.signatories.as_ref(),
            "signatories",
            esign::MAX_SIGNATORIES,
            &mut errors,
        );
        let mut signatories = Vec::new();
        for (i, s) in signatory_list.unwrap_or_default().iter().enumerate() {
            let path = format!("signatories[{i}]");
            let reference = fields::customer_ref(
                s.user_id.as_ref(),
                s.internal_user_id.as_ref(),
                &path,
                &mut errors,
            );
            let order = match integer(s.order.as_ref(), &format!("{path}.order"), &mut errors) {
                Some(o) if (1..=1000).contains(&o) => Some(o),
                Some(_) => {
                    errors.push(format!("{path}.order"), "OUT_OF_RANGE", "1 to 1000");
                    None
                }
                None => None,
            };
            let kind = match &s.kind {
                None => {
                    errors.missing(format!("{path}.type"));
                    None
                }
                Some(t) => {
                    let parsed = SignatureType::parse(t);
                    if parsed.is_none() {
                        errors.push(
                            format!("{path}.type"),
                            "INVALID_VALUE",
                            "must be FES, FEA or FAO",
                        );
                    }
                    parsed
                }
            };
            signatories.push(reference.map(|reference| SignatoryDraft {
                reference,
                order,
                kind,
            }));
        }

        let document_list = list(
            body.documents.as_ref(),
            "documents",
            esign::MAX_DOCUMENTS,
            &mut errors,
        );
        let mut documents = Vec::new();
        let mut too_complex = None;
        for (i, d) in document_list.unwrap_or_default().iter().enumerate() {
            documents.push(parse_document(i, d, &mut errors, &mut too_complex));
        }

        let urls = body.urls.as_ref();
        if urls.is_none() {
            errors.missing("urls");
        }
        let callback = match urls.and_then(|u| u.callback.as_ref()) {
            None if urls.is_some() => {
                errors.missing("urls.callback");
                None
            }
            value => fields::callback_url(value, "urls.callback", &mut errors),
        };
        let webhook = match urls.and_then(|u| u.webhook.as_ref()) {
            None if urls.is_some() => {
                errors.missing("urls.webhook");
                None
            }
            value => fields::https_url(value, "urls.webhook", &mut errors),
        };
        Draft {
            errors,
            too_complex,
            name,
            external_id,
            request_user,
            expiry_days,
            signatories_ok: signatory_list.is_some(),
            signatories,
            documents,
            callback,
            webhook,
        }
    }

    /// With each signatory's customer (or `None` when it does not exist): matches the
    /// signature data to the signatories and builds the command, or names every problem.
    fn finish(self, customers: &[Option<CustomerRow>]) -> Result<CreateProcess, Error> {
        let mut errors = self.errors;
        // Unknown customers, and the same customer twice.
        let mut seen = HashSet::new();
        // Signatories whose coverage is checked: found, and not a repeat of an earlier one.
        let mut counted = vec![false; self.signatories.len()];
        for (i, (draft, customer)) in self.signatories.iter().zip(customers).enumerate() {
            let Some(draft) = draft else { continue };
            match customer {
                None => {
                    let field = match draft.reference {
                        CustomerRef::UserId(_) => format!("signatories[{i}].userId"),
                        CustomerRef::InternalUserId(_) => {
                            format!("signatories[{i}].internalUserId")
                        }
                    };
                    errors.push(field, "USER_NOT_FOUND", "no such customer in this commerce");
                }
                Some(c) if !seen.insert(c.seq) => errors.push(
                    format!("signatories[{i}]"),
                    "DUPLICATED_SIGNATORY",
                    "the same customer appears twice",
                ),
                Some(_) => counted[i] = true,
            }
        }
        // Which signatory an entry names: by the customer found, or by the text sent.
        let find = |reference: &CustomerRef| {
            self.signatories
                .iter()
                .zip(customers)
                .position(|(draft, customer)| match (customer, reference) {
                    (Some(c), CustomerRef::UserId(id)) => c.user_id == *id,
                    (Some(c), CustomerRef::InternalUserId(id)) => c.id == *id,
                    (None, r) => draft.as_ref().is_some_and(|d| same_ref(&d.reference, r)),
                })
        };
        let mut placements_per_doc = Vec::new();
        for (i, doc) in self.documents.iter().enumerate() {
            let mut placed: Vec<(usize, Placement)> = Vec::new();
            let Some(entries) = &doc.entries else {
                placements_per_doc.push(placed);
                continue;
            };
            let mut covered = vec![false; self.signatories.len()];
            let mut last_page = HashSet::new();
            for e in entries {
                let path = format!("documents[{i}].signatureData[{}]", e.index);
                let Some(reference) = &e.signatory else {
                    continue;
                };
                let Some(k) = find(reference) else {
                    errors.push(
                        format!("{path}.signatory"),
                        "UNKNOWN_SIGNATORY",
                        "is not one of the process's signatories",
                    );
                    continue;
                };
                covered[k] = true;
                if let Some(placement) = e.placement {
                    if placement == Placement::LastPage && !last_page.insert(k) {
                        errors.push(
                            path,
                            "DUPLICATED",
                            "LAST_PAGE is given twice for this signatory",
                        );
                        continue;
                    }
                    placed.push((k, placement));
                }
            }
            if self.signatories_ok {
                for (k, covered) in covered.iter().enumerate() {
                    if !covered && counted[k] {
                        errors.push(
                            format!("documents[{i}].signatureData"),
                            "MISSING_SIGNATORY",
                            format!("signatories[{k}] has no signature on this document"),
                        );
                    }
                }
            }
            placements_per_doc.push(placed);
        }
        errors.into_result()?;
        let signatories = self
            .signatories
            .into_iter()
            .zip(customers)
            .map(|(draft, customer)| {
                let draft = draft.expect("validated");
                NewSignatory {
                    customer_seq: customer.as_ref().expect("validated").seq,
                    order: draft.order.expect("validated"),
                    kind: draft.kind.expect("validated"),
                }
            })
            .collect();
        let documents = self
            .documents
            .into_iter()
            .zip(placements_per_doc)
            .map(|(doc, placements)| {
                let (bytes, inspected) = doc.pdf.expect("validated");
                NewDocument {
                    name: doc.name.expect("validated"),
                    sha256: esign::sha256_hex(&bytes),
                    bytes,
                    page_count: inspected.pages.len() as u32,
                    placements,
                }
            })
            .collect();
        Ok(CreateProcess {
            name: self.name.expect("validated"),
            external_id: self.external_id,
            request_user: self.request_user,
            expiry_days: self.expiry_days,
            signatories,
            documents,
            callback: self.callback.expect("validated"),
            webhook: self.webhook.expect("validated"),
        })
    }
}

fn same_ref(a: &CustomerRef, b: &CustomerRef) -> bool {
    match (a, b) {
        (CustomerRef::UserId(x), CustomerRef::UserId(y)) => x == y,
        (CustomerRef::InternalUserId(x), CustomerRef::InternalUserId(y)) => x == y,
        _ => false,
    }
}

/// A document refused as too complex: its field and why. It answers the request on its own
/// (`DOCUMENT_TOO_COMPLEX`), and the documents after it are not parsed.
type TooComplex = Option<(String, String)>;

fn decode_pdf(
    content: Option<&String>,
    field: &str,
    errors: &mut FieldErrors,
    too_complex: &mut TooComplex,
) -> Option<(Vec<u8>, Inspection)> {
    let Some(text) = content else {
        errors.missing(field);
        return None;
    };
    // 4 characters of base64 per 3 bytes: refuse what cannot fit before decoding it.
    if text.len() > (esign::MAX_DOCUMENT_BYTES / 3 + 1) * 4 + 1024 {
        errors.push(field, "TOO_LARGE", "at most 10 MiB per document");
        return None;
    }
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = match engine.decode(&compact).or_else(|_| {
        base64::engine::general_purpose::STANDARD_NO_PAD.decode(compact.trim_end_matches('='))
    }) {
        Ok(b) => b,
        Err(_) => {
            errors.push(field, "INVALID_BASE64", "must be the PDF in base64");
            return None;
        }
    };
    if bytes.is_empty() {
        errors.push(field, "INVALID_PDF", "the document is empty");
        return None;
    }
    if bytes.len() > esign::MAX_DOCUMENT_BYTES {
        errors.push(field, "TOO_LARGE", "at most 10 MiB per document");
        return None;
    }
    if too_complex.is_some() {
        return None;
    }
    match pdf::inspect(&bytes) {
        Ok(inspected) => Some((bytes, inspected)),
        Err(DocumentError::TooComplex(why)) => {
            *too_complex = Some((field.to_string(), format!("the PDF is too complex: {why}")));
            None
        }
        Err(DocumentError::Encrypted) => {
            errors.push(
                field,
                "ENCRYPTED_PDF",
                "encrypted PDFs cannot be signed and sealed",
            );
            None
        }
        Err(problem) => {
            errors.push(field, "INVALID_PDF", problem.to_string());
            None
        }
    }
}

fn parse_document(
    i: usize,
    d: &DocumentIn,
    errors: &mut FieldErrors,
    too_complex: &mut TooComplex,
) -> DocumentDraft {
    let path = |f: &str| format!("documents[{i}].{f}");
    let name = required_text(d.document_name.as_ref(), &path("documentName"), 200, errors);
    let pdf = decode_pdf(
        d.content_base64.as_ref(),
        &path("contentBase64"),
        errors,
        too_complex,
    );
    let entries = list(
        d.signature_data.as_ref(),
        &path("signatureData"),
        esign::MAX_PLACEMENTS,
        errors,
    )
    .map(|items| {
        items
            .iter()
            .enumerate()
            .map(|(j, e)| {
                parse_entry(
                    &format!("documents[{i}].signatureData[{j}]"),
                    j,
                    e,
                    pdf.as_ref().map(|(_, p)| p),
                    errors,
                )
            })
            .collect()
    });
    DocumentDraft { name, pdf, entries }
}

fn parse_entry(
    path: &str,
    index: usize,
    e: &SignatureDataIn,
    pdf: Option<&Inspection>,
    errors: &mut FieldErrors,
) -> EntryDraft {
    let field = |f: &str| format!("{path}.{f}");
    let signatory = match &e.signatory {
        None => {
            errors.missing(field("signatory"));
            None
        }
        Some(s) => fields::customer_ref(
            s.user_id.as_ref(),
            s.internal_user_id.as_ref(),
            &field("signatory"),
            errors,
        ),
    };
    let placement = match e.mode.as_deref() {
        None => {
            errors.missing(field("mode"));
            None
        }
        Some("LAST_PAGE") => {
            for (present, name) in [
                (e.page.is_some(), "page"),
                (e.x.is_some(), "x"),
                (e.y.is_some(), "y"),
                (e.width.is_some(), "width"),
                (e.height.is_some(), "height"),
            ] {
                if present {
                    errors.push(
                        field(name),
                        "NOT_ALLOWED",
                        "LAST_PAGE signatures go on the appended signature page",
                    );
                }
            }
            Some(Placement::LastPage)
        }
        Some("MANUAL") => manual(path, e, pdf, errors),
        Some(_) => {
            errors.push(
                field("mode"),
                "INVALID_VALUE",
                "must be MANUAL or LAST_PAGE",
            );
            None
        }
    };
    EntryDraft {
        index,
        signatory,
        placement,
    }
}

fn manual(
    path: &str,
    e: &SignatureDataIn,
    pdf: Option<&Inspection>,
    errors: &mut FieldErrors,
) -> Option<Placement> {
    let field = |f: &str| format!("{path}.{f}");
    let page = match integer(e.page.as_ref(), &field("page"), errors) {
        Some(p) if p < 1 => {
            errors.push(field("page"), "OUT_OF_RANGE", "pages count from 1");
            None
        }
        Some(p) => match pdf {
            Some(info) if p as usize > info.pages.len() => {
                errors.push(
                    field("page"),
                    "PAGE_OUT_OF_RANGE",
                    format!("the document has {} page(s)", info.pages.len()),
                );
                None
            }
            _ => Some(p),
        },
        None => None,
    };
    let x = coordinate(e.x.as_ref(), &field("x"), false, errors);
    let y = coordinate(e.y.as_ref(), &field("y"), false, errors);
    let width = coordinate(e.width.as_ref(), &field("width"), true, errors);
    let height = coordinate(e.height.as_ref(), &field("height"), true, errors);
    let (page, x, y, width, height) = (page?, x?, y?, width?, height?);
    if let Some(info) = pdf {
        let size = info.pages[page as usize - 1];
        const SLACK: f64 = 1e-6;
        let mut inside = true;
        for (start, length, limit, start_name, length_name) in [
            (x, width, size.width, "x", "width"),
            (y, height, size.height, "y", "height"),
        ] {
            if start >= limit {
                errors.push(
                    field(start_name),
                    "OUTSIDE_PAGE",
                    format!("page {page} is {} x {} points", size.width, size.height),
                );
                inside = false;
            } else if start + length > limit + SLACK {
                errors.push(
                    field(length_name),
                    "OUTSIDE_PAGE",
                    format!(
                        "the box ends past the page edge: page {page} is {} x {} points",
                        size.width, size.height
                    ),
                );
                inside = false;
            }
        }
        if !inside {
            return None;
        }
    }
    Some(Placement::Manual {
        page: page as u32,
        x,
        y,
        width,
        height,
    })
}

/// The body of `POST /signature` checked exactly as the handler checks it (bytes → DTO → draft
/// → command), without a server: `customer` stands in for the database lookup of each
/// signatory. The validated command, or every problem found. Pure, so the fuzz targets
/// (`fuzz/`) can drive it with arbitrary bytes.
pub fn validate_request(
    bytes: &[u8],
    customer: impl Fn(&CustomerRef) -> Option<CustomerRow>,
) -> Result<CreateProcess, Error> {
    let draft = Draft::parse(super::json::parse(bytes)?);
    let customers: Vec<Option<CustomerRow>> = draft
        .signatories
        .iter()
        .map(|s| s.as_ref().and_then(|s| customer(&s.reference)))
        .collect();
    draft.finish(&customers)
}
