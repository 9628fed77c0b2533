//! Signature processes for staff: every commerce's processes (filtered, searched without
//! accents, counted), one process with its signatories, documents and audit trail, the
//! re-verification of that trail's hash chain, and the documents (original and sealed) for
//! download. The sandbox's one-time codes are shown to operators and admins only: reading one
//! to a customer lets that customer sign.

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::Extension;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::HeaderMap;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::paging::Params;
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::json::Body;
use crate::signature::{SignaturePayload, SignatureRequest};
use crate::users::optional_text;
use crate::wire::{ActivationFailureReason, StateDto};
use mandato_core::domain::activation::ActivationFailure;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::esign::audit;
use mandato_engine::esign::ceremony::{CancelOutcome, ProcessView};
use mandato_engine::esign::{ProcessState, SignatureType, pdf};
use mandato_engine::records::{
    AuditRow, MandateRow, ProcessFilter, ProcessRow, Role, SignatoryRow,
};
use mandato_engine::staff::signatures::{ProcessPage, ProcessRecords};

/// The states of a process, by name.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(dead_code)]
pub enum ProcessStateName {
    Pending,
    InProgress,
    Completed,
    Cancelled,
    Rejected,
    Expired,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct SignaturesQuery {
    /// A commerce code.
    commerce: Option<String>,
    #[param(value_type = Option<ProcessStateName>, inline)]
    state: Option<String>,
    /// Created on or after: a date (environment time zone) or an RFC 3339 date-time.
    from: Option<String>,
    /// Created on or before that date (a date-time: before it).
    to: Option<String>,
    /// A signatory's name, e-mail or RUT (with or without dots and dash), a process id, name
    /// or external id, or part of one; accents and case do not matter.
    #[param(max_length = 200)]
    q: Option<String>,
    #[param(minimum = 1, maximum = 200, default = 50)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedSignatureDto {
    pub internal_id: String,
    pub commerce: String,
    pub process_name: String,
    pub external_process_id: Option<String>,
    pub state: StateDto,
    pub signatories: usize,
    pub signed: usize,
    pub documents: usize,
    /// In upload order.
    pub document_names: Vec<String>,
    pub created_at: String,
    /// Business time.
    pub expires_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignaturesPage {
    pub items: Vec<ListedSignatureDto>,
    pub next_cursor: Option<String>,
    /// How many processes the filters select, on every page.
    pub total: i64,
}

/// The most text a search takes: longer is no name, e-mail, RUT or id.
const MAX_SEARCH: usize = 200;

fn list_filter(params: &Params, state: &AppState, errors: &mut FieldErrors) -> ProcessFilter {
    let process_state = params.get("state").and_then(|s| {
        let parsed = ProcessState::from_name(&s);
        if parsed.is_none() {
            errors.push(
                "query.state",
                "INVALID_VALUE",
                "PENDING, IN_PROGRESS, COMPLETED, CANCELLED, REJECTED or EXPIRED",
            );
        }
        parsed
    });
    let text = params.get("q");
    if text
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_SEARCH)
    {
        errors.push(
            "query.q",
            "TOO_LONG",
            format!("at most {MAX_SEARCH} characters"),
        );
    }
    ProcessFilter {
        commerce_id: params.commerce_id(state, errors),
        state: process_state,
        created_from: params.instant("from", false, state, errors),
        created_to: params.instant("to", true, state, errors),
        text,
    }
}

fn listed(view: ProcessView, commerce: String) -> ListedSignatureDto {
    let p = view.process;
    ListedSignatureDto {
        internal_id: p.id,
        commerce,
        process_name: p.process_name,
        external_process_id: p.external_process_id,
        state: state_dto(p.state),
        signatories: view.signatories.len(),
        signed: view
            .signatories
            .iter()
            .filter(|s| s.signed_at.is_some())
            .count(),
        documents: view.documents.len(),
        document_names: view.documents.into_iter().map(|d| d.name).collect(),
        created_at: p.created_at,
        expires_at: p.expires_at,
        finished_at: p.finished_at,
    }
}

fn state_dto(state: ProcessState) -> StateDto {
    StateDto {
        id: state.id(),
        name: state.name(),
    }
}

/// Every signature process, newest first: by commerce, state, creation date and a search.
#[utoipa::path(get, path = "/signatures", tag = "staff", params(SignaturesQuery),
    responses(
        (status = 200, description = "SIGNATURES_OK", body = Envelope<SignaturesPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<SignaturesPage>> {
    staff.require(Role::Viewer)?;
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 200, &mut errors);
    let before_seq = params.seq_cursor(&mut errors);
    let filter = list_filter(&params, &state, &mut errors);
    errors.into_result()?;
    let ProcessPage {
        items,
        next_before,
        total,
    } = state.signature_processes(&filter, before_seq, limit)?;
    let page = SignaturesPage {
        items: items
            .into_iter()
            .map(|(view, commerce)| listed(view, commerce))
            .collect(),
        next_cursor: next_before.map(|seq| seq.to_string()),
        total,
    };
    Ok(Envelope::ok("SIGNATURES_OK", "signature processes", page))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCodeDto {
    /// The current one-time code: sandbox only, never shown in the signing page.
    pub code: String,
    pub expires_at: Option<String>,
    /// Already entered correctly.
    pub used: bool,
    /// Wrong entries of this code.
    pub attempts: i64,
}

/// FES (simple: RUT and a one-time code), FEA (advanced: and the identity card's serial) or FAO
/// (advanced with an online identity check).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SignatureKind {
    Fes,
    Fea,
    Fao,
}

impl From<SignatureType> for SignatureKind {
    fn from(kind: SignatureType) -> Self {
        match kind {
            SignatureType::Fes => SignatureKind::Fes,
            SignatureType::Fea => SignatureKind::Fea,
            SignatureType::Fao => SignatureKind::Fao,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffSignatoryDto {
    pub internal_id: String,
    /// Signing order: lower first, equal in parallel.
    pub order: i64,
    pub kind: SignatureKind,
    /// 1 PENDING, 2 SIGNED, 3 REJECTED.
    pub state: StateDto,
    pub name: String,
    pub rut: String,
    pub email: String,
    pub viewed_at: Option<String>,
    pub signed_at: Option<String>,
    pub rejected_at: Option<String>,
    pub rejection_reason: Option<String>,
    pub codes_sent: i64,
    /// Wrong RUTs, codes and identity answers; the link locks at 10.
    pub failures: i64,
    pub code_verified_at: Option<String>,
    /// In the sandbox, to operators and admins: the code to type in the signing page. Null in
    /// production, to viewers, and before a code was sent.
    pub sandbox_code: Option<SandboxCodeDto>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SealedDocumentDto {
    /// Lowercase hex SHA-256 of the sealed PDF.
    pub sha256: String,
    /// Read from the sealed PDF's page tree: the original's pages, the appended signature page
    /// (when a signatory signs on it) and the completion certificate.
    pub page_count: i64,
    pub size_bytes: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffDocumentDto {
    /// `doc_...`: the path segment of its downloads.
    pub internal_id: String,
    pub document_name: String,
    pub page_count: i64,
    pub size_bytes: i64,
    /// Lowercase hex SHA-256 of the bytes uploaded.
    pub sha256: String,
    /// Once the process completed.
    pub sealed: Option<SealedDocumentDto>,
}

/// Who did an act of the trail.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActorKind {
    /// A signatory, on the signing pages.
    Signatory,
    /// The commerce (its API, or staff acting for it): creation and cancellation.
    Merchant,
    /// The engine: expiry and the seal.
    System,
    /// A staff member, from the back office: a cancellation (the staff audit log names who).
    Staff,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActorDto {
    pub kind: ActorKind,
    /// The signatory's name, the process's `requestUser` (or the commerce's code) for the
    /// merchant; null for the engine.
    pub name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecordDto {
    pub position: i64,
    pub at: String,
    /// CREATED, VIEWED, CODE_SENT, CODE_FAILED, CODE_VERIFIED, IDENTITY_FAILED,
    /// IDENTITY_CONFIRMED, SIGNED, REJECTED, CANCELLED, EXPIRED, COMPLETED.
    pub action: String,
    pub actor: ActorDto,
    pub signatory_id: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// `[{"documentName", "sha256"}]` at the time of the act.
    #[schema(value_type = Vec<Object>)]
    pub documents: Value,
    #[schema(value_type = Object)]
    pub detail: Value,
    pub prev_hash: String,
    pub hash: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditTrailDto {
    /// Whether every record's hash and link recompute.
    pub valid: bool,
    /// The first record that does not.
    pub broken_at: Option<i64>,
    pub head: Option<String>,
    pub records: Vec<AuditRecordDto>,
}

/// The mandate a signature-gated activation started this process for.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivatedMandateDto {
    /// `man_...`: the staff UI's mandate detail.
    pub internal_id: String,
    /// The commerce's id of the mandate.
    pub id: String,
    pub name: String,
    pub state: StateDto,
    /// Why this process ended without activating it; null while it may still.
    pub failure: Option<ActivationFailureReason>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffSignatureDetail {
    pub commerce: String,
    /// As the merchant's lookup answers it.
    pub signature: SignaturePayload,
    /// In signing order (then as the request listed them).
    pub signatories: Vec<StaffSignatoryDto>,
    pub documents: Vec<StaffDocumentDto>,
    pub audit: AuditTrailDto,
    pub sandbox: bool,
    /// Whether this staff member may read the sandbox's one-time codes: operators and admins,
    /// in the sandbox.
    pub codes_visible: bool,
    /// Null unless the process is a mandate's signature-gated activation.
    pub mandate: Option<ActivatedMandateDto>,
}

fn signatory_dto(s: &SignatoryRow, codes_visible: bool) -> StaffSignatoryDto {
    StaffSignatoryDto {
        internal_id: s.id.clone(),
        order: s.order,
        kind: s.kind.into(),
        state: StateDto {
            id: s.state.id(),
            name: s.state.name(),
        },
        name: s.full_name.clone(),
        rut: s.rut.clone(),
        email: s.email.clone(),
        viewed_at: s.viewed_at.clone(),
        signed_at: s.signed_at.clone(),
        rejected_at: s.rejected_at.clone(),
        rejection_reason: s.rejection_reason.clone(),
        codes_sent: s.codes_sent,
        failures: s.failures,
        code_verified_at: s.code_verified_at.clone(),
        sandbox_code: s
            .code_plain
            .as_ref()
            .filter(|_| codes_visible)
            .map(|code| SandboxCodeDto {
                code: code.clone(),
                expires_at: s.code_expires_at.clone(),
                used: s.code_verified_at.is_some(),
                attempts: s.code_attempts,
            }),
    }
}

fn actor(record: &AuditRow, process: &ProcessRow, commerce: &str, view: &ProcessView) -> ActorDto {
    if let Some(id) = &record.signatory_id {
        let name = view
            .signatories
            .iter()
            .find(|s| &s.id == id)
            .map(|s| s.full_name.clone());
        return ActorDto {
            kind: ActorKind::Signatory,
            name,
        };
    }
    if record.action == "CANCELLED"
        && record.detail.get("by").and_then(Value::as_str) == Some("STAFF")
    {
        return ActorDto {
            kind: ActorKind::Staff,
            name: None,
        };
    }
    match record.action.as_str() {
        "CREATED" | "CANCELLED" => ActorDto {
            kind: ActorKind::Merchant,
            name: Some(
                process
                    .request_user
                    .clone()
                    .unwrap_or_else(|| commerce.to_string()),
            ),
        },
        _ => ActorDto {
            kind: ActorKind::System,
            name: None,
        },
    }
}

fn audit_dto(trail: Vec<AuditRow>, commerce: &str, view: &ProcessView) -> AuditTrailDto {
    let verification = audit::verify(&view.process.id, &trail);
    AuditTrailDto {
        valid: verification.valid,
        broken_at: verification.broken_at,
        head: verification.head,
        records: trail
            .into_iter()
            .map(|r| AuditRecordDto {
                actor: actor(&r, &view.process, commerce, view),
                position: r.position,
                at: r.at,
                action: r.action,
                signatory_id: r.signatory_id,
                ip: r.ip,
                user_agent: r.user_agent,
                documents: r.documents,
                detail: r.detail,
                prev_hash: r.prev_hash,
                hash: r.hash,
            })
            .collect(),
    }
}

fn activated_mandate(
    (mandate, failure): (MandateRow, Option<ActivationFailure>),
) -> ActivatedMandateDto {
    ActivatedMandateDto {
        internal_id: mandate.id,
        id: mandate.external_id,
        name: mandate.name,
        state: StateDto {
            id: mandate.state.id(),
            name: mandate.state.name(),
        },
        failure: failure.map(|f| match f {
            ActivationFailure::SignatureRejected => ActivationFailureReason::SignatureRejected,
            ActivationFailure::SignatureExpired => ActivationFailureReason::SignatureExpired,
            ActivationFailure::SignatureCancelled => ActivationFailureReason::SignatureCancelled,
        }),
    }
}

/// The page count of each sealed document, read from its PDF off the async runtime and under
/// the PDF permits (a sealed document is as large as its original, up to 10 MiB).
async fn sealed_page_counts(sealed: Vec<Vec<u8>>) -> Result<Vec<i64>, Error> {
    let _turn = pdf::turn(pdf::Party::Installation).await;
    tokio::task::spawn_blocking(move || {
        sealed
            .iter()
            .map(|bytes| {
                pdf::page_count(bytes).map(|n| n as i64).map_err(|e| {
                    Error::Internal(anyhow::anyhow!("a sealed document does not read: {e}"))
                })
            })
            .collect()
    })
    .await
    .map_err(|e| Error::Internal(e.into()))?
}

/// One process: its signatories in signing order (with the sandbox one-time code for operators
/// and admins), its documents with their sealed versions, the audit trail with its chain
/// verification, and the mandate it activates, if any.
#[utoipa::path(get, path = "/signatures/{internalId}", tag = "staff",
    params(("internalId" = String, Path)),
    responses(
        (status = 200, description = "SIGNATURE_OK", body = Envelope<StaffSignatureDetail>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "SIGNATURE_PROCESS_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn detail(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
) -> ApiResult<Envelope<StaffSignatureDetail>> {
    staff.require(Role::Viewer)?;
    let detail = load_detail(&state, &staff, &internal_id).await?;
    Ok(Envelope::ok("SIGNATURE_OK", "signature process", detail))
}

/// One process as its staff page shows it.
async fn load_detail(
    state: &AppState,
    staff: &Staff,
    internal_id: &str,
) -> Result<StaffSignatureDetail, ApiError> {
    let sandbox = state.config.environment.is_sandbox();
    let codes_visible = sandbox && staff.member.role >= Role::Operator;
    let ProcessRecords {
        view,
        commerce,
        trail,
        mandate,
        sealed,
    } = state.signature_process(internal_id)?;
    let mut detail = {
        let mut signatories: Vec<StaffSignatoryDto> = view
            .signatories
            .iter()
            .map(|s| signatory_dto(s, codes_visible))
            .collect();
        signatories.sort_by_key(|s| s.order);
        let documents = view
            .documents
            .iter()
            .map(|d| StaffDocumentDto {
                internal_id: d.id.clone(),
                document_name: d.name.clone(),
                page_count: d.page_count,
                size_bytes: d.size_bytes,
                sha256: d.sha256.clone(),
                sealed: None,
            })
            .collect();
        StaffSignatureDetail {
            signature: SignaturePayload::new(&view, &state.public_base_url),
            audit: audit_dto(trail, &commerce, &view),
            commerce,
            signatories,
            documents,
            sandbox,
            codes_visible,
            mandate: mandate.map(activated_mandate),
        }
    };
    let (ids, bytes): (Vec<String>, Vec<Vec<u8>>) = sealed.into_iter().unzip();
    let sizes: Vec<i64> = bytes.iter().map(|b| b.len() as i64).collect();
    let pages = sealed_page_counts(bytes).await?;
    for ((id, size), page_count) in ids.into_iter().zip(sizes).zip(pages) {
        let Some(document) = detail.documents.iter_mut().find(|d| d.internal_id == id) else {
            continue;
        };
        let sha256 = detail
            .signature
            .documents
            .iter()
            .find(|d| d.internal_id == id)
            .and_then(|d| d.sealed_sha256.clone())
            .unwrap_or_default();
        document.sealed = Some(SealedDocumentDto {
            sha256,
            page_count,
            size_bytes: size,
        });
    }
    Ok(detail)
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessChainDto {
    pub internal_id: String,
    /// Whether every record's hash and link recompute. A process without any record (its
    /// CREATED act removed) does not.
    pub valid: bool,
    /// The position of the first record that does not hold.
    pub broken_at: Option<i64>,
    /// How many records were checked.
    pub records: i64,
    /// The last record's hash: it commits to the whole trail.
    pub head: Option<String>,
    /// When the check ran.
    pub checked_at: String,
}

/// Recomputes the hash chain of one process's audit trail from the stored records, as
/// `mandato audit verify` does for every process. Any staff role.
#[utoipa::path(get, path = "/signatures/{internalId}/audit/verify", tag = "staff",
    params(("internalId" = String, Path)),
    responses(
        (status = 200, description = "SIGNATURE_CHAIN_CHECKED", body = Envelope<ProcessChainDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "SIGNATURE_PROCESS_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn verify_chain(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
) -> ApiResult<Envelope<ProcessChainDto>> {
    staff.require(Role::Viewer)?;
    let checked_at = mandato_core::clock::timestamp(state.clock.now());
    let (process_id, trail) = state.signature_trail(&internal_id)?;
    let check = {
        let verification = audit::verify(&process_id, &trail);
        let empty = trail.is_empty();
        ProcessChainDto {
            internal_id: process_id,
            valid: verification.valid && !empty,
            broken_at: if empty {
                Some(1)
            } else {
                verification.broken_at
            },
            records: trail.len() as i64,
            head: verification.head,
            checked_at,
        }
    };
    Ok(Envelope::ok(
        "SIGNATURE_CHAIN_CHECKED",
        "signature audit chain checked",
        check,
    ))
}

/// Download a document of a process: `original` (as uploaded) or `sealed` (once COMPLETED).
#[utoipa::path(get, path = "/signatures/{internalId}/documents/{documentId}/{version}", tag = "staff",
    params(("internalId" = String, Path), ("documentId" = String, Path, description = "`doc_...`"),
        ("version" = String, Path, description = "`original` or `sealed`")),
    responses(
        (status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 400, description = "version is not original or sealed", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "SIGNATURE_PROCESS_NOT_FOUND, DOCUMENT_NOT_FOUND, or not sealed yet", body = ErrorBody),
    ))]
pub async fn download(
    State(state): State<AppState>,
    staff: Staff,
    Path((internal_id, document_id, version)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    staff.require(Role::Viewer)?;
    let sealed = match version.as_str() {
        "original" => false,
        "sealed" => true,
        _ => {
            return Err(Error::validation(
                "path.version",
                "INVALID_VALUE",
                "must be original or sealed",
            )
            .into());
        }
    };
    let (name, bytes) = state.signature_document(&internal_id, &document_id, sealed)?;
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let filename = if sealed {
        format!("sellado-{safe}")
    } else {
        safe
    };
    Ok((
        [
            (header::CONTENT_TYPE, "application/pdf".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        bytes,
    )
        .into_response())
}

/// The staff body of a signature process: the merchant's `POST /signature` body and the
/// commerce's code.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StaffSignatureRequest {
    /// The code of the commerce the process is for; every signatory is one of its customers.
    pub commerce: Option<String>,
    #[serde(flatten)]
    pub request: SignatureRequest,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffSignatureCreated {
    pub commerce: String,
    /// As `POST /api/v1/signature` answers it: each signatory's `signingUrl` is that person's
    /// own link.
    pub signature: SignaturePayload,
}

/// Start a signature process for a commerce (operator or admin), as the merchant's
/// `POST /signature` does: the same body (signatories among the commerce's customers, PDFs in
/// base64 of at most 10 MiB each, where each signatory signs on each, the callback and webhook
/// URLs), the same 16 MiB limit, the same rules and paths in a refusal. `process.requestUser`
/// defaults to the staff member's e-mail. Recorded in the staff audit log
/// (`signature.create`).
#[utoipa::path(post, path = "/signatures", tag = "staff",
    request_body = StaffSignatureRequest,
    responses(
        (status = 201, description = "SIGNATURE_CREATED", body = Envelope<StaffSignatureCreated>),
        (status = 400, description = "Invalid field (as POST /api/v1/signature, and `commerce`: REQUIRED, COMMERCE_NOT_FOUND), DUPLICATED_EXTERNAL_PROCESS_ID, WEBHOOK_URL_NOT_ALLOWED, DOCUMENT_TOO_COMPLEX", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE: over 16 MiB", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    staff: Staff,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    Body(mut body): Body<Value>,
) -> ApiResult<Envelope<StaffSignatureCreated>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let code = match body.as_object_mut().and_then(|o| o.remove("commerce")) {
        None | Some(Value::Null) => None,
        Some(Value::String(code)) => Some(code),
        Some(_) => {
            errors.push("commerce", "INVALID_TYPE", "must be a commerce code");
            None
        }
    };
    let commerce = match code.as_deref().map(str::trim) {
        _ if !errors.is_empty() => None,
        None | Some("") => {
            errors.missing("commerce");
            None
        }
        Some(code) => match state.engine.staff_commerce(code) {
            Ok(commerce) => Some(commerce),
            Err(Error::Validation(found)) => {
                for e in found {
                    errors.push(e.field, &e.code, e.message);
                }
                None
            }
            Err(other) => return Err(other.into()),
        },
    };
    let mut request: SignatureRequest = serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "body".to_string()
        } else {
            path
        };
        Error::validation(field, "INVALID_TYPE", e.inner().to_string())
    })?;
    if let Some(process) = request.process.as_mut()
        && process
            .request_user
            .as_deref()
            .is_none_or(|u| u.trim().is_empty())
    {
        process.request_user = Some(staff.email().to_string());
    }
    // Without its commerce the signatories cannot be looked for: that is answered first.
    errors.into_result()?;
    let commerce = commerce.expect("validated");
    let command = crate::signature::validated_command(&state, &commerce, request).await?;
    let code = commerce.code.clone();
    let view = state
        .engine
        .staff_create_signature(
            staff.email(),
            commerce,
            crate::signature::client(&headers, connect),
            command,
        )
        .await?;
    Ok(Envelope::created(
        "SIGNATURE_CREATED",
        "signature process created",
        StaffSignatureCreated {
            commerce: code,
            signature: SignaturePayload::new(&view, &state.public_base_url),
        },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct StaffSignatureCancelRequest {
    /// Why, for the staff audit log: up to 500 characters.
    pub reason: Option<String>,
}

/// Cancel a PENDING or IN_PROGRESS process of any commerce (operator or admin), as the
/// merchant's `DELETE /signature/cancel` does (CONTRACT 8): in one transaction it becomes
/// CANCELLED, its trail gets the CANCELLED act by STAFF, `SIGNATURE_CANCELLED` goes to its
/// webhook, and the staff audit log records who (`signature.cancel`). Documents and trail are
/// kept. Already cancelled is 410; COMPLETED, REJECTED or EXPIRED is 400.
#[utoipa::path(post, path = "/signatures/{internalId}/cancel", tag = "staff",
    params(("internalId" = String, Path)),
    request_body = StaffSignatureCancelRequest,
    responses(
        (status = 200, description = "SIGNATURE_CANCELLED: the process afterwards", body = Envelope<StaffSignatureDetail>),
        (status = 400, description = "reason too long; SIGNATURE_STATE_CONFLICT: COMPLETED, REJECTED or EXPIRED", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "SIGNATURE_PROCESS_NOT_FOUND", body = ErrorBody),
        (status = 410, description = "SIGNATURE_ALREADY_CANCELLED", body = ErrorBody),
    ))]
pub async fn cancel(
    State(state): State<AppState>,
    staff: Staff,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    Path(internal_id): Path<String>,
    Body(body): Body<StaffSignatureCancelRequest>,
) -> ApiResult<Envelope<StaffSignatureDetail>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let reason = optional_text(body.reason.as_ref(), "reason", 500, &mut errors);
    errors.into_result()?;
    let outcome = state
        .engine
        .staff_cancel_signature(
            staff.email(),
            &internal_id,
            crate::signature::client(&headers, connect),
            reason,
        )
        .await?;
    match outcome {
        CancelOutcome::Cancelled => {}
        CancelOutcome::AlreadyCancelled => {
            return Err(Error::Gone {
                name: "SIGNATURE_ALREADY_CANCELLED",
                message: "the signature process was already cancelled".into(),
            }
            .into());
        }
        CancelOutcome::Final(s) => {
            return Err(Error::refused(
                "SIGNATURE_STATE_CONFLICT",
                format!("a {} signature process cannot be cancelled", s.name()),
            )
            .into());
        }
    }
    let detail = load_detail(&state, &staff, &internal_id).await?;
    Ok(Envelope::ok(
        "SIGNATURE_CANCELLED",
        "signature process cancelled",
        detail,
    ))
}
