//! The operations of a signature process, each in the caller's transaction: creation, lookup,
//! cancellation and expiry for the merchant, and the signatory's steps behind a signing link
//! (view, code, identity, sign or reject), ending in the seal.
//!
//! A signatory's step that is refused (a wrong code, out of turn) still commits what it
//! recorded (the failure counter, the audit record, an expiry it found): those functions return
//! `Ok(Err(StepError))`, and only a fault of ours is an `Err`.

use chrono::{DateTime, Duration, Utc};
use mandato_store::db::Db;
use rand::Rng;
use serde_json::{Value, json};

use super::audit::{self, Action, Entry};
use super::events::{self, EventKind};
use super::pdf::{self, BoxStamp, Line, SealInput, Stamp};
use super::{
    CODE_VALIDITY_MINUTES, CreateProcess, MAX_CODE_ATTEMPTS, MAX_CODES_SENT, MAX_FAILURES,
    Placement, ProcessState, SignatoryState, sandbox, sha256_hex,
};
use mandato_core::clock::timestamp;
use mandato_core::domain::activation::ActivationFailure;
use mandato_core::domain::rut::Rut;
use mandato_core::error::{Error, Result};
use mandato_store::commerces::{self, Commerce};
use mandato_store::customers;
use mandato_store::signatures::{
    self, DocumentRow, NewDocumentRow, NewProcess, NewSignatoryRow, ProcessRow, SignatoryRow,
};

/// A process with its signatories and documents: what every lookup answers.
#[derive(Clone, Debug)]
pub struct ProcessView {
    pub process: ProcessRow,
    pub signatories: Vec<SignatoryRow>,
    pub documents: Vec<DocumentRow>,
}

/// Who acts and when: the wall clock for the record, business time for expiry.
#[derive(Clone, Copy, Debug)]
pub struct Act<'a> {
    pub now: DateTime<Utc>,
    pub business_now: DateTime<Utc>,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub sandbox: bool,
}

impl Act<'_> {
    fn at(&self) -> String {
        timestamp(self.now)
    }
}

pub fn load_view(conn: Db<'_>, process: ProcessRow) -> Result<ProcessView> {
    Ok(ProcessView {
        signatories: signatures::signatories_of(conn, process.seq)?,
        documents: signatures::documents_of(conn, process.seq)?,
        process,
    })
}

fn reload(conn: Db<'_>, seq: i64) -> Result<ProcessView> {
    load_view(conn, signatures::process_by_seq(conn, seq)?)
}

fn documents_json(documents: &[DocumentRow]) -> Value {
    Value::Array(
        documents
            .iter()
            .map(|d| json!({"documentName": d.name, "sha256": d.sha256}))
            .collect(),
    )
}

fn record(
    conn: Db<'_>,
    view: &ProcessView,
    act: &Act<'_>,
    action: Action,
    signatory: Option<&SignatoryRow>,
    detail: Value,
) -> Result<()> {
    let at = act.at();
    audit::append(
        conn,
        view.process.seq,
        &view.process.id,
        Entry {
            at: &at,
            action,
            signatory_id: signatory.map(|s| s.id.as_str()),
            ip: act.ip,
            user_agent: act.user_agent,
            documents: documents_json(&view.documents),
            detail,
        },
    )?;
    Ok(())
}

// ----- the merchant's operations -----

/// `POST /signature`: creates the merchant's process. Its `externalProcessId` names one
/// process of the commerce (CONTRACT 14: an equal request sent again is answered as the first
/// was before it comes here), so one already used is refused (`DUPLICATED_EXTERNAL_PROCESS_ID`).
pub fn create_for_merchant(
    conn: Db<'_>,
    commerce: &Commerce,
    act: &Act<'_>,
    cmd: &CreateProcess,
) -> Result<ProcessView> {
    if let Some(external) = &cmd.external_id
        && signatures::merchant_external_id_used(conn, commerce.id, external)?
    {
        return Err(Error::refused_at(
            "DUPLICATED_EXTERNAL_PROCESS_ID",
            "process.externalProcessId",
            format!("externalProcessId {external} is already used by this commerce"),
        ));
    }
    create(conn, commerce, act, cmd)
}

