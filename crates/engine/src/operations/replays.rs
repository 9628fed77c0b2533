//! Idempotent creation by the merchant's own ids (CONTRACT 14): a creation records what it
//! answered in its own transaction, keyed by the merchant's id and with the hash of the
//! request, and an equal request for the same id is answered that again, with nothing else
//! written.

use mandato_core::error::{Error, Result};
use mandato_store::creation_replays::{self, Creation, Replay};
use mandato_store::db::Db;

use super::Ctx;

/// A creation request as the replay record knows it.
#[derive(Clone, Debug)]
pub struct CreationRequest {
    pub creation: Creation,
    /// The merchant's id (for installments, the mandate and the ids: see the front door).
    pub merchant_key: String,
    /// Lowercase hex SHA-256 of the request body's canonical JSON.
    pub request_sha256: String,
}

/// A creation's answer: its HTTP status and its body, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// What the commerce's earlier creation with this id answered, when its request was equal to
/// this one. A different request, or a creation made before answers were recorded, has none.
pub fn earlier(conn: Db<'_>, ctx: &Ctx<'_>, request: &CreationRequest) -> Result<Option<Answer>> {
    let found = creation_replays::find(
        conn,
        ctx.commerce.id,
        request.creation,
        &request.merchant_key,
    )?;
    Ok(found
        .filter(|replay| replay.request_sha256 == request.request_sha256)
        .map(|replay| Answer {
            status: u16::try_from(replay.status).unwrap_or(500),
            body: replay.response,
        }))
}

/// Records the creation's answer, in the creation's transaction. A customer's record follows
/// its latest write (`POST /user` also updates); any other id is recorded once, so that the
/// later of two racing creations with one id is refused here when nothing else refused it
/// (`externalProcessId` has no unique column of its own).
pub fn record(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    request: &CreationRequest,
    answer: &Answer,
) -> Result<()> {
    let replay = Replay {
        commerce_id: ctx.commerce.id,
        creation: request.creation,
        merchant_key: request.merchant_key.clone(),
        request_sha256: request.request_sha256.clone(),
        status: i64::from(answer.status),
        response: answer.body.clone(),
    };
    let at = ctx.timestamp();
    let written = match request.creation {
        Creation::User => creation_replays::replace(conn, &replay, &at),
        _ => creation_replays::insert(conn, &replay, &at),
    };
    written.map_err(|e| {
        if e.is_unique_violation() {
            already_used(request)
        } else {
            e.into()
        }
    })
}

/// The refusal of an id the commerce already used, at the field that carries it.
fn already_used(request: &CreationRequest) -> Error {
    let (name, field) = match request.creation {
        Creation::User => ("DUPLICATED_USER_ID", "customer.userId"),
        Creation::Mandate => ("DUPLICATED_MANDATE_ID", "mandate.id"),
        Creation::Installments => ("DUPLICATED_INSTALLMENT_ID", "installments"),
        Creation::Signature => (
            "DUPLICATED_EXTERNAL_PROCESS_ID",
            "process.externalProcessId",
        ),
    };
    Error::refused_at(name, field, "the id is already used by this commerce")
}
