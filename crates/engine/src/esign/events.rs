//! The webhook bodies of signature processes (CONTRACT 7), written to the same outbox as the
//! payment events, signed the same way, numbered by a `sequence` per process.
//!
//! ```json
//! {"event": "SIGNATORY_SIGNED", "eventId": "evt_...", "createdAt": "...", "sequence": 2,
//!  "process": {"internalId": "sig_...", "processName": "...", "externalProcessId": "P-001",
//!              "requestUser": "...", "state": {"id": 2, "name": "IN_PROGRESS"}},
//!  "signatory": {"internalId": "sgn_...", "userId": "cust-001", "internalUserId": "usr_...",
//!                "order": 1, "type": "FES", "state": {"id": 2, "name": "SIGNED"},
//!                "signedAt": "...", "rejectedAt": null},
//!  "signatories": [...], "documents": [{"internalId", "documentName", "sha256", "sealedSha256"}],
//!  "rejection": null, "dateTime": "...", "signature": "..."}
//! ```

use chrono::{DateTime, Utc};
use mandato_store::db::Db;
use serde_json::{Value, json};

use super::ceremony::ProcessView;
use crate::notify::signing;
use mandato_core::clock::timestamp;
use mandato_core::error::Result;
use mandato_store::commerces::Commerce;
use mandato_store::events::{self, NewEvent};
use mandato_store::signatures::{self, SignatoryRow};

/// The `kind` of signature events in the outbox (the staff filter's `signature`).
pub const OUTBOX_KIND: &str = "signature";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    SignatorySigned,
    Completed,
    Rejected,
    Cancelled,
    Expired,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::SignatorySigned => "SIGNATORY_SIGNED",
            EventKind::Completed => "SIGNATURE_COMPLETED",
            EventKind::Rejected => "SIGNATURE_REJECTED",
            EventKind::Cancelled => "SIGNATURE_CANCELLED",
            EventKind::Expired => "SIGNATURE_EXPIRED",
        }
    }
}

fn state(id: i64, name: &str) -> Value {
    json!({"id": id, "name": name})
}

pub fn signatory_json(s: &SignatoryRow) -> Value {
    json!({
        "internalId": s.id,
        "userId": s.user_id,
        "internalUserId": s.customer_id,
        "order": s.order,
        "type": s.kind.name(),
        "state": state(s.state.id(), s.state.name()),
        "signedAt": s.signed_at,
        "rejectedAt": s.rejected_at,
    })
}

/// Writes the event of a change to the outbox; `view` is the process after the change.
pub fn record(
    conn: Db<'_>,
    commerce: &Commerce,
    view: &ProcessView,
    kind: EventKind,
    signatory: Option<&SignatoryRow>,
    now: DateTime<Utc>,
) -> Result<String> {
    let p = &view.process;
    let event_id = mandato_core::ids::new_id("evt");
    let sequence = signatures::next_event_sequence(conn, p.seq)?;
    let created_at = timestamp(now);
    let rejection = match (kind, &p.rejection_reason) {
        (EventKind::Rejected, Some(reason)) => json!({"reason": reason}),
        _ => Value::Null,
    };
    let body = json!({
        "event": kind.name(),
        "eventId": event_id,
        "createdAt": created_at,
        "sequence": sequence,
        "process": {
            "internalId": p.id,
            "processName": p.process_name,
            "externalProcessId": p.external_process_id,
            "requestUser": p.request_user,
            "state": state(p.state.id(), p.state.name()),
        },
        "signatory": signatory.map(signatory_json),
        "signatories": view.signatories.iter().map(signatory_json).collect::<Vec<_>>(),
        "documents": view.documents.iter().map(|d| json!({
            "internalId": d.id,
            "documentName": d.name,
            "sha256": d.sha256,
            "sealedSha256": d.sealed_sha256,
        })).collect::<Vec<_>>(),
        "rejection": rejection,
        "dateTime": created_at,
    });
    let signed = signing::sign_body(body, &commerce.webhook_secret);
    events::insert(
        conn,
        &NewEvent {
            id: &event_id,
            commerce_id: commerce.id,
            mandate_seq: None,
            installment_seq: None,
            kind: OUTBOX_KIND,
            sequence,
            // A process a mandate's enrolment started for a mandate without an activation
            // webhook has none: its events are kept (and listed) but sent nowhere.
            url: Some(p.url_webhook.as_str()).filter(|url| !url.is_empty()),
            body: &serde_json::to_string(&signed)?,
            created_at: &created_at,
        },
    )?;
    signatures::link_event(conn, &event_id, p.seq)?;
    Ok(event_id)
}