/// Creates the process, its signatories (each with a signing link) and documents.
pub fn create(
    conn: Db<'_>,
    commerce: &Commerce,
    act: &Act<'_>,
    cmd: &CreateProcess,
) -> Result<ProcessView> {
    let id = mandato_core::ids::new_id("sig");
    let now = act.at();
    let expires_at = timestamp(act.business_now + Duration::days(cmd.expiry_days));
    let process = signatures::insert_process(
        conn,
        &NewProcess {
            id: &id,
            commerce_id: commerce.id,
            process_name: &cmd.name,
            external_process_id: cmd.external_id.as_deref(),
            request_user: cmd.request_user.as_deref(),
            url_callback: &cmd.callback,
            url_webhook: &cmd.webhook,
            expires_at: &expires_at,
            now: &now,
        },
    )?;
    let mut signatory_seqs = Vec::with_capacity(cmd.signatories.len());
    for (position, s) in cmd.signatories.iter().enumerate() {
        let customer = customers::by_seq(conn, s.customer_seq)?;
        if customer.commerce_id != commerce.id {
            return Err(Error::Internal(anyhow::anyhow!(
                "signatory customer of another commerce"
            )));
        }
        let full_name = [
            Some(customer.first_name.as_str()),
            Some(customer.last_name.as_str()),
            customer.second_last_name.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        let seq = signatures::insert_signatory(
            conn,
            &NewSignatoryRow {
                id: &mandato_core::ids::new_id("sgn"),
                process_seq: process.seq,
                position: position as i64,
                customer_seq: customer.seq,
                order: s.order,
                kind: s.kind,
                token: &mandato_core::ids::new_token(),
                full_name: &full_name,
                rut: &customer.rut,
                email: &customer.email,
            },
        )?;
        signatory_seqs.push(seq);
    }
    for (position, d) in cmd.documents.iter().enumerate() {
        let document_seq = signatures::insert_document(
            conn,
            &NewDocumentRow {
                id: &mandato_core::ids::new_id("doc"),
                process_seq: process.seq,
                position: position as i64,
                name: &d.name,
                page_count: i64::from(d.page_count),
                bytes: &d.bytes,
                sha256: &d.sha256,
            },
        )?;
        for (signatory, placement) in &d.placements {
            signatures::insert_placement(
                conn,
                document_seq,
                signatory_seqs[*signatory],
                placement,
            )?;
        }
    }
    let view = load_view(conn, process)?;
    let detail = json!({
        "processName": view.process.process_name,
        "requestUser": view.process.request_user,
        "expiresAt": view.process.expires_at,
        "signatories": view.signatories.iter().map(|s| json!({
            "internalId": s.id, "order": s.order, "type": s.kind.name(), "rut": s.rut,
        })).collect::<Vec<_>>(),
    });
    record(conn, &view, act, Action::Created, None, detail)?;
    Ok(view)
}

/// The commerce's process, expired first if its time has come (so a lookup never shows an
/// open process past its expiry).
pub fn find(
    conn: Db<'_>,
    commerce: &Commerce,
    act: &Act<'_>,
    internal_id: &str,
) -> Result<ProcessView> {
    let process = signatures::process_by_internal_id(conn, commerce.id, internal_id)?
        .ok_or(Error::not_found("signature process"))?;
    expire_if_due(conn, commerce, process.seq, act)?;
    reload(conn, process.seq)
}

/// Makes an open process past its expiry EXPIRED, with its audit record and event.
pub fn expire_if_due(
    conn: Db<'_>,
    commerce: &Commerce,
    process_seq: i64,
    act: &Act<'_>,
) -> Result<bool> {
    let process = signatures::process_by_seq(conn, process_seq)?;
    if !process.state.is_open() || process.expires_at > timestamp(act.business_now) {
        return Ok(false);
    }
    // Every signatory signed in time: the seal still owed is ours to finish, not an expiry.
    if signatures::all_signed(conn, process_seq)? {
        return Ok(false);
    }
    signatures::set_process_state(conn, process.seq, ProcessState::Expired, None, &act.at())?;
    let view = reload(conn, process.seq)?;
    record(
        conn,
        &view,
        act,
        Action::Expired,
        None,
        json!({"expiresAt": view.process.expires_at, "businessTime": timestamp(act.business_now)}),
    )?;
    events::record(conn, commerce, &view, EventKind::Expired, None, act.now)?;
    process_ended(conn, &view, &act.at())?;
    Ok(true)
}

/// Expires up to `limit` open processes past their expiry, of every commerce.
pub fn sweep(conn: Db<'_>, act: &Act<'_>, limit: i64) -> Result<usize> {
    let due = signatures::expired_open(conn, &timestamp(act.business_now), limit)?;
    let mut expired = 0;
    for seq in due {
        let process = signatures::process_by_seq(conn, seq)?;
        let commerce = commerces::by_id(conn, process.commerce_id)?.ok_or_else(|| {
            Error::Internal(anyhow::anyhow!("process {} has no commerce", process.id))
        })?;
        if expire_if_due(conn, &commerce, seq, act)? {
            expired += 1;
        }
    }
    Ok(expired)
}

pub enum CancelOutcome {
    Cancelled,
    /// 410.
    AlreadyCancelled,
    /// COMPLETED, REJECTED or EXPIRED (possibly just now): 400.
    Final(ProcessState),
}

/// PENDING or IN_PROGRESS → CANCELLED. Documents and the audit trail are kept.
pub fn cancel(
    conn: Db<'_>,
    commerce: &Commerce,
    act: &Act<'_>,
    internal_id: &str,
) -> Result<CancelOutcome> {
    let view = find(conn, commerce, act, internal_id)?;
    cancel_process(conn, commerce, act, view, "MERCHANT_API")
}

/// Cancels the process of `view` (read in this transaction) when it is open; `by` names who
/// cancelled it in the audit trail.
pub fn cancel_process(
    conn: Db<'_>,
    commerce: &Commerce,
    act: &Act<'_>,
    view: ProcessView,
    by: &str,
) -> Result<CancelOutcome> {
    match view.process.state {
        ProcessState::Cancelled => return Ok(CancelOutcome::AlreadyCancelled),
        s if !s.is_open() => return Ok(CancelOutcome::Final(s)),
        _ => {}
    }
    signatures::set_process_state(
        conn,
        view.process.seq,
        ProcessState::Cancelled,
        None,
        &act.at(),
    )?;
    let view = reload(conn, view.process.seq)?;
    record(conn, &view, act, Action::Cancelled, None, json!({"by": by}))?;
    events::record(conn, commerce, &view, EventKind::Cancelled, None, act.now)?;
    process_ended(conn, &view, &act.at())?;
    Ok(CancelOutcome::Cancelled)
}

// ----- the signatory's ceremony -----

/// A signing link opened: the process, its commerce, and which signatory holds the link.
#[derive(Clone, Debug)]
pub struct Ceremony {
    pub commerce: Commerce,
    pub view: ProcessView,
    me: usize,
}

impl Ceremony {
    pub fn me(&self) -> &SignatoryRow {
        &self.view.signatories[self.me]
    }

    /// Whether the signatory may act now (order rule; equal orders in parallel).
    pub fn is_turn(&self) -> bool {
        let me = self.me();
        me.state == SignatoryState::Pending
            && super::is_turn(
                self.view
                    .signatories
                    .iter()
                    .filter(|s| s.state == SignatoryState::Pending)
                    .map(|s| s.order),
                me.order,
            )
    }

    pub fn locked(&self) -> bool {
        self.me().failures >= MAX_FAILURES
    }
}

/// Why a signatory's step did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepError {
    UnknownLink,
    /// The process is no longer open (COMPLETED, CANCELLED, REJECTED, EXPIRED).
    Closed(ProcessState),
    AlreadySigned,
    AlreadyRejected,
    NotYourTurn,
    /// Too many failures: the link no longer takes identity answers.
    Locked,
    WrongRut,
    TooManyCodes,
    NoCode,
    CodeExpired,
    WrongCode {
        remaining: i64,
    },
    CodeAttemptsExhausted,
    CodeNotVerified,
    IdentityDenied,
    IdentityMismatch,
    /// FEA/FAO outside the sandbox: no identity provider is configured.
    IdentityUnavailable,
    IdentityRequired,
    MustAccept,
    InvalidReason,
}

