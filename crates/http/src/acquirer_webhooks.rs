//! What acquirers POST to us: Fintoc's webhooks at `/acquirers/fintoc/webhook` (CONTRACT 13).
//! No session or API key: the `Fintoc-Signature` over the raw body is the credential, checked
//! by the engine (`rails::fintoc_webhooks`). A verified event answers 200 `{"received":
//! true}`; an unverified, stale or replayed one answers 400 with its reason and changes
//! nothing.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use mandato_core::error::Error;

/// Fintoc's events carry one resource; a few KiB in its fixtures.
const EVENT_LIMIT: usize = 64 * 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/acquirers/fintoc/webhook", post(fintoc))
        .layer(DefaultBodyLimit::max(EVENT_LIMIT))
}

async fn fintoc(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<axum::Json<Value>> {
    let signature = headers
        .get("fintoc-signature")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    tokio::task::spawn_blocking(move || state.receive_fintoc_webhook(signature.as_deref(), &body))
        .await
        .map_err(|e| ApiError(Error::Internal(e.into())))??;
    Ok(axum::Json(json!({ "received": true })))
}
