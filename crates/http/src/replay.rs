//! Idempotent creation by the merchant's own ids (CONTRACT 14), for `POST /user`, `/mandate`,
//! `/installments` and `/signature`. A creation's answer is recorded in its own transaction
//! (`operations::replays`); a request that repeats the id with an equal body (`HashedBody`: the
//! canonical JSON's hash) is answered that status and body again, byte for byte, with
//! `Mandato-Replayed: true`, and nothing else is written. A different body for the id goes
//! on to the operation, which refuses the id as before (or, for `POST /user`, updates).
//!
//! A handler first asks [`earlier`], before validating (an equal request passed validation
//! once, and some checks depend on the day), then runs its operation through [`create`].

use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::AppState;
use super::envelope::Envelope;
use super::error::{ApiError, ApiResult};
use mandato_core::error::{Error, Result};
use mandato_engine::operations::Ctx;
use mandato_engine::operations::replays::{self, Answer, CreationRequest};
use mandato_engine::records::{Commerce, Creation, Db};

/// Marks an answer repeated from an earlier equal request.
pub const REPLAYED: HeaderName = HeaderName::from_static("mandato-replayed");

/// A creation's answer: the first, or a replay of it.
pub struct Created {
    answer: Answer,
    replayed: bool,
}

impl IntoResponse for Created {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.answer.status).unwrap_or(StatusCode::OK);
        let mut response = (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            self.answer.body,
        )
            .into_response();
        if self.replayed {
            response
                .headers_mut()
                .insert(REPLAYED, HeaderValue::from_static("true"));
        }
        response
    }
}

/// The creation a request asks for, keyed by its merchant id; `None` without one (an absent
/// `externalProcessId`, or a body too broken to name it): nothing is then replayed or recorded.
pub fn request(
    creation: Creation,
    merchant_key: Option<String>,
    request_sha256: String,
) -> Option<CreationRequest> {
    merchant_key.map(|merchant_key| CreationRequest {
        creation,
        merchant_key,
        request_sha256,
    })
}

/// The answer to an earlier equal request for the same id, if there was one.
pub fn earlier(
    state: &AppState,
    commerce: &Commerce,
    request: Option<&CreationRequest>,
) -> ApiResult<Option<Created>> {
    let Some(request) = request else {
        return Ok(None);
    };
    let found = state.read(commerce, |conn, ctx| replays::earlier(conn, ctx, request))?;
    Ok(found.map(|answer| Created {
        answer,
        replayed: true,
    }))
}

/// A creation refused before its transaction (a field, a webhook destination): an equal
/// request for the same id answered earlier is answered again, as the transaction would have
/// answered it; otherwise the refusal. Checking for the earlier answer only then, and inside
/// the creation's transaction otherwise (`create`), spares every new creation a transaction of
/// its own (three round trips on PostgreSQL).
pub fn earlier_or(
    state: &AppState,
    commerce: &Commerce,
    request: Option<&CreationRequest>,
    refused: impl Into<ApiError>,
) -> ApiResult<Created> {
    match earlier(state, commerce, request) {
        Ok(Some(replayed)) => Ok(replayed),
        _ => Err(refused.into()),
    }
}

/// Runs a creation and records its answer in the same transaction, unless an equal request for
/// the same id was answered meanwhile. When the creation fails because a racing equal request
/// took the id first (its commit came between our look and our write), that one's answer is
/// the answer.
pub async fn create<P: Serialize + 'static>(
    state: &AppState,
    commerce: Arc<Commerce>,
    request: Option<CreationRequest>,
    operation: impl Fn(Db<'_>, &Ctx<'_>) -> Result<Envelope<P>> + Send + 'static,
) -> ApiResult<Created> {
    let recorded = request.clone();
    let written = state
        .write(Arc::clone(&commerce), move |tx, ctx| {
            if let Some(request) = &recorded
                && let Some(answer) = replays::earlier(tx, ctx, request)?
            {
                return Ok(Created {
                    answer,
                    replayed: true,
                });
            }
            let answer = answered(&operation(tx, ctx)?)?;
            if let Some(request) = &recorded {
                // An equal request that committed while this one ran is the answer (on
                // PostgreSQL the operation may have waited for it, then updated what it
                // created): this write is undone, and its answer replayed below.
                if replays::earlier(tx, ctx, request)?.is_some() {
                    return Err(Error::refused(
                        "CREATION_RACED",
                        "an equal request was answered meanwhile",
                    ));
                }
                replays::record(tx, ctx, request, &answer)?;
            }
            Ok(Created {
                answer,
                replayed: false,
            })
        })
        .await;
    match written {
        Ok(created) => Ok(created),
        Err(refused) => match earlier(state, &commerce, request.as_ref()) {
            Ok(Some(replayed)) => Ok(replayed),
            _ => Err(refused),
        },
    }
}

/// The envelope as it is answered (and recorded).
fn answered<P: Serialize>(envelope: &Envelope<P>) -> Result<Answer> {
    Ok(Answer {
        status: envelope.status_code,
        body: serde_json::to_string(envelope).map_err(|e| Error::Internal(e.into()))?,
    })
}