pub type Step<T> = std::result::Result<T, StepError>;

fn load_ceremony(conn: Db<'_>, token: &str) -> Result<Option<Ceremony>> {
    let Some(me) = signatures::signatory_by_token(conn, token)? else {
        return Ok(None);
    };
    let process = signatures::process_by_seq(conn, me.process_seq)?;
    let commerce = commerces::by_id(conn, process.commerce_id)?.ok_or_else(|| {
        Error::Internal(anyhow::anyhow!("process {} has no commerce", process.id))
    })?;
    let view = load_view(conn, process)?;
    let me = view
        .signatories
        .iter()
        .position(|s| s.seq == me.seq)
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("signatory not in its process")))?;
    Ok(Some(Ceremony { commerce, view, me }))
}

/// Opens the link for its page: expires the process if due, and records the first view.
pub fn open(conn: Db<'_>, token: &str, act: &Act<'_>) -> Result<Option<Ceremony>> {
    let Some(c) = load_ceremony(conn, token)? else {
        return Ok(None);
    };
    if expire_if_due(conn, &c.commerce, c.view.process.seq, act)? {
        return load_ceremony(conn, token);
    }
    let me = c.me();
    if c.view.process.state.is_open()
        && me.state == SignatoryState::Pending
        && me.viewed_at.is_none()
    {
        signatures::set_viewed(conn, me.seq, &act.at())?;
        record(
            conn,
            &c.view,
            act,
            Action::Viewed,
            Some(me),
            json!({"turn": c.is_turn()}),
        )?;
        return load_ceremony(conn, token);
    }
    Ok(Some(c))
}

