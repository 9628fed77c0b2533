//! `POST /sandbox/reset` (CONTRACT 12): a commerce starts its integration tests again from
//! nothing, without touching any other commerce. Sandbox only, like every sandbox operation.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::json::Body;
use super::sandbox::sandbox_only;
use mandato_engine::operations::sandbox;
use mandato_engine::records::{ResetCounts, ResetScope};

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetRequest {
    /// Keep the commerce's customers (their ids and RUTs stay taken); everything else goes.
    #[serde(default)]
    #[schema(default = false)]
    pub keep_customers: bool,
    /// Remove only what `mandato trigger` made (its throwaway `trigger-*` customers, mandates
    /// and signature processes, with their installments, events and ledger entries); the
    /// commerce's own test data stays. `keepCustomers` has no effect with it.
    #[serde(default)]
    #[schema(default = false)]
    pub triggers_only: bool,
}

impl ResetRequest {
    fn scope(&self) -> ResetScope {
        if self.triggers_only {
            ResetScope::TriggersOnly
        } else {
            ResetScope::Everything {
                keep_customers: self.keep_customers,
            }
        }
    }
}

/// How many rows of each kind were removed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetPayload {
    #[schema(minimum = 0)]
    pub customers: u64,
    #[schema(minimum = 0)]
    pub mandates: u64,
    #[schema(minimum = 0)]
    pub installments: u64,
    #[schema(minimum = 0)]
    pub charge_attempts: u64,
    #[schema(minimum = 0)]
    pub events: u64,
    #[schema(minimum = 0)]
    pub delivery_attempts: u64,
    #[schema(minimum = 0)]
    pub signature_processes: u64,
    #[schema(minimum = 0)]
    pub ledger_entries: u64,
}

impl From<ResetCounts> for ResetPayload {
    fn from(c: ResetCounts) -> Self {
        ResetPayload {
            customers: c.customers,
            mandates: c.mandates,
            installments: c.installments,
            charge_attempts: c.charge_attempts,
            events: c.events,
            delivery_attempts: c.delivery_attempts,
            signature_processes: c.signature_processes,
            ledger_entries: c.ledger_entries,
        }
    }
}

/// Remove this commerce's customers (unless kept), mandates, installments, charge attempts,
/// events (and their delivery attempts), ledger entries and reconciliations, and signature processes (with their documents,
/// signatories and audit), all in one transaction. Other commerces are untouched; the
/// commerce, its secret and API keys stay. Mandate and customer ids can be used again. With
/// `triggersOnly`, only `mandato trigger`'s throwaway records go. A reset never moves the
/// sandbox clock: it stays where `POST /sandbox/clock` left it.
#[utoipa::path(post, path = "/sandbox/reset", tag = "sandbox",
    params(super::common::CommonHeaders),
    request_body = ResetRequest,
    responses(
        (status = 200, description = "SANDBOX_RESET_OK", body = Envelope<ResetPayload>),
        (status = 400, description = "Invalid common headers or body", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn reset(
    State(state): State<AppState>,
    authed: Authed,
    Body(body): Body<ResetRequest>,
) -> ApiResult<Envelope<ResetPayload>> {
    sandbox_only(&state)?;
    let scope = body.scope();
    let counts = state
        .write(authed.commerce, move |tx, ctx| {
            sandbox::reset(tx, ctx.commerce.id, scope)
        })
        .await?;
    Ok(Envelope::ok(
        "SANDBOX_RESET_OK",
        "the commerce's sandbox data was removed",
        ResetPayload::from(counts),
    ))
}
