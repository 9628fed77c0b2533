//! The staff API under `/admin/api`, used by the UI: sessions with an HttpOnly cookie and a
//! CSRF header, roles enforced on every operation, and a guard against other origins.

pub mod acquirer_calls;
pub mod acquirers;
pub mod audit;
pub mod backups;
pub mod calendar;
pub mod charging;
pub mod creation;
pub mod customers;
pub mod dashboard;
pub mod desk;
pub mod events;
pub mod fees;
pub mod ledger;
pub mod mandates;
pub mod paging;
pub mod past_due;
pub mod search;
pub mod session;
pub mod settings;
pub mod signatures;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use mandato_core::error::Error;

pub fn router(state: &AppState) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(super::small_body(routes!(
            session::setup_status,
            session::setup
        )))
        .routes(super::small_body(routes!(
            session::current,
            session::login,
            session::logout
        )))
        .routes(routes!(session::change_password))
        .routes(routes!(desk::sign_in))
        .routes(routes!(events::list))
        .routes(routes!(events::detail))
        .routes(routes!(events::verify))
        .routes(routes!(events::redeliver))
        .routes(routes!(events::rotate_secret))
        .routes(routes!(events::reveal_secret))
        // The paths of these three before they moved to /notifications, for older clients.
        .route("/events", axum::routing::get(events::list))
        .route("/events/{eventId}", axum::routing::get(events::detail))
        .route("/events/redeliver", axum::routing::post(events::redeliver))
        .routes(routes!(charging::overview))
        .routes(routes!(charging::run_now))
        .routes(routes!(charging::import_uf, settings::uf_values))
        .routes(routes!(charging::advance_clock))
        .routes(routes!(signatures::list))
        .routes(routes!(signatures::detail))
        .routes(routes!(signatures::download))
        .routes(routes!(signatures::verify_chain))
        .routes(super::signature::with_body_limit(routes!(
            signatures::create
        )))
        .routes(routes!(signatures::cancel))
        .routes(routes!(creation::create_customer))
        .routes(routes!(creation::create_mandate))
        .routes(routes!(dashboard::dashboard))
        .routes(routes!(customers::list))
        .routes(routes!(customers::detail))
        .routes(routes!(customers::payments))
        .routes(routes!(past_due::list))
        .routes(routes!(charging::run_detail))
        .routes(routes!(mandates::list))
        .routes(routes!(mandates::detail))
        .routes(routes!(mandates::document))
        .routes(super::body_budget::evidence_body(routes!(mandates::pay)))
        .routes(routes!(mandates::evidence_file))
        .routes(routes!(search::search))
        .routes(routes!(mandates::annul))
        .routes(routes!(mandates::add_installments))
        .routes(routes!(mandates::cancel))
        .routes(routes!(mandates::refund))
        .routes(routes!(settings::list_commerces, settings::create_commerce))
        .routes(routes!(settings::set_retry_policy))
        .routes(routes!(settings::set_activation_mode))
        .routes(routes!(settings::set_webhook_url))
        .routes(routes!(acquirers::list))
        .routes(routes!(acquirers::set, acquirers::remove))
        .routes(routes!(fees::list))
        .routes(routes!(acquirer_calls::list))
        .routes(routes!(fees::set, fees::reset))
        .routes(routes!(calendar::set_charging_rule))
        .routes(routes!(calendar::list_holidays, calendar::add_holiday))
        .routes(routes!(calendar::remove_holiday))
        .routes(routes!(settings::list_api_keys, settings::create_api_key))
        .routes(routes!(settings::revoke_api_key))
        .routes(routes!(settings::environment))
        .routes(routes!(
            settings::list_trusted_roots,
            settings::add_trusted_root
        ))
        .routes(routes!(settings::remove_trusted_root))
        .routes(routes!(settings::list_staff, settings::create_staff))
        .routes(routes!(settings::update_staff))
        .routes(routes!(settings::reset_staff_password))
        .routes(routes!(ledger::entries))
        .routes(routes!(ledger::settlements))
        .routes(routes!(ledger::export))
        .routes(routes!(ledger::reconcile, ledger::reconciliations))
        .routes(routes!(audit::staff_actions))
        .routes(routes!(audit::requests))
        .routes(routes!(audit::refusals))
        .routes(routes!(audit::verify_audit_chain))
        .routes(routes!(backups::list))
        .routes(routes!(
            settings::audit_retention,
            settings::set_audit_retention
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            origin_guard,
        ))
}

/// Staff operations come from this machine, and from pages of this origin only: the peer must
/// be loopback (unless the installation serves other machines), and a browser's `Origin`, when
/// sent, must be the `Host` it talks to.
async fn origin_guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let peer_ok = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .is_none_or(|c| c.0.ip().is_loopback() || state.config.allow_non_loopback);
    if !peer_ok {
        return ApiError(Error::forbidden(
            "PEER_NOT_ALLOWED",
            "the staff API answers this machine only",
        ))
        .into_response();
    }
    let headers = request.headers();
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok());
    if let Some(origin) = headers
        .get(axum::http::header::ORIGIN)
        .and_then(|o| o.to_str().ok())
    {
        let same = host.is_some_and(|h| {
            origin
                .split_once("://")
                .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(h))
        });
        if !same {
            return ApiError(Error::forbidden(
                "ORIGIN_NOT_ALLOWED",
                "cross-origin staff requests are refused",
            ))
            .into_response();
        }
    }
    if headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site") {
        return ApiError(Error::forbidden(
            "ORIGIN_NOT_ALLOWED",
            "cross-site staff requests are refused",
        ))
        .into_response();
    }
    next.run(request).await
}