/// Reads the link without writing (document downloads).
pub fn peek(conn: Db<'_>, token: &str) -> Result<Option<Ceremony>> {
    load_ceremony(conn, token)
}

/// What every step checks first: the link, expiry, the process open, the signatory pending,
/// not locked, and its turn.
fn prelude(conn: Db<'_>, token: &str, act: &Act<'_>) -> Result<Step<Ceremony>> {
    let Some(c) = load_ceremony(conn, token)? else {
        return Ok(Err(StepError::UnknownLink));
    };
    if expire_if_due(conn, &c.commerce, c.view.process.seq, act)? {
        return Ok(Err(StepError::Closed(ProcessState::Expired)));
    }
    if !c.view.process.state.is_open() {
        return Ok(Err(StepError::Closed(c.view.process.state)));
    }
    match c.me().state {
        SignatoryState::Signed => return Ok(Err(StepError::AlreadySigned)),
        SignatoryState::Rejected => return Ok(Err(StepError::AlreadyRejected)),
        SignatoryState::Pending => {}
    }
    if c.locked() {
        return Ok(Err(StepError::Locked));
    }
    if !c.is_turn() {
        return Ok(Err(StepError::NotYourTurn));
    }
    Ok(Ok(c))
}

fn code_hash(signatory_id: &str, code: &str) -> String {
    sha256_hex(format!("{signatory_id}:{code}").as_bytes())
}

/// `a***@example.cl`.
pub fn mask_email(email: &str) -> String {
    match email.split_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}***@{domain}")
        }
        None => "***".into(),
    }
}

/// Step 1: the RUT of the signatory, then a one-time code is issued.
pub fn send_code(conn: Db<'_>, token: &str, act: &Act<'_>, rut: &str) -> Result<Step<()>> {
    let c = match prelude(conn, token, act)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let me = c.me();
    if me.code_verified_at.is_some() {
        return Ok(Ok(()));
    }
    let matches = Rut::parse(rut).is_ok_and(|r| r.as_str() == me.rut);
    if !matches {
        signatures::add_failure(conn, me.seq, false)?;
        record(
            conn,
            &c.view,
            act,
            Action::CodeFailed,
            Some(me),
            json!({"reason": "RUT_MISMATCH"}),
        )?;
        return Ok(Err(StepError::WrongRut));
    }
    if me.codes_sent >= MAX_CODES_SENT {
        return Ok(Err(StepError::TooManyCodes));
    }
    let code = format!("{:06}", rand::rng().random_range(0..1_000_000u32));
    let expires_at = timestamp(act.now + Duration::minutes(CODE_VALIDITY_MINUTES));
    signatures::set_code(
        conn,
        me.seq,
        &code_hash(&me.id, &code),
        act.sandbox.then_some(code.as_str()),
        &expires_at,
    )?;
    record(
        conn,
        &c.view,
        act,
        Action::CodeSent,
        Some(me),
        json!({"channel": "EMAIL", "to": mask_email(&me.email), "expiresAt": expires_at}),
    )?;
    Ok(Ok(()))
}

/// Step 2: the one-time code. For FES it completes the identity check.
pub fn verify_code(conn: Db<'_>, token: &str, act: &Act<'_>, code: &str) -> Result<Step<()>> {
    let c = match prelude(conn, token, act)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let me = c.me();
    if me.code_verified_at.is_some() {
        return Ok(Ok(()));
    }
    let (Some(hash), Some(expires_at)) = (&me.code_hash, &me.code_expires_at) else {
        return Ok(Err(StepError::NoCode));
    };
    if me.code_attempts >= MAX_CODE_ATTEMPTS {
        return Ok(Err(StepError::CodeAttemptsExhausted));
    }
    if *expires_at <= act.at() {
        return Ok(Err(StepError::CodeExpired));
    }
    let typed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code_hash(&me.id, &typed) != *hash {
        signatures::add_failure(conn, me.seq, true)?;
        record(
            conn,
            &c.view,
            act,
            Action::CodeFailed,
            Some(me),
            json!({"reason": "WRONG_CODE"}),
        )?;
        let remaining = MAX_CODE_ATTEMPTS - me.code_attempts - 1;
        return Ok(Err(if remaining <= 0 {
            StepError::CodeAttemptsExhausted
        } else {
            StepError::WrongCode { remaining }
        }));
    }
    let at = act.at();
    signatures::set_code_verified(conn, me.seq, &at)?;
    record(
        conn,
        &c.view,
        act,
        Action::CodeVerified,
        Some(me),
        json!({"channel": "EMAIL"}),
    )?;
    if !me.kind.needs_extra_step() {
        signatures::set_identity_confirmed(conn, me.seq, &at)?;
        record(
            conn,
            &c.view,
            act,
            Action::IdentityConfirmed,
            Some(me),
            json!({"type": me.kind.name(), "method": "RUT_AND_ONE_TIME_CODE"}),
        )?;
    }
    Ok(Ok(()))
}

