//! The Magic Link's bank step on Fintoc Direct Debit (CONTRACT 13): "Autorizar con mi banco"
//! creates a subscription intent (`POST /link/{token}/fintoc`) and answers a page that opens
//! Fintoc's widget with the intent's token; the customer authorizes the debit at their bank
//! there. Back on `/link/{token}/fintoc/return?intent=...` the server asks Fintoc how the intent
//! ended before it believes the page: an active subscription activates the mandate, a pending
//! one leaves it PENDING while the bank validates it (the charging run looks again), a failure
//! shows its reason. No account number or bank password reaches this server.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Extension;
use axum::Form;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::render::{self, Loaded, Notice};
use super::{
    AppState, TICK_THE_TERMS, acceptance_of, bad_form, business_now, failure, html, link_records,
    not_offered, open, page, see_other, terms_refusal, unavailable, value, write,
};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::processor::ProcessorError;
use mandato_engine::operations::activation;
use mandato_engine::operations::fintoc as enrolments;
use mandato_engine::rails::Acquirer;
use mandato_engine::rails::fintoc::Fintoc;

/// The Fintoc client of the mandate's commerce, when its bank rail is Fintoc.
fn fintoc_of(state: &AppState, loaded: &Loaded) -> Option<Arc<Fintoc>> {
    match state.acquirer_for(loaded.commerce.id, PaymentMethod::Pac) {
        Ok(Acquirer::Fintoc(fintoc)) => Some(fintoc),
        _ => None,
    }
}

async fn call<T: Send + 'static>(
    fintoc: Arc<Fintoc>,
    f: impl FnOnce(&Fintoc) -> Result<T, ProcessorError> + Send + 'static,
) -> Result<T, ProcessorError> {
    tokio::task::spawn_blocking(move || f(&fintoc))
        .await
        .unwrap_or_else(|e| Err(ProcessorError::Unavailable(e.to_string())))
}

/// Starts a subscription intent and answers the page that opens Fintoc's widget.
pub(super) async fn start(
    State(state): State<AppState>,
    Path(token): Path<String>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return bad_form(&rejection),
    };
    let (loaded, _) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let (Some(fintoc), Some(method)) = (fintoc_of(&state, &loaded), loaded.hosted_bank_method())
    else {
        return not_offered(&state, &token, &loaded);
    };
    if bank_validating(&state, &loaded) {
        // One authorization at a time: the bank is validating the last one.
        return problem(&state, &token, &loaded, VALIDATING);
    }
    if let Err(e) = activation::check_activatable(&loaded.mandate, method, business_now(&state)) {
        tracing::info!(error = %e, "fintoc enrolment not started");
        return problem(
            &state,
            &token,
            &loaded,
            "Este mandato ya no admite una activación.",
        );
    }
    let terms = loaded.terms(method);
    if let Some(refusal) = terms_refusal(&form, &terms, TICK_THE_TERMS) {
        return problem(&state, &token, &loaded, refusal);
    }
    let acceptance = acceptance_of(connect, &headers, terms);
    let seq = loaded.mandate.seq;
    let now = state.clock.now();
    match state.read_unscoped(|c| enrolments::may_start(c, seq, now)) {
        Ok(Ok(())) => {}
        Ok(Err(retry_at)) => {
            return super::too_many_declines(&state, &loaded.commerce.name, retry_at);
        }
        Err(e) => return failure(&e),
    }
    let name = loaded.commerce.name.clone();
    let started = match call(Arc::clone(&fintoc), move |f| f.create_intent(&name)).await {
        Ok(started) => started,
        Err(e) => {
            tracing::warn!(error = %e, "fintoc did not start a subscription intent");
            return unavailable(&loaded.commerce.name);
        }
    };
    let intent_id = started.id.clone();
    if let Err(e) = write(&state, move |tx| {
        enrolments::record_start(tx, &intent_id, seq, method, &acceptance, now)
    })
    .await
    {
        return failure(&e);
    }
    let back = format!("{}/link/{token}", state.public_base_url);
    let returned = format!(
        "{}/link/{token}/fintoc/return?intent={}",
        state.public_base_url, started.id
    );
    widget_page(
        &fintoc,
        &started.widget_token,
        &returned,
        &back,
        &loaded.commerce.name,
    )
}

