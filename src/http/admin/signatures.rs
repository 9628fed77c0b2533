//! Signature processes for staff: every commerce's processes, one process with its audit trail
//! (and whether its hash chain verifies), the sandbox's one-time codes, and the documents
//! (original and sealed) for download.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::session::Staff;
use crate::error::{Error, FieldErrors};
use crate::esign::ProcessState;
use crate::esign::audit;
use crate::esign::ceremony;
use crate::http::AppState;
use crate::http::envelope::Envelope;
use crate::http::error::{ApiError, ApiResult, ErrorBody};
use crate::http::signature::SignaturePayload;
use crate::http::wire::StateDto;
use crate::store::commerces;
use crate::store::signatures::{self, ProcessFilter};
use crate::store::staff::Role;

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
pub struct SignaturesQuery {
    /// A commerce code.
    commerce: Option<String>,
    /// PENDING, IN_PROGRESS, COMPLETED, CANCELLED, REJECTED or EXPIRED.
    state: Option<String>,
    /// 1 to 200, default 50.
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
}

/// Every signature process, newest first.
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
    let mut errors = FieldErrors::new();
    let get = |name: &str| query.get(name).filter(|v| !v.is_empty()).cloned();
    let process_state = get("state").and_then(|s| {
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
    let limit = match get("limit").map(|l| l.parse::<i64>()) {
        None => 50,
        Some(Ok(n)) if (1..=200).contains(&n) => n,
        Some(_) => {
            errors.push("query.limit", "OUT_OF_RANGE", "1 to 200");
            50
        }
    };
    let before_seq = match get("cursor").map(|c| c.parse::<i64>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            errors.push(
                "query.cursor",
                "INVALID_CURSOR",
                "pass nextCursor unchanged",
            );
            None
        }
    };
    errors.into_result()?;
    let filter = ProcessFilter {
        commerce_code: get("commerce"),
        state: process_state,
        before_seq,
        limit: limit + 1,
    };
    let (items, next_cursor) = state.store.read(|c| {
        let mut rows = signatures::list_processes(c, &filter)?;
        let next_cursor = if rows.len() as i64 > limit {
            rows.truncate(limit as usize);
            rows.last().map(|(p, _)| p.seq.to_string())
        } else {
            None
        };
        let mut items = Vec::with_capacity(rows.len());
        for (process, commerce) in rows {
            let view = ceremony::load_view(c, process)?;
            let p = &view.process;
            items.push(ListedSignatureDto {
                internal_id: p.id.clone(),
                commerce,
                process_name: p.process_name.clone(),
                external_process_id: p.external_process_id.clone(),
                state: StateDto {
                    id: p.state.id(),
                    name: p.state.name(),
                },
                signatories: view.signatories.len(),
                signed: view
                    .signatories
                    .iter()
                    .filter(|s| s.signed_at.is_some())
                    .count(),
                documents: view.documents.len(),
                created_at: p.created_at.clone(),
                expires_at: p.expires_at.clone(),
                finished_at: p.finished_at.clone(),
            });
        }
        Ok((items, next_cursor))
    })?;
    Ok(Envelope::ok(
        "SIGNATURES_OK",
        "signature processes",
        SignaturesPage { items, next_cursor },
    ))
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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffSignatoryDto {
    pub internal_id: String,
    pub name: String,
    pub rut: String,
    pub email: String,
    pub codes_sent: i64,
    /// Wrong RUTs, codes and identity answers; the link locks at 10.
    pub failures: i64,
    pub code_verified_at: Option<String>,
    /// In the sandbox: the code to type in the signing page. Null in production.
    pub sandbox_code: Option<SandboxCodeDto>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecordDto {
    pub position: i64,
    pub at: String,
    /// CREATED, VIEWED, CODE_SENT, CODE_FAILED, CODE_VERIFIED, IDENTITY_FAILED,
    /// IDENTITY_CONFIRMED, SIGNED, REJECTED, CANCELLED, EXPIRED, COMPLETED.
    pub action: String,
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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffSignatureDetail {
    pub commerce: String,
    /// As the merchant's lookup answers it.
    pub signature: SignaturePayload,
    pub signatories: Vec<StaffSignatoryDto>,
    pub audit: AuditTrailDto,
    pub sandbox: bool,
}

/// One process: the merchant's view, each signatory's verification state (with the sandbox
/// one-time code), and the audit trail with its chain verification.
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
    let sandbox = state.config.environment.is_sandbox();
    let detail = state.store.read(|c| {
        let process = signatures::process_by_id_any(c, &internal_id)?
            .ok_or(Error::not_found("signature process"))?;
        let commerce = commerces::by_id(c, process.commerce_id)?
            .map(|c| c.code)
            .unwrap_or_default();
        let trail = signatures::audit_of(c, process.seq)?;
        let verification = audit::verify(&process.id, &trail);
        let view = ceremony::load_view(c, process)?;
        let signatories = view
            .signatories
            .iter()
            .map(|s| StaffSignatoryDto {
                internal_id: s.id.clone(),
                name: s.full_name.clone(),
                rut: s.rut.clone(),
                email: s.email.clone(),
                codes_sent: s.codes_sent,
                failures: s.failures,
                code_verified_at: s.code_verified_at.clone(),
                sandbox_code: s.code_plain.as_ref().filter(|_| sandbox).map(|code| {
                    SandboxCodeDto {
                        code: code.clone(),
                        expires_at: s.code_expires_at.clone(),
                        used: s.code_verified_at.is_some(),
                        attempts: s.code_attempts,
                    }
                }),
            })
            .collect();
        Ok(StaffSignatureDetail {
            commerce,
            signature: SignaturePayload::new(&view, &state.public_base_url),
            signatories,
            audit: AuditTrailDto {
                valid: verification.valid,
                broken_at: verification.broken_at,
                head: verification.head,
                records: trail
                    .into_iter()
                    .map(|r| AuditRecordDto {
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
            },
            sandbox,
        })
    })?;
    Ok(Envelope::ok("SIGNATURE_OK", "signature process", detail))
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
    let (name, bytes) = state.store.read(|c| {
        let process = signatures::process_by_id_any(c, &internal_id)?
            .ok_or(Error::not_found("signature process"))?;
        let doc = signatures::documents_of(c, process.seq)?
            .into_iter()
            .find(|d| d.id == document_id)
            .ok_or(Error::not_found("document"))?;
        let bytes = if sealed {
            signatures::sealed_bytes(c, doc.seq)?.ok_or(Error::not_found("sealed document"))?
        } else {
            signatures::original_bytes(c, doc.seq)?
        };
        Ok((doc.name, bytes))
    })?;
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