/// Step 3 of FEA and FAO: the identity card's serial number, checked by the (simulated)
/// identity provider.
pub fn confirm_identity(
    conn: Db<'_>,
    token: &str,
    act: &Act<'_>,
    serial: &str,
) -> Result<Step<()>> {
    let c = match prelude(conn, token, act)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let me = c.me();
    if !me.kind.needs_extra_step() || me.identity_confirmed_at.is_some() {
        return Ok(Ok(()));
    }
    if me.code_verified_at.is_none() {
        return Ok(Err(StepError::CodeNotVerified));
    }
    if !act.sandbox {
        return Ok(Err(StepError::IdentityUnavailable));
    }
    let method = match me.kind {
        super::SignatureType::Fao => "ONLINE_IDENTITY_CHECK",
        _ => "IDENTITY_CARD_SERIAL",
    };
    let typed: String = serial
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_uppercase();
    if typed == sandbox::SERIAL_APPROVED {
        signatures::set_identity_confirmed(conn, me.seq, &act.at())?;
        record(
            conn,
            &c.view,
            act,
            Action::IdentityConfirmed,
            Some(me),
            json!({"type": me.kind.name(), "method": method, "provider": "SANDBOX_SIMULATION"}),
        )?;
        return Ok(Ok(()));
    }
    let (reason, error) = if typed == sandbox::SERIAL_DENIED {
        ("PROVIDER_DENIED", StepError::IdentityDenied)
    } else {
        ("NO_MATCH", StepError::IdentityMismatch)
    };
    signatures::add_failure(conn, me.seq, false)?;
    record(
        conn,
        &c.view,
        act,
        Action::IdentityFailed,
        Some(me),
        json!({"type": me.kind.name(), "method": method, "reason": reason}),
    )?;
    Ok(Err(error))
}

/// What a signature led to.
pub struct Signed {
    /// Every signature is in: the process awaits its seal (and is COMPLETED once sealed).
    pub completed: bool,
    pub process_seq: i64,
    pub process_id: String,
    pub callback: String,
}

/// Signs: the signatory's consent, then the seal when it was the last signature.
pub fn sign(conn: Db<'_>, token: &str, act: &Act<'_>, accepted: bool) -> Result<Step<Signed>> {
    let c = match prelude(conn, token, act)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let me = c.me().clone();
    if me.identity_confirmed_at.is_none() {
        return Ok(Err(StepError::IdentityRequired));
    }
    if !accepted {
        return Ok(Err(StepError::MustAccept));
    }
    let at = act.at();
    signatures::set_signed(conn, me.seq, &at)?;
    if c.view.process.state == ProcessState::Pending {
        signatures::set_process_state(
            conn,
            c.view.process.seq,
            ProcessState::InProgress,
            None,
            &at,
        )?;
    }
    let view = reload(conn, c.view.process.seq)?;
    let signed_me = view
        .signatories
        .iter()
        .find(|s| s.seq == me.seq)
        .cloned()
        .expect("the signatory is in its process");
    record(
        conn,
        &view,
        act,
        Action::Signed,
        Some(&signed_me),
        json!({"type": me.kind.name(), "order": me.order, "consent": "ACCEPTED_DOCUMENTS"}),
    )?;
    events::record(
        conn,
        &c.commerce,
        &view,
        EventKind::SignatorySigned,
        Some(&signed_me),
        act.now,
    )?;
    // The last signature leaves the process awaiting its seal, which happens outside this
    // transaction ([`prepare_seal`], [`SealJob::run`], [`complete_seal`]).
    let completed = view
        .signatories
        .iter()
        .all(|s| s.state == SignatoryState::Signed);
    Ok(Ok(Signed {
        completed,
        process_seq: view.process.seq,
        process_id: view.process.id.clone(),
        callback: view.process.url_callback.clone(),
    }))
}