/// The page that opens Fintoc's widget: Fintoc's script, and one inline script (allowed by
/// its hash) that reads the intent's token from the page and opens the widget.
fn widget_page(
    fintoc: &Fintoc,
    widget_token: &str,
    returned: &str,
    back: &str,
    commerce: &str,
) -> Response {
    let script_hash = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(render::FINTOC_SCRIPT))
    };
    let origin = fintoc.widget_origin();
    let policy = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data: {origin} https://*.fintoc.com; \
         script-src 'sha256-{script_hash}' {origin}; frame-src {origin} https://*.fintoc.com; \
         connect-src {origin} https://*.fintoc.com; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut response = html(
        StatusCode::OK,
        render::fintoc_widget_page(&render::FintocWidget {
            script: &fintoc.widget_script(),
            public_key: fintoc.public_key(),
            widget_token,
            returned,
            back,
            commerce,
        }),
    );
    if let Ok(value) = HeaderValue::from_str(&policy) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// The mandate's page with a problem about the bank step.
fn problem(state: &AppState, token: &str, loaded: &Loaded, text: &str) -> Response {
    page(
        state,
        StatusCode::BAD_REQUEST,
        token,
        loaded,
        Some(Notice::Problem(text.to_string())),
        None,
        None,
    )
}

/// Fintoc's intent ids are `si_` and letters and digits.
fn intent_shaped(id: &str) -> bool {
    (4..=64).contains(&id.len())
        && id.starts_with("si_")
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The customer is back from the widget: ask Fintoc how the intent ended and act on it.
pub(super) async fn returned(
    State(state): State<AppState>,
    Path(token): Path<String>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let params = query.map(|Query(q)| q).unwrap_or_default();
    let (loaded, _) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let back_to_page = || {
        see_other(&format!("/link/{token}"))
            .unwrap_or_else(|| page(&state, StatusCode::OK, &token, &loaded, None, None, None))
    };
    let intent_id = value(&params, "intent").to_string();
    if !intent_shaped(&intent_id) {
        return back_to_page();
    }
    let seq = loaded.mandate.seq;
    let lookup = intent_id.clone();
    let enrolment = match state.read_unscoped(|c| enrolments::enrolment(c, &lookup, seq)) {
        Ok(Some(enrolment)) => enrolment,
        Ok(None) => return back_to_page(),
        Err(e) => return failure(&e),
    };
    if enrolment.state != "STARTED" {
        return back_to_page();
    }
    let Some(fintoc) = fintoc_of(&state, &loaded) else {
        return unavailable(&loaded.commerce.name);
    };
    let asked = intent_id.clone();
    let intent = match call(Arc::clone(&fintoc), move |f| f.intent(&asked)).await {
        Ok(intent) => intent,
        Err(e) => {
            tracing::warn!(error = %e, "fintoc did not answer for an intent");
            return unavailable(&loaded.commerce.name);
        }
    };
    let now = state.clock.now();
    match (intent.status.as_str(), intent.subscription) {
        ("succeeded", Some(subscription)) if subscription.status == "active" => {
            activate_now(&state, &token, &loaded, enrolment, subscription).await
        }
        ("succeeded", Some(subscription)) => {
            let (id, sub) = (intent_id.clone(), subscription.id.clone());
            if let Err(e) =
                write(&state, move |tx| enrolments::validating(tx, &id, &sub, now)).await
            {
                return failure(&e);
            }
            see_other(&format!("/link/{token}?banco=validando")).unwrap_or_else(|| {
                page(
                    &state,
                    StatusCode::ACCEPTED,
                    &token,
                    &loaded,
                    Some(Notice::Info(VALIDATING.into())),
                    None,
                    None,
                )
            })
        }
        ("failed" | "rejected", _) => {
            let reason = intent
                .public_error
                .clone()
                .unwrap_or_else(|| intent.status.clone());
            let id = intent_id.clone();
            let failed = reason.clone();
            if let Err(e) = write(&state, move |tx| {
                enrolments::failed(tx, &id, "STARTED", &failed, now)
            })
            .await
            {
                return failure(&e);
            }
            problem(&state, &token, &loaded, &failure_text(&reason))
        }
        _ => problem(
            &state,
            &token,
            &loaded,
            "La autorización en su banco no terminó. No se registró ninguna cuenta; puede \
             intentarlo otra vez.",
        ),
    }
}

/// Whether the mandate waits for its bank to validate a Fintoc subscription.
pub(super) fn bank_validating(state: &AppState, loaded: &Loaded) -> bool {
    let seq = loaded.mandate.seq;
    loaded.mandate.state == mandato_core::domain::state::MandateState::Pending
        && state
            .read_unscoped(|c| enrolments::bank_validating(c, seq))
            .unwrap_or(false)
}

/// What the page says while the bank validates the subscription.
pub(super) const VALIDATING: &str = "Su banco está validando la autorización del cargo \
    automático. Le avisaremos cuando quede lista; no necesita hacer nada más.";

/// What the customer reads about a failed intent (`public_error` of the intent object).
fn failure_text(reason: &str) -> String {
    let why = match reason {
        "login_invalid_credentials" => "los datos de acceso a su banco no son correctos",
        "login_credentials_locked" => "su acceso al banco está bloqueado",
        "authorization_failed" | "rejected" => "la autorización no fue aprobada",
        "authorization_timeout" | "request_timeout" | "subscription_intent_expired" => {
            "se agotó el tiempo para autorizar"
        }
        _ => "el banco no pudo completarla",
    };
    format!(
        "No se autorizó el cargo automático: {why}. No se registró ninguna cuenta; puede \
         intentarlo otra vez."
    )
}

/// An active subscription activates the mandate now, as any activation does.
async fn activate_now(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    enrolment: enrolments::FintocEnrolment,
    subscription: mandato_engine::rails::fintoc::Subscription,
) -> Response {
    let method = PaymentMethod::from_id(enrolment.method_id).unwrap_or(PaymentMethod::Pac);
    let (instrument, enrolled) = match enrolments::instrument_of(method, &subscription) {
        Ok(made) => made,
        Err(e) => return failure(&e),
    };
    let acceptance = enrolments::acceptance_of(&enrolment);
    let document = super::epac_document(
        loaded,
        &instrument,
        &enrolled,
        &acceptance,
        enrolments::accepted_at(&enrolment),
    );
    let commerce = loaded.commerce.clone();
    let seq = loaded.mandate.seq;
    let now = state.clock.now();
    let check_at = business_now(state);
    let intent_id = enrolment.intent_id.clone();
    let subscription_id = subscription.id.clone();
    let result = write(state, move |tx| {
        if !enrolments::activated(tx, &intent_id, "STARTED", &subscription_id, now)? {
            return Err(mandato_core::error::Error::refused(
                "MANDATE_STATE_CONFLICT",
                "the enrolment ended meanwhile",
            ));
        }
        let fresh = link_records::fresh(tx, seq)?;
        activation::check_activatable(&fresh, method, check_at)?;
        activation::activate(
            tx,
            &commerce,
            &fresh,
            &activation::Enrolment {
                instrument: &instrument,
                enrolled: &enrolled,
                acceptance: &acceptance,
                document: document.as_ref(),
            },
            now,
        )
    })
    .await;
    super::activated_on_acquirer_page(state, token, loaded, result, "a fintoc subscription")
}
