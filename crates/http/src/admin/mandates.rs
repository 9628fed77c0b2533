//! Mandates for staff: the list with filters and keyset pages, one mandate with its schedule,
//! installments and each one's state history, and the staff actions on it (mark paid with
//! evidence, annul, add installments to a DYNAMIC mandate, cancel with a reason). The actions
//! run the merchant operations of `operations/` for the mandate's commerce, so the rules and
//! the webhook events are exactly those of the merchant API.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::paging::{Params, stored_amount};
use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::fields;
use crate::installments::PaymentIn;
use crate::json::Body;
use crate::mandates::InstallmentIn;
use crate::users::{optional_text, required_text};
use crate::wire::{CustomerDto, InstallmentDto, MandateDto, StateDto};
use mandato_core::domain::state::{InstallmentState, MandateState, MandateType, PaymentMethod};
use mandato_core::error::{Error, FieldErrors, Result};
use mandato_engine::operations::installments::{
    self as installment_ops, Action, AddInstallments, ChangeStatus, OwnedRefs, PaymentEvidence,
};
use mandato_engine::operations::{Ctx, CustomerRef, MandateRef};
use mandato_engine::records::{
    AcceptanceRow, Db, EventRow, Keyset, MandateColumn, MandateFilter, MandateLine, NewInstallment,
    Role, StoredJson,
};
use mandato_engine::staff::mandates::{
    EVIDENCE_MAX_BYTES, EvidenceFileMeta, EvidenceUpload, MandateRecords, attach_evidence,
    check_selection, customer_of_mandate, evidence_content_type,
};

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct MandatesQuery {
    /// State names or ids, comma-separated (`PENDING,ACTIVE` or `1,2`).
    state: Option<String>,
    /// Type names or ids, comma-separated (`DYNAMIC,SUBSCRIPTION`).
    #[param(rename = "type")]
    mandate_type: Option<String>,
    /// Only this commerce (its code).
    commerce: Option<String>,
    /// The customer: internalUserId (usr_...), userId or RUT (`12345678-5`).
    customer: Option<String>,
    /// The mandate's id: ours (man_...) or the merchant's, exactly.
    id: Option<String>,
    /// Words found in the mandate (its mandateId or part of it, our id, its name) or its
    /// customer (name in any order, RUT with or without dots and dash or part of it, userId
    /// or part of it, e-mail); accents and case are ignored. Words of fewer than three
    /// characters are matched only at the start of a mandateId.
    q: Option<String>,
    /// The order (default `createdAt.desc`); a cursor continues the order it was given in.
    #[param(inline)]
    sort: Option<MandateSort>,
    /// Created on or after: a date (environment time zone) or an RFC 3339 date-time.
    #[param(rename = "createdFrom")]
    created_from: Option<String>,
    /// Created on or before that date (a date-time: before it).
    #[param(rename = "createdTo")]
    created_to: Option<String>,
    /// 1 to 200, default 50.
    #[param(minimum = 1, maximum = 200, default = 50)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerBrief {
    pub internal_user_id: String,
    pub user_id: String,
    pub rut: String,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateLineDto {
    pub internal_id: String,
    pub id: String,
    #[serde(rename = "type")]
    pub mandate_type: &'static str,
    pub name: String,
    pub state: StateDto,
    pub commerce: String,
    pub customer: CustomerBrief,
    /// `charges.amount` (per period, or the total of a ONEPAY), or a DYNAMIC's `maxAmount`.
    #[schema(value_type = Option<f64>)]
    pub amount: Option<serde_json::Number>,
    pub currency_id: Option<String>,
    pub periodicity: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

fn state_dto<T: Copy>(
    id: i64,
    from_id: fn(i64) -> Option<T>,
    name: fn(T) -> &'static str,
) -> StateDto {
    StateDto {
        id,
        name: from_id(id).map_or("UNKNOWN", name),
    }
}

impl From<&MandateLine> for MandateLineDto {
    fn from(m: &MandateLine) -> Self {
        let number = |v: &Value| match v {
            Value::Number(n) => Some(n.clone()),
            _ => None,
        };
        MandateLineDto {
            internal_id: m.id.clone(),
            id: m.external_id.clone(),
            mandate_type: MandateType::from_id(m.type_id).map_or("UNKNOWN", MandateType::name),
            name: m.name.clone(),
            state: state_dto(m.state_id, MandateState::from_id, MandateState::name),
            commerce: m.commerce_code.clone(),
            customer: CustomerBrief {
                internal_user_id: m.customer_id.clone(),
                user_id: m.customer_user_id.clone(),
                rut: m.customer_rut.clone(),
                name: m.customer_name.clone(),
            },
            amount: number(&m.charges["amount"]).or_else(|| number(&m.charges["maxAmount"])),
            currency_id: m.charges["currencyId"].as_str().map(str::to_string),
            periodicity: m.charges["periodicity"].as_str().map(str::to_string),
            created_at: m.created_at.clone(),
            updated_at: m.updated_at.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandatesPage {
    pub items: Vec<MandateLineDto>,
    /// How many mandates the filters select, every page together.
    pub total: i64,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

fn mandate_state_id(text: &str) -> Option<i64> {
    MandateState::from_name(text)
        .or_else(|| text.parse().ok().and_then(MandateState::from_id))
        .map(MandateState::id)
}

fn mandate_type_id(text: &str) -> Option<i64> {
    MandateType::from_name(text)
        .or_else(|| text.parse().ok().and_then(MandateType::from_id))
        .map(MandateType::id)
}

/// The orders of the mandates list, as the `sort` parameter writes them.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub enum MandateSort {
    #[serde(rename = "createdAt.desc")]
    CreatedAtDesc,
    #[serde(rename = "createdAt.asc")]
    CreatedAtAsc,
    #[serde(rename = "mandateId.asc")]
    MandateIdAsc,
    #[serde(rename = "mandateId.desc")]
    MandateIdDesc,
}

/// The orders of the mandates list: wire name, store column.
pub const MANDATE_SORTS: &[(&str, MandateColumn)] = &[
    ("createdAt", MandateColumn::CreatedAt),
    ("mandateId", MandateColumn::MandateId),
];

/// Mandates of every commerce, newest first or in the order asked, with filters and text
/// search, and how many there are in all; keyset pages stay fast however many mandates there
/// are.
#[utoipa::path(get, path = "/mandates", tag = "staff", params(MandatesQuery),
    responses(
        (status = 200, description = "MANDATES_OK", body = Envelope<MandatesPage>),
        (status = 400, description = "Invalid filter", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    _staff: Staff,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<MandatesPage>> {
    let params = Params(query);
    let mut errors = FieldErrors::new();
    let limit = params.limit(50, 200, &mut errors);
    let states = params.ids(
        "state",
        mandate_state_id,
        "PENDING, ACTIVE, CANCELLED, FINISHED, DELETED",
        &mut errors,
    );
    let types = params.ids(
        "type",
        mandate_type_id,
        "DYNAMIC, PERMANENT, SUBSCRIPTION, ONEPAY",
        &mut errors,
    );
    let commerce_id = params.commerce_id(&state, &mut errors);
    let created_from = params.instant("createdFrom", false, &state, &mut errors);
    let created_to = params.instant("createdTo", true, &state, &mut errors);
    let sort = params.sort(MANDATE_SORTS, &mut errors);
    let after = params.sorted_keyset(&sort, MandateColumn::CreatedAt, &mut errors);
    errors.into_result()?;
    let customer = params.get("customer");
    let filter = MandateFilter {
        states,
        types,
        commerce_id,
        customer_seqs: None,
        id: params.get("id"),
        text: params.get("q"),
        created_from,
        created_to,
        sort,
        after,
        limit: limit + 1,
    };
    let (mut rows, total) = state.mandates_page(customer.as_deref(), filter)?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| {
            Keyset {
                key: sort.column.key_of(r),
                seq: r.seq,
            }
            .encode()
        })
    } else {
        None
    };
    Ok(Envelope::ok(
        "MANDATES_OK",
        "mandates",
        MandatesPage {
            items: rows.iter().map(MandateLineDto::from).collect(),
            total,
            next_cursor,
        },
    ))
}

/// A state as an event body names it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventState {
    pub id: i64,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub state: EventState,
    /// When the installment reached that state.
    pub at: String,
    /// The payment event that told the merchant; null for the creation.
    pub event_id: Option<String>,
    /// That event's delivery: PENDING, DELIVERED, FAILED or NO_URL.
    pub delivery_state: Option<String>,
    pub rejection_code: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChargeAttemptDto {
    pub attempt: i64,
    pub business_date: String,
    /// IN_PROCESS, IN_VALIDATION, PAID or REJECTED.
    pub state: String,
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: String,
    pub authorization_code: Option<String>,
    pub rejection_code: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffInstallment {
    #[serde(flatten)]
    pub installment: InstallmentDto,
    /// Oldest first: created PENDING, then every state change.
    pub history: Vec<HistoryEntry>,
    pub charge_attempts: Vec<ChargeAttemptDto>,
    /// Whether staff may mark it paid, or annul it, now.
    pub can_pay: bool,
    pub can_annul: bool,
    /// Whether staff may refund it through its acquirer now: PAID by a card charge of the
    /// charging engine (`POST /installments/{internalId}/refund`).
    pub can_refund: bool,
    /// A REJECTED installment scheduled for another attempt: the business date of that
    /// attempt, `YYYY-MM-DD` (a date already attempted means the next charging run). Null when
    /// no retry remains: after its final decline, or a hard decline the customer has not
    /// answered with a new payment method.
    pub next_retry_date: Option<String>,
    /// A UF installment the charging engine charged in pesos: the pesos of its latest charge
    /// attempt and the UF value used; null for other currencies and before any attempt.
    pub uf_charge: Option<UfChargeDto>,
    /// The file staff attached to its manual payment; null when none was.
    pub evidence_file: Option<EvidenceFileDto>,
}

/// A file attached to a manual payment as its evidence (never its bytes: those are at `url`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceFileDto {
    /// pef_...
    pub id: String,
    /// The name it was uploaded with.
    pub name: String,
    /// `application/pdf`, `image/png` or `image/jpeg`, as its bytes say.
    pub content_type: String,
    pub size_bytes: i64,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    /// The staff member who attached it, and when.
    pub uploaded_by: String,
    pub uploaded_at: String,
    /// Where staff read it: `/admin/api/payment-evidence/{id}`.
    pub url: String,
}

impl From<&EvidenceFileMeta> for EvidenceFileDto {
    fn from(f: &EvidenceFileMeta) -> Self {
        EvidenceFileDto {
            id: f.id.clone(),
            name: f.name.clone(),
            content_type: f.content_type.clone(),
            size_bytes: f.size_bytes,
            sha256: f.sha256.clone(),
            uploaded_by: f.uploaded_by.clone(),
            uploaded_at: f.created_at.clone(),
            url: format!("/admin/api/payment-evidence/{}", f.id),
        }
    }
}

/// The pesos a UF installment was charged and the UF value they came from.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UfChargeDto {
    /// Whole pesos.
    #[schema(value_type = f64)]
    pub clp: serde_json::Number,
    /// The business date of the charge, whose UF value was used, `YYYY-MM-DD`.
    pub date: String,
    /// The UF value of that date, in pesos; null if it is no longer in the UF table.
    #[schema(value_type = Option<f64>)]
    pub uf_value: Option<serde_json::Number>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateEventDto {
    pub event_id: String,
    /// `activation` or `payment`.
    pub kind: String,
    pub sequence: i64,
    pub delivery_state: String,
    pub created_at: String,
    pub installment_internal_id: Option<String>,
    /// The state the event announces (the installment's, or the mandate's).
    pub state: Option<EventState>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommerceBrief {
    pub code: String,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateActions {
    pub cancel: bool,
    pub add_installments: bool,
    /// Whether the Magic Link can still activate the mandate (PENDING, and not expired), so
    /// that it is worth sending to the customer.
    pub share_magic_link: bool,
}

/// What the customer accepted at activation, and where from, as recorded then.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptanceDto {
    pub accepted_at: String,
    /// The address the acceptance came from (null when it was not known).
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// SHA-256 (hex) of the terms exactly as shown.
    pub terms_sha256: String,
    /// SHA-256 (hex) of the EPAC mandate PDF, for EPAC and direct EPAC.
    pub document_sha256: Option<String>,
    /// Whether that PDF can be downloaded (`GET /mandates/{internalId}/document`).
    pub document_available: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateDetail {
    pub commerce: CommerceBrief,
    pub mandate: MandateDto,
    pub customer: CustomerDto,
    /// The enrolled method (`id`, `name`, masked `instrument`); null before activation.
    #[schema(value_type = Option<Object>)]
    pub payment_method: Option<StoredJson>,
    /// By due date: the schedule.
    pub installments: Vec<StaffInstallment>,
    /// Every event of the mandate, in sequence order.
    pub events: Vec<MandateEventDto>,
    /// Which mandate-wide actions its state allows.
    pub actions: MandateActions,
    /// The acceptance of the latest activation; null before activation.
    pub acceptance: Option<AcceptanceDto>,
    /// Today's business date (environment time zone): the latest date a payment may carry.
    pub business_date: String,
}

/// The EPAC mandate PDF the activation event of the latest acceptance carried: the one whose
/// SHA-256 is the acceptance's, or else the newest an activation event carried.
fn activation_document(events: &[EventRow], acceptance: Option<&AcceptanceRow>) -> Option<Vec<u8>> {
    use base64::Engine;
    use sha2::Digest;
    let expected = acceptance.and_then(|a| a.document_sha256.as_deref());
    let documents: Vec<Vec<u8>> = events
        .iter()
        .rev()
        .filter(|e| e.kind == "activation")
        .filter_map(|e| {
            let body: Value = serde_json::from_str(&e.body).ok()?;
            let file = body["fileBase64"].as_str()?;
            base64::engine::general_purpose::STANDARD.decode(file).ok()
        })
        .collect();
    let matching = documents
        .iter()
        .position(|d| expected == Some(hex::encode(sha2::Sha256::digest(d)).as_str()));
    let chosen = matching.unwrap_or(0);
    documents.into_iter().nth(chosen)
}

fn event_state(value: &Value) -> Option<EventState> {
    serde_json::from_value(value.clone()).ok()
}

/// The mandate as staff see it, at `now` (business date `today`).
fn mandate_detail(
    records: MandateRecords,
    base_url: &str,
    now: chrono::DateTime<chrono::Utc>,
    today: chrono::NaiveDate,
) -> MandateDetail {
    let MandateRecords {
        mandate,
        commerce,
        customer,
        installments: rows,
        charge_dates: dates,
        installment_created: created,
        attempts: attempt_rows,
        paid_on_webpay,
        events: event_rows,
        acceptance,
        signature,
        uf_values,
        evidence_files,
    } = records;
    let mut attempts: HashMap<i64, Vec<ChargeAttemptDto>> = HashMap::new();
    for a in attempt_rows {
        attempts
            .entry(a.installment_seq)
            .or_default()
            .push(ChargeAttemptDto {
                attempt: a.attempt_no,
                business_date: a.business_date,
                state: a.state,
                amount: stored_amount(&a.amount),
                currency_id: a.currency,
                authorization_code: a.authorization_code,
                rejection_code: a.rejection_code,
                started_at: a.created_at,
                finished_at: a.finished_at,
            });
    }
    let mut history: HashMap<String, Vec<HistoryEntry>> = HashMap::new();
    let mut event_dtos = Vec::new();
    let document_available = activation_document(&event_rows, acceptance.as_ref()).is_some();
    for event in event_rows {
        let body: Value = serde_json::from_str(&event.body).unwrap_or(Value::Null);
        let installment = &body["installment"];
        let installment_id = installment["internalId"].as_str().map(str::to_string);
        let announced = if installment_id.is_some() {
            event_state(&installment["state"])
        } else {
            event_state(&body["product"]["state"])
        };
        if let (Some(id), Some(state)) = (&installment_id, &announced) {
            history.entry(id.clone()).or_default().push(HistoryEntry {
                state: state.clone(),
                at: installment["dateTime"]
                    .as_str()
                    .unwrap_or(&event.created_at)
                    .to_string(),
                event_id: Some(event.id.clone()),
                delivery_state: Some(event.delivery_state.clone()),
                rejection_code: installment["rejection"]["code"]
                    .as_str()
                    .map(str::to_string),
            });
        }
        event_dtos.push(MandateEventDto {
            event_id: event.id,
            kind: event.kind,
            sequence: event.sequence,
            delivery_state: event.delivery_state,
            created_at: event.created_at,
            installment_internal_id: installment_id,
            state: announced,
        });
    }
    let alive = !matches!(
        mandate.state,
        MandateState::Cancelled | MandateState::Deleted
    );
    let installments = rows
        .iter()
        .map(|row| {
            let mut entries = vec![HistoryEntry {
                state: EventState {
                    id: InstallmentState::Pending.id(),
                    name: InstallmentState::Pending.name().to_string(),
                },
                at: created.get(&row.seq).cloned().unwrap_or_default(),
                event_id: None,
                delivery_state: None,
                rejection_code: None,
            }];
            entries.extend(history.remove(&row.id).unwrap_or_default());
            let charge_attempts = attempts.remove(&row.seq).unwrap_or_default();
            let charged_by_card = row
                .payment_method_id
                .and_then(PaymentMethod::from_id)
                .is_some_and(|m| m.is_card())
                && (charge_attempts.iter().any(|a| a.state == "PAID")
                    || paid_on_webpay.contains(&row.seq));
            let next_retry_date = row
                .next_retry_date
                .clone()
                .filter(|_| row.state == InstallmentState::Rejected && row.retry_scheduled);
            let uf_charge = row.charged_clp.as_deref().and_then(|clp| {
                let date = row.last_attempt_date.clone()?;
                Some(UfChargeDto {
                    clp: stored_amount(clp),
                    uf_value: uf_values.get(&date).map(|v| stored_amount(v)),
                    date,
                })
            });
            StaffInstallment {
                installment: InstallmentDto::new(row, &dates),
                next_retry_date,
                uf_charge,
                history: entries,
                can_pay: alive && row.state.can_move_to(InstallmentState::Paid),
                can_annul: alive && row.state.can_move_to(InstallmentState::Annulled),
                can_refund: row.state == InstallmentState::Paid && charged_by_card,
                evidence_file: evidence_files.get(&row.seq).map(EvidenceFileDto::from),
                charge_attempts,
            }
        })
        .collect();
    MandateDetail {
        commerce: CommerceBrief {
            code: commerce.code,
            name: commerce.name,
        },
        actions: MandateActions {
            cancel: mandate.state.can_cancel(),
            add_installments: mandate.mandate_type == MandateType::Dynamic
                && mandate.state.accepts_installment_changes(),
            share_magic_link: mandate.state == MandateState::Pending
                && chrono::DateTime::parse_from_rfc3339(&mandate.magic_link_expires_at)
                    .is_ok_and(|until| until > now),
        },
        acceptance: acceptance.map(|a| AcceptanceDto {
            accepted_at: a.accepted_at,
            ip: a.ip,
            user_agent: a.user_agent,
            terms_sha256: a.terms_sha256,
            document_sha256: a.document_sha256,
            document_available,
        }),
        business_date: today.to_string(),
        payment_method: mandate.enrolled_method.clone(),
        mandate: MandateDto::new(&mandate, base_url).with_signature(signature.as_ref()),
        customer: CustomerDto::from(&customer),
        installments,
        events: event_dtos,
    }
}

/// One mandate: schedule, installments with their history, events and allowed actions.
#[utoipa::path(get, path = "/mandates/{internalId}", tag = "staff",
    params(("internalId" = String, Path, description = "man_...")),
    responses(
        (status = 200, description = "MANDATE_OK", body = Envelope<MandateDetail>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn detail(
    State(state): State<AppState>,
    _staff: Staff,
    Path(internal_id): Path<String>,
) -> ApiResult<Envelope<MandateDetail>> {
    let (seq, _) = state.mandate_owner(&internal_id)?;
    let detail = load_now(&state, seq)?;
    Ok(Envelope::ok("MANDATE_OK", "mandate", detail))
}

fn load_now(state: &AppState, seq: i64) -> Result<MandateDetail> {
    let now = state.clock.now();
    let today = state.calendar.today(now);
    let records = state.mandate_records(seq)?;
    Ok(mandate_detail(records, &state.public_base_url, now, today))
}

/// The EPAC mandate PDF of the mandate's activation, exactly as its activation event carried
/// it to the merchant (any staff role).
#[utoipa::path(get, path = "/mandates/{internalId}/document", tag = "staff",
    params(("internalId" = String, Path, description = "man_...")),
    responses(
        (status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND, or MANDATE_DOCUMENT_NOT_FOUND: not activated with EPAC or direct EPAC", body = ErrorBody),
    ))]
pub async fn document(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
) -> std::result::Result<Response, ApiError> {
    staff.require(Role::Viewer)?;
    let (seq, _) = state.mandate_owner(&internal_id)?;
    let sources = state.mandate_document_sources(seq)?;
    let bytes = activation_document(&sources.events, sources.acceptance.as_ref())
        .ok_or(Error::not_found("mandate document"))?;
    let external_id = sources.external_id;
    // Merchant ids are letters, digits, `-`, `_` and `.`: safe in a header as they are.
    let filename = format!("mandato-{external_id}.pdf");
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

/// Runs a staff action on a mandate through the engine (recorded in the staff audit log)
/// and answers the mandate as it is afterwards.
async fn act(
    state: &AppState,
    staff: &Staff,
    internal_id: &str,
    action: &'static str,
    detail: Option<String>,
    operation: impl Fn(Db<'_>, &Ctx<'_>) -> Result<()> + Send + 'static,
) -> ApiResult<Envelope<MandateDetail>> {
    staff.require(Role::Operator)?;
    let seq = state
        .engine
        .act_on_mandate(staff.email(), internal_id, action, detail, operation)
        .await?;
    let detail = load_now(state, seq)?;
    Ok(Envelope::ok("MANDATE_OK", "mandate changed", detail))
}

/// Internal installment ids (`ins_...`): 1 to 1000 of them.
fn installment_ids(ids: Option<&Vec<String>>, errors: &mut FieldErrors) -> Option<Vec<String>> {
    match ids {
        None => {
            errors.missing("installmentIds");
            None
        }
        Some(list) if list.is_empty() || list.len() > 1000 => {
            errors.push(
                "installmentIds",
                "INVALID_LENGTH",
                "1 to 1000 installment ids",
            );
            None
        }
        Some(list) => Some(list.clone()),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffPaymentRequest {
    /// The installments paid (`ins_...`).
    pub installment_ids: Option<Vec<String>>,
    /// The evidence: `amount` is the sum of the installments, in their currency.
    pub payment: Option<PaymentIn>,
    /// Optional: a file that shows the payment (a transfer's voucher, a deposit slip), kept
    /// with it.
    pub evidence_file: Option<EvidenceFileIn>,
}

/// A file attached to a manual payment: a PDF, PNG or JPEG of at most 5 MiB, told by its
/// bytes (the name's extension is not trusted).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceFileIn {
    /// The file's name, 1 to 200 characters (a path's directories are dropped).
    pub name: Option<String>,
    /// The bytes, base64 (standard alphabet, padded).
    pub content_base64: Option<String>,
}

const EVIDENCE_NAME_CHARS: usize = 200;

/// The evidence file as sent, checked: its name, its kind by its first bytes, its size.
fn parse_evidence_file(
    file: Option<&EvidenceFileIn>,
    errors: &mut FieldErrors,
) -> Option<EvidenceUpload> {
    use base64::Engine as _;
    let file = file?;
    let name = match file.name.as_deref().map(str::trim) {
        None | Some("") => {
            errors.missing("evidenceFile.name");
            None
        }
        Some(name) => {
            // A browser may send a path; only its last part names the file.
            let base = name.rsplit(['/', '\\']).next().unwrap_or(name).trim();
            if base.is_empty() || base.chars().count() > EVIDENCE_NAME_CHARS {
                errors.push(
                    "evidenceFile.name",
                    "INVALID_LENGTH",
                    format!("1 to {EVIDENCE_NAME_CHARS} characters"),
                );
                None
            } else if base.chars().any(char::is_control) {
                errors.push(
                    "evidenceFile.name",
                    "INVALID_FORMAT",
                    "no control characters",
                );
                None
            } else {
                Some(base.to_string())
            }
        }
    };
    let Some(content) = file.content_base64.as_deref() else {
        errors.missing("evidenceFile.contentBase64");
        return None;
    };
    // Refused before decoding: its base64 is four characters per three bytes.
    if content.len() > EVIDENCE_MAX_BYTES.div_ceil(3) * 4 {
        errors.push(
            "evidenceFile.contentBase64",
            "FILE_TOO_LARGE",
            format!("at most {} MiB", EVIDENCE_MAX_BYTES / (1024 * 1024)),
        );
        return None;
    }
    let bytes = match base64::engine::general_purpose::STANDARD.decode(content) {
        Ok(bytes) => bytes,
        Err(_) => {
            errors.push(
                "evidenceFile.contentBase64",
                "INVALID_BASE64",
                "not base64 (standard alphabet, padded)",
            );
            return None;
        }
    };
    if bytes.len() > EVIDENCE_MAX_BYTES {
        errors.push(
            "evidenceFile.contentBase64",
            "FILE_TOO_LARGE",
            format!("at most {} MiB", EVIDENCE_MAX_BYTES / (1024 * 1024)),
        );
        return None;
    }
    let Some(content_type) = evidence_content_type(&bytes) else {
        errors.push(
            "evidenceFile.contentBase64",
            "UNSUPPORTED_FILE_TYPE",
            "the file must be a PDF, PNG or JPEG",
        );
        return None;
    };
    Some(EvidenceUpload::new(name?, content_type, bytes))
}

fn parse_evidence(p: Option<&PaymentIn>, errors: &mut FieldErrors) -> Option<PaymentEvidence> {
    let Some(p) = p else {
        errors.missing("payment");
        return None;
    };
    let date = fields::date(p.date.as_ref(), "payment.date", errors);
    let currency = fields::currency(p.currency_id.as_ref(), "payment.currencyId", errors);
    let amount = fields::money(p.amount.as_ref(), currency, "payment.amount", errors);
    let authorization_code = optional_text(
        p.authorization_code.as_ref(),
        "payment.authorizationCode",
        64,
        errors,
    );
    let method = optional_text(p.method.as_ref(), "payment.method", 32, errors);
    Some(PaymentEvidence {
        date: date?,
        amount: amount?,
        authorization_code,
        method,
    })
}

/// Mark installments PAID with the evidence of a payment made outside the automatic flow
/// (operator or admin): all of them, or none. Each change sends its payment webhook. The
/// payment's date is today's business date (`businessDate` of the mandate) or earlier. An
/// installment that cannot be paid is named at `installmentIds[i]`.
#[utoipa::path(post, path = "/mandates/{internalId}/payments", tag = "staff",
    params(("internalId" = String, Path, description = "man_...")),
    request_body = StaffPaymentRequest,
    responses(
        (status = 200, description = "MANDATE_OK: the mandate afterwards", body = Envelope<MandateDetail>),
        (status = 400, description = "Invalid field, evidence mismatch, DATE_IN_FUTURE at payment.date, INSTALLMENT_STATE_CONFLICT at installmentIds[i] (several refused installments: VALIDATION_ERROR naming each), MANDATE_STATE_CONFLICT; at evidenceFile.contentBase64: UNSUPPORTED_FILE_TYPE (not a PDF, PNG or JPEG by its bytes), FILE_TOO_LARGE (over 5 MiB), INVALID_BASE64", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND or INSTALLMENT_NOT_FOUND", body = ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE: a body over 8 MiB", body = ErrorBody),
    ))]
pub async fn pay(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
    Body(body): Body<StaffPaymentRequest>,
) -> ApiResult<Envelope<MandateDetail>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let ids = installment_ids(body.installment_ids.as_ref(), &mut errors);
    let evidence = parse_evidence(body.payment.as_ref(), &mut errors);
    let file = parse_evidence_file(body.evidence_file.as_ref(), &mut errors);
    errors.into_result()?;
    let (ids, evidence) = (ids.expect("validated"), evidence.expect("validated"));
    // The audit names the file by what identifies it, never by its bytes.
    let detail = serde_json::json!({
        "installments": ids,
        "amount": evidence.amount.to_json_number(),
        "currencyId": evidence.amount.currency().code(),
        "date": evidence.date.to_string(),
        "method": evidence.method,
        "authorizationCode": evidence.authorization_code,
        "evidenceFile": file.as_ref().map(|f| serde_json::json!({
            "name": f.name,
            "contentType": f.content_type,
            "sizeBytes": f.bytes.len(),
            "sha256": f.sha256,
        })),
    })
    .to_string();
    let command = ChangeStatus {
        product: MandateRef::Internal(internal_id.clone()),
        installments: OwnedRefs::Internal(ids.clone()),
        action: Action::Payment(evidence),
    };
    let mandate_id = internal_id.clone();
    let actor = staff.email().to_string();
    let file = std::sync::Arc::new(file);
    act(
        &state,
        &staff,
        &internal_id,
        "mandate.pay",
        Some(detail),
        move |tx, ctx| {
            check_selection(tx, ctx, &mandate_id, &ids, InstallmentState::Paid)?;
            installment_ops::change_status(tx, ctx, &command)?;
            if let Some(file) = file.as_ref() {
                attach_evidence(tx, ctx, &mandate_id, &ids, file, &actor)?;
            }
            Ok(())
        },
    )
    .await
}

/// The evidence file of a manual payment, as it was uploaded (any staff role). Shown in the
/// browser (`inline`) under its own name, in a sandbox so that a document cannot run anything
/// in the staff's origin.
#[utoipa::path(get, path = "/payment-evidence/{fileId}", tag = "staff",
    params(("fileId" = String, Path, description = "pef_...")),
    responses(
        (status = 200, description = "The file: application/pdf, image/png or image/jpeg", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 404, description = "EVIDENCE_FILE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn evidence_file(
    State(state): State<AppState>,
    staff: Staff,
    Path(file_id): Path<String>,
) -> std::result::Result<Response, ApiError> {
    staff.require(Role::Viewer)?;
    let (meta, bytes) = state.evidence_file(&file_id)?;
    Ok((
        [
            (header::CONTENT_TYPE, meta.content_type.clone()),
            (header::CONTENT_DISPOSITION, content_disposition(&meta.name)),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (
                header::CONTENT_SECURITY_POLICY,
                "sandbox; default-src 'none'; img-src 'self'; object-src 'self'".to_string(),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        bytes,
    )
        .into_response())
}

/// `inline` with the uploaded name: an ASCII stand-in for old clients and the exact name
/// percent-encoded (RFC 6266, RFC 5987), so no character of it can break the header.
fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ' ' | '(' | ')') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("inline; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffAnnulRequest {
    /// The installments to annul (`ins_...`): PENDING or REJECTED ones.
    pub installment_ids: Option<Vec<String>>,
}

/// Annul installments (operator or admin): all of them, or none. Each change sends its payment
/// webhook. An installment that cannot be annulled is named at `installmentIds[i]`.
#[utoipa::path(post, path = "/mandates/{internalId}/annulments", tag = "staff",
    params(("internalId" = String, Path, description = "man_...")),
    request_body = StaffAnnulRequest,
    responses(
        (status = 200, description = "MANDATE_OK: the mandate afterwards", body = Envelope<MandateDetail>),
        (status = 400, description = "Invalid field, INSTALLMENT_STATE_CONFLICT at installmentIds[i] (several refused installments: VALIDATION_ERROR naming each), MANDATE_STATE_CONFLICT", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND or INSTALLMENT_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn annul(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
    Body(body): Body<StaffAnnulRequest>,
) -> ApiResult<Envelope<MandateDetail>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let ids = installment_ids(body.installment_ids.as_ref(), &mut errors);
    errors.into_result()?;
    let ids = ids.expect("validated");
    let detail = serde_json::json!({"installments": ids}).to_string();
    let command = ChangeStatus {
        product: MandateRef::Internal(internal_id.clone()),
        installments: OwnedRefs::Internal(ids.clone()),
        action: Action::Annulment,
    };
    let mandate_id = internal_id.clone();
    act(
        &state,
        &staff,
        &internal_id,
        "mandate.annul",
        Some(detail),
        move |tx, ctx| {
            check_selection(tx, ctx, &mandate_id, &ids, InstallmentState::Annulled)?;
            installment_ops::change_status(tx, ctx, &command).map(drop)
        },
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaffAddInstallmentsRequest {
    /// 1 to 1000 new installments, each with a new `id`, in the mandate's currency, due
    /// today or later, not above the mandate's `maxAmount`.
    pub installments: Option<Vec<InstallmentIn>>,
}

fn parse_new_installments(
    items: Option<&Vec<InstallmentIn>>,
    today: chrono::NaiveDate,
    errors: &mut FieldErrors,
) -> Vec<NewInstallment> {
    let items = match items {
        None => {
            errors.missing("installments");
            return Vec::new();
        }
        Some(list) if list.is_empty() || list.len() > 1000 => {
            errors.push("installments", "INVALID_LENGTH", "1 to 1000 installments");
            return Vec::new();
        }
        Some(list) => list,
    };
    crate::mandates::parse_installment_list(items, today, errors)
}

/// Add installments to a DYNAMIC mandate (operator or admin): all of them, or none.
#[utoipa::path(post, path = "/mandates/{internalId}/installments", tag = "staff",
    params(("internalId" = String, Path, description = "man_...")),
    request_body = StaffAddInstallmentsRequest,
    responses(
        (status = 200, description = "MANDATE_OK: the mandate afterwards", body = Envelope<MandateDetail>),
        (status = 400, description = "Invalid field, duplicated id, not DYNAMIC, MANDATE_STATE_CONFLICT", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn add_installments(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
    Body(body): Body<StaffAddInstallmentsRequest>,
) -> ApiResult<Envelope<MandateDetail>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let items = parse_new_installments(body.installments.as_ref(), state.today(), &mut errors);
    errors.into_result()?;
    let detail = serde_json::json!({
        "installments": items.iter().map(|i| &i.external_id).collect::<Vec<_>>(),
    })
    .to_string();
    let id = internal_id.clone();
    act(
        &state,
        &staff,
        &internal_id,
        "mandate.add-installments",
        Some(detail),
        move |tx, ctx| {
            let customer = customer_of_mandate(tx, ctx, &id)?;
            installment_ops::add(
                tx,
                ctx,
                &AddInstallments {
                    customer: CustomerRef::InternalUserId(customer.id),
                    product: MandateRef::Internal(id.clone()),
                    installments: items.clone(),
                },
            )
            .map(drop)
        },
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct StaffCancelRequest {
    /// Why: 3 to 500 characters.
    pub description: Option<String>,
}

/// Cancel a PENDING or ACTIVE mandate (operator or admin): installments not yet submitted for
/// charge are annulled, and the merchant is notified.
#[utoipa::path(post, path = "/mandates/{internalId}/cancel", tag = "staff",
    params(("internalId" = String, Path, description = "man_...")),
    request_body = StaffCancelRequest,
    responses(
        (status = 200, description = "MANDATE_OK: the mandate afterwards", body = Envelope<MandateDetail>),
        (status = 400, description = "Invalid description, MANDATE_STATE_CONFLICT", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "MANDATE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn cancel(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
    Body(body): Body<StaffCancelRequest>,
) -> ApiResult<Envelope<MandateDetail>> {
    staff.require(Role::Operator)?;
    let mut errors = FieldErrors::new();
    let description = required_text(body.description.as_ref(), "description", 500, &mut errors);
    if let Some(d) = &description
        && d.chars().count() < 3
    {
        errors.push("description", "TOO_SHORT", "at least 3 characters");
    }
    errors.into_result()?;
    let description = description.expect("validated");
    let id = internal_id.clone();
    act(
        &state,
        &staff,
        &internal_id,
        "mandate.cancel",
        Some(description.clone()),
        move |tx, ctx| {
            let customer = customer_of_mandate(tx, ctx, &id)?;
            mandato_engine::operations::mandates::cancel(
                tx,
                ctx,
                &MandateRef::Internal(id.clone()),
                &CustomerRef::InternalUserId(customer.id),
                &description,
            )
            .map(drop)
        },
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundRequest {
    /// Why the money goes back (1 to 500 characters), for the staff audit log.
    pub reason: Option<String>,
}

/// Refund a PAID card installment (operator or admin, CONTRACT 13): the acquirer that charged
/// it gives the whole amount back (a Transbank Oneclick Mall refund; the simulation in a
/// sandbox), then the installment is REVERSED with its payment webhook and the ledger's
/// REVERSAL. Nothing is recorded unless the acquirer refunded.
#[utoipa::path(post, path = "/installments/{internalId}/refund", tag = "staff",
    params(("internalId" = String, Path, description = "ins_...")),
    request_body = RefundRequest,
    responses(
        (status = 200, description = "MANDATE_OK: the installment's mandate afterwards", body = Envelope<MandateDetail>),
        (status = 400, description = "reason missing; INSTALLMENT_STATE_CONFLICT (not PAID), INSTALLMENT_NOT_REFUNDABLE (marked paid, paid on the portal or by bank debit), ACQUIRER_NOT_CONFIGURED, REFUND_REFUSED (the acquirer's message)", body = ErrorBody),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or CSRF_TOKEN_INVALID", body = ErrorBody),
        (status = 404, description = "INSTALLMENT_NOT_FOUND", body = ErrorBody),
        (status = 503, description = "ACQUIRER_UNAVAILABLE: nothing refunded or recorded", body = ErrorBody),
    ))]
pub async fn refund(
    State(state): State<AppState>,
    staff: Staff,
    Path(internal_id): Path<String>,
    Body(body): Body<RefundRequest>,
) -> ApiResult<Envelope<MandateDetail>> {
    staff.require(Role::Operator)?;
    let reason = body.reason.as_deref().map(str::trim).unwrap_or_default();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(Error::validation("reason", "INVALID_LENGTH", "1 to 500 characters").into());
    }
    let mandate = state
        .engine
        .refund_installment(staff.email(), &internal_id, reason)
        .await?;
    let (seq, _) = state.engine.mandate_owner(&mandate)?;
    let detail = load_now(&state, seq)?;
    Ok(Envelope::ok("MANDATE_OK", "installment refunded", detail))
}