/// Rejects with a reason: the process ends REJECTED.
pub fn reject(conn: Db<'_>, token: &str, act: &Act<'_>, reason: &str) -> Result<Step<Signed>> {
    let c = match prelude(conn, token, act)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let me = c.me().clone();
    if me.identity_confirmed_at.is_none() {
        return Ok(Err(StepError::IdentityRequired));
    }
    let reason = reason.trim();
    if !(3..=500).contains(&reason.chars().count()) {
        return Ok(Err(StepError::InvalidReason));
    }
    let at = act.at();
    signatures::set_rejected(conn, me.seq, &at, reason)?;
    signatures::set_process_state(
        conn,
        c.view.process.seq,
        ProcessState::Rejected,
        Some(reason),
        &at,
    )?;
    let view = reload(conn, c.view.process.seq)?;
    let rejected_me = view
        .signatories
        .iter()
        .find(|s| s.seq == me.seq)
        .cloned()
        .expect("the signatory is in its process");
    record(
        conn,
        &view,
        act,
        Action::Rejected,
        Some(&rejected_me),
        json!({"reason": reason}),
    )?;
    events::record(
        conn,
        &c.commerce,
        &view,
        EventKind::Rejected,
        Some(&rejected_me),
        act.now,
    )?;
    process_ended(conn, &view, &act.at())?;
    Ok(Ok(Signed {
        completed: false,
        process_seq: view.process.seq,
        process_id: view.process.id.clone(),
        callback: view.process.url_callback.clone(),
    }))
}

// ----- the seal -----

/// `2026-11-22T10:15:03.123Z` → `22-11-2026 10:15:03 UTC`.
pub fn printed_time(at: &str) -> String {
    DateTime::parse_from_rfc3339(at)
        .map(|t| {
            t.with_timezone(&Utc)
                .format("%d-%m-%Y %H:%M:%S UTC")
                .to_string()
        })
        .unwrap_or_else(|_| at.to_string())
}

fn stamp_of(s: &SignatoryRow) -> Stamp {
    Stamp {
        name: s.full_name.clone(),
        rut: s.rut.clone(),
        signed_at: printed_time(s.signed_at.as_deref().unwrap_or("")),
        kind: s.kind,
    }
}

/// One document of a [`SealJob`]: the original and everything printed on it.
struct DocumentJob {
    seq: i64,
    name: String,
    sha256: String,
    original: Vec<u8>,
    boxes: Vec<BoxStamp>,
    last_page: Vec<Stamp>,
    certificate: Vec<Line>,
    caption: String,
    footer: String,
}

/// A process whose signatures are all in, read in one snapshot, ready to seal away from the
/// store: sealing parses every document, which must never hold the shared writer.
pub struct SealJob {
    process_seq: i64,
    process_id: String,
    /// The trail the certificates print: completion checks it is still the whole trail.
    trail_len: usize,
    head: String,
    documents: Vec<DocumentJob>,
}

/// The sealed documents of a [`SealJob`], to be stored by [`complete_seal`].
pub struct Sealed {
    process_seq: i64,
    trail_len: usize,
    head: String,
    /// Document seq, name, original SHA-256, sealed bytes, sealed SHA-256.
    documents: Vec<(i64, String, String, Vec<u8>, String)>,
}

impl SealJob {
    pub fn process_id(&self) -> &str {
        &self.process_id
    }

    /// Stamps and seals every document: CPU only, no store.
    pub fn run(self) -> Result<Sealed> {
        let mut documents = Vec::with_capacity(self.documents.len());
        for doc in self.documents {
            let sealed = pdf::seal(
                &doc.original,
                &SealInput {
                    boxes: &doc.boxes,
                    last_page: &doc.last_page,
                    signature_page_caption: &doc.caption,
                    certificate: &doc.certificate,
                    footer: &doc.footer,
                },
            )
            .map_err(|e| {
                Error::Internal(anyhow::anyhow!(
                    "sealing {} of {}: {e}",
                    doc.name,
                    self.process_id
                ))
            })?;
            let sha = sha256_hex(&sealed);
            documents.push((doc.seq, doc.name, doc.sha256, sealed, sha));
        }
        Ok(Sealed {
            process_seq: self.process_seq,
            trail_len: self.trail_len,
            head: self.head,
            documents,
        })
    }
}

/// Whether the process is open with every signature in: it is waiting for its seal. Such a
/// process does not expire (its signatories are done); [`prepare_seal`] finishes it.
pub fn awaiting_seal(conn: Db<'_>, process_seq: i64) -> Result<bool> {
    let process = signatures::process_by_seq(conn, process_seq)?;
    Ok(process.state.is_open() && signatures::all_signed(conn, process_seq)?)
}

/// Reads what sealing the process needs, when it is awaiting its seal (`None` otherwise).
pub fn prepare_seal(conn: Db<'_>, process_seq: i64, act: &Act<'_>) -> Result<Option<SealJob>> {
    if !awaiting_seal(conn, process_seq)? {
        return Ok(None);
    }
    let view = reload(conn, process_seq)?;
    let commerce = commerces::by_id(conn, view.process.commerce_id)?.ok_or_else(|| {
        Error::Internal(anyhow::anyhow!(
            "process {} has no commerce",
            view.process.id
        ))
    })?;
    let trail = signatures::audit_of(conn, view.process.seq)?;
    let chain = audit::verify(&view.process.id, &trail);
    if !chain.valid {
        return Err(Error::Internal(anyhow::anyhow!(
            "the audit trail of {} does not verify at record {:?}",
            view.process.id,
            chain.broken_at
        )));
    }
    let head = chain.head.unwrap_or_default();
    let mut documents = Vec::new();
    for doc in &view.documents {
        let original = signatures::original_bytes(conn, doc.seq)?;
        let mut boxes = Vec::new();
        let mut last_page: Vec<(i64, Stamp)> = Vec::new();
        for p in signatures::placements_of(conn, doc.seq)? {
            let signatory = view
                .signatories
                .iter()
                .find(|s| s.seq == p.signatory_seq)
                .ok_or_else(|| Error::Internal(anyhow::anyhow!("placement of a stranger")))?;
            match p.placement {
                Placement::Manual {
                    page,
                    x,
                    y,
                    width,
                    height,
                } => boxes.push(BoxStamp {
                    page,
                    x,
                    y,
                    width,
                    height,
                    stamp: stamp_of(signatory),
                }),
                Placement::LastPage => {
                    if !last_page.iter().any(|(seq, _)| *seq == signatory.seq) {
                        last_page.push((signatory.seq, stamp_of(signatory)));
                    }
                }
            }
        }
        documents.push(DocumentJob {
            seq: doc.seq,
            name: doc.name.clone(),
            sha256: doc.sha256.clone(),
            original,
            boxes,
            last_page: last_page.into_iter().map(|(_, s)| s).collect(),
            certificate: certificate(&commerce, &view, doc, &trail, &head, act),
            caption: format!("{} · {}", view.process.process_name, doc.name),
            footer: format!(
                "{} · {} · SHA-256 original {}",
                view.process.id, doc.name, doc.sha256
            ),
        });
    }
    Ok(Some(SealJob {
        process_seq,
        process_id: view.process.id.clone(),
        trail_len: trail.len(),
        head,
        documents,
    }))
}

/// A process the seal just completed, for what its completion causes in the same write (the
/// mandate its signature activates: `operations::signed_activation::process_completed`).
pub struct Completed {
    pub commerce: Commerce,
    pub view: ProcessView,
}

/// Stores the sealed documents, makes the process COMPLETED and records its audit act and
/// `SIGNATURE_COMPLETED`, all in the caller's (short) transaction. `None` when the process
/// moved on meanwhile (already sealed, cancelled, or its trail grew): nothing is written.
pub fn complete_seal(conn: Db<'_>, sealed: Sealed, act: &Act<'_>) -> Result<Option<Completed>> {
    if !awaiting_seal(conn, sealed.process_seq)? {
        return Ok(None);
    }
    let view = reload(conn, sealed.process_seq)?;
    let trail = signatures::audit_of(conn, sealed.process_seq)?;
    let head = audit::verify(&view.process.id, &trail)
        .head
        .unwrap_or_default();
    if trail.len() != sealed.trail_len || head != sealed.head {
        return Ok(None);
    }
    let commerce = commerces::by_id(conn, view.process.commerce_id)?.ok_or_else(|| {
        Error::Internal(anyhow::anyhow!(
            "process {} has no commerce",
            view.process.id
        ))
    })?;
    let mut sealed_hashes = Vec::new();
    for (seq, name, sha256, bytes, sealed_sha) in &sealed.documents {
        signatures::set_sealed(conn, *seq, bytes, sealed_sha)?;
        sealed_hashes
            .push(json!({"documentName": name, "sha256": sha256, "sealedSha256": sealed_sha}));
    }
    signatures::set_process_state(
        conn,
        view.process.seq,
        ProcessState::Completed,
        None,
        &act.at(),
    )?;
    let view = reload(conn, view.process.seq)?;
    record(
        conn,
        &view,
        act,
        Action::Completed,
        None,
        json!({"sealed": sealed_hashes, "certifiedTrailHead": sealed.head}),
    )?;
    events::record(conn, &commerce, &view, EventKind::Completed, None, act.now)?;
    Ok(Some(Completed { commerce, view }))
}

/// The completion certificate of one document: the process, the document's hash, every
/// signatory and the audit trail up to the last signature, with the chain's head hash.
fn certificate(
    commerce: &Commerce,
    view: &ProcessView,
    doc: &DocumentRow,
    trail: &[signatures::AuditRow],
    head: &str,
    act: &Act<'_>,
) -> Vec<Line> {
    let p = &view.process;
    let name_of = |id: &str| {
        view.signatories
            .iter()
            .find(|s| s.id == id)
            .map(|s| format!("{} (RUT {})", s.full_name, s.rut))
            .unwrap_or_else(|| id.to_string())
    };
    let mut lines = vec![
        Line::Title("Certificado de firma electrónica".into()),
        Line::Text(format!("Proceso: {} ({})", p.process_name, p.id)),
        Line::Text(format!("Comercio: {} ({})", commerce.name, commerce.code)),
    ];
    if let Some(external) = &p.external_process_id {
        lines.push(Line::Text(format!(
            "Identificador del comercio: {external}"
        )));
    }
    if let Some(user) = &p.request_user {
        lines.push(Line::Text(format!("Solicitado por: {user}")));
    }
    lines.extend([
        Line::Text(format!(
            "Documento: {} ({} páginas originales)",
            doc.name, doc.page_count
        )),
        Line::Text(format!("SHA-256 del documento original: {}", doc.sha256)),
        Line::Text(format!(
            "Sellado: {} · todas las firmas fueron registradas",
            printed_time(&act.at())
        )),
        Line::Heading("Firmantes".into()),
    ]);
    for s in &view.signatories {
        lines.push(Line::Text(format!(
            "{}. {} · RUT {} · {} ({}) · orden {} · firmó el {}",
            s.position + 1,
            s.full_name,
            s.rut,
            s.kind.spanish(),
            s.kind.name(),
            s.order,
            printed_time(s.signed_at.as_deref().unwrap_or("")),
        )));
    }
    lines.push(Line::Heading("Registro de auditoría".into()));
    for r in trail {
        let who = r
            .signatory_id
            .as_deref()
            .map(|id| format!(" · {}", name_of(id)))
            .unwrap_or_default();
        lines.push(Line::Text(format!(
            "#{} {} · {}{}",
            r.position,
            printed_time(&r.at),
            Action::spanish(&r.action),
            who
        )));
        let mut small = format!(
            "IP {} · navegador: {}",
            r.ip.as_deref().unwrap_or("-"),
            r.user_agent.as_deref().unwrap_or("-")
        );
        if let Some(reason) = r.detail.get("method").and_then(Value::as_str) {
            small.push_str(&format!(" · método: {reason}"));
        }
        small.push_str(&format!(" · hash {}", r.hash));
        lines.push(Line::Small(small));
    }
    lines.extend([
        Line::Gap,
        Line::Text(format!(
            "Cadena de auditoría: cada registro incluye el hash SHA-256 del anterior; el último \
             registro certificado tiene el hash {head}."
        )),
        Line::Small(
            "La huella SHA-256 de este documento sellado se registra en el servicio (sealedSha256) \
             y en el registro de auditoría como acto de cierre; el documento original se conserva."
                .into(),
        ),
    ]);
    lines
}

/// The process of `view` has just been rejected, expired or cancelled: a mandate that awaited
/// it keeps PENDING, with the reason shown in its lookup.
pub fn process_ended(conn: Db<'_>, view: &ProcessView, at: &str) -> Result<()> {
    let failure = match view.process.state {
        ProcessState::Rejected => ActivationFailure::SignatureRejected,
        ProcessState::Expired => ActivationFailure::SignatureExpired,
        ProcessState::Cancelled => ActivationFailure::SignatureCancelled,
        _ => return Ok(()),
    };
    if let Some(row) = mandato_store::mandate_signatures::by_process(conn, view.process.seq)? {
        mandato_store::mandate_signatures::set_failure(conn, row.seq, failure, at)?;
    }
    Ok(())
}
