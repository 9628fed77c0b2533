//! Cards inscribed on Webpay's page (Transbank Oneclick Mall, CONTRACT 13): the Magic Link
//! starts an inscription (`POST /link/{token}/oneclick`), hands the customer to Webpay with
//! Transbank's token, and finishes it when Transbank brings the customer back
//! (`/link/{token}/oneclick/return`, by GET or POST as Transbank's guide warns). An approved
//! inscription activates the mandate (or replaces its card) exactly as a typed card does;
//! no card number, expiry or CVV ever reaches this server.
//!
//! Transbank's return carries only `TBK_TOKEN` after an approval, a refusal or a timeout, and
//! `TBK_TOKEN`, `TBK_ORDEN_COMPRA` and `TBK_ID_SESION` when the customer cancelled on Webpay
//! ("Resumen de flujos", transbankdevelopers.cl/documentacion/oneclick). One card per
//! Oneclick username: a new inscription for the customer invalidates the previous card at
//! Transbank, so a replaced card needs no deletion of its own.

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

use super::render::{self, Loaded, Submitted};
use super::{
    AppState, Gate, TICK_THE_TERMS, acceptance_of, bad_form, business_now, failure, html,
    link_records, not_offered, open, page, see_other, terms_refusal, unavailable, value, write,
};
use mandato_core::clock::timestamp;
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::instrument::InstrumentFacts;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::processor::{Enrolled, ProcessorError};
use mandato_engine::operations::activation::{self, Acceptance};
use mandato_engine::operations::card_update;
use mandato_engine::operations::oneclick::{self as inscriptions, Ending, Purpose};
use mandato_engine::rails::Acquirer;
use mandato_engine::rails::transbank::{InscriptionOutcome, Oneclick};

/// The Transbank client of the mandate's commerce, when its cards rail is Transbank.
fn oneclick_of(state: &AppState, loaded: &Loaded) -> Option<Arc<Oneclick>> {
    match state.acquirer_for(loaded.commerce.id, PaymentMethod::CreditCard) {
        Ok(Acquirer::Transbank(oneclick)) => Some(oneclick),
        _ => None,
    }
}

/// Runs a blocking Transbank call off the async workers.
async fn call<T: Send + 'static>(
    oneclick: Arc<Oneclick>,
    f: impl FnOnce(&Oneclick) -> Result<T, ProcessorError> + Send + 'static,
) -> Result<T, ProcessorError> {
    tokio::task::spawn_blocking(move || f(&oneclick))
        .await
        .unwrap_or_else(|e| Err(ProcessorError::Unavailable(e.to_string())))
}

/// Starts an inscription: checks the accepted terms, asks Transbank for a token and answers
/// the page that posts it to Webpay.
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
    let (loaded, gate) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let Some(oneclick) = oneclick_of(&state, &loaded) else {
        return not_offered(&state, &token, &loaded);
    };
    let Some(method) = loaded.methods().into_iter().find(|m| m.is_card()) else {
        return not_offered(&state, &token, &loaded);
    };
    let purpose = match gate {
        Gate::Active => Purpose::CardChange,
        _ => Purpose::Activation,
    };
    if purpose == Purpose::Activation
        && let Err(e) = activation::check_activatable(&loaded.mandate, method, business_now(&state))
    {
        tracing::info!(error = %e, "oneclick inscription not started");
        return refused(
            &state,
            &token,
            &loaded,
            purpose,
            "Este mandato ya no admite una activación.",
        );
    }
    let terms = loaded.terms(method);
    if let Some(refusal) = terms_refusal(&form, &terms, TICK_THE_TERMS) {
        return refused(&state, &token, &loaded, purpose, refusal);
    }
    let acceptance = acceptance_of(connect, &headers, terms);
    let seq = loaded.mandate.seq;
    let now = state.clock.now();
    match state.read_unscoped(|c| inscriptions::may_start(c, seq, now)) {
        Ok(Ok(())) => {}
        Ok(Err(retry_at)) => {
            return super::too_many_declines(&state, &loaded.commerce.name, retry_at);
        }
        Err(e) => return failure(&e),
    }
    let username = loaded.customer.id.clone();
    let email = loaded.customer.email.clone();
    let response_url = format!("{}/link/{token}/oneclick/return", state.public_base_url);
    let started = match call(oneclick, move |o| {
        o.start_inscription(&username, &email, &response_url)
    })
    .await
    {
        Ok(started) => started,
        Err(ProcessorError::Refused(reason)) => {
            tracing::warn!(%reason, "transbank refused to start an inscription");
            return unavailable(&loaded.commerce.name);
        }
        Err(ProcessorError::Unavailable(reason)) => {
            tracing::warn!(%reason, "transbank unavailable for an inscription");
            return unavailable(&loaded.commerce.name);
        }
    };
    if !webpay_url_acceptable(&started.url_webpay, state.config.environment.is_sandbox()) {
        tracing::error!("transbank answered a url_webpay that is not https");
        return unavailable(&loaded.commerce.name);
    }
    let tbk_token = started.token.clone();
    let at = timestamp(state.clock.now());
    if let Err(e) = write(&state, move |tx| {
        inscriptions::record_start(tx, &tbk_token, seq, purpose, &acceptance, &at)
    })
    .await
    {
        return failure(&e);
    }
    hand_off(
        &started.url_webpay,
        render::WebpayErrand::Inscription,
        &started.token,
        &loaded.commerce.name,
    )
}

/// Webpay's address must be `https://` (or `http://` in a sandbox, for a local stand-in).
pub(super) fn webpay_url_acceptable(url: &str, sandbox: bool) -> bool {
    match url::Url::parse(url) {
        Ok(parsed) => parsed.scheme() == "https" || (sandbox && parsed.scheme() == "http"),
        Err(_) => false,
    }
}

/// The page that posts the token to Webpay, with a policy that allows its one script and
/// lets its form leave for Webpay.
pub(super) fn hand_off(
    url_webpay: &str,
    errand: render::WebpayErrand,
    tbk_token: &str,
    commerce: &str,
) -> Response {
    let script_hash = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(render::WEBPAY_SCRIPT))
    };
    let policy = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
         script-src 'sha256-{script_hash}'; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut response = html(
        StatusCode::OK,
        render::webpay_redirect_page(url_webpay, errand, tbk_token, commerce),
    );
    if let Ok(value) = HeaderValue::from_str(&policy) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// The mandate's page with a problem about the card step.
fn refused(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    purpose: Purpose,
    text: &str,
) -> Response {
    let submitted = Submitted {
        values: HashMap::new(),
        errors: vec![("accept".to_string(), text.to_string())],
    };
    match purpose {
        Purpose::CardChange => {
            super::card_update_page(state, StatusCode::BAD_REQUEST, token, loaded, submitted)
        }
        Purpose::Activation => {
            let first_card = loaded
                .methods()
                .into_iter()
                .find(|m| m.is_card())
                .map_or(0, |m| m.id());
            page(
                state,
                StatusCode::BAD_REQUEST,
                token,
                loaded,
                None,
                Some((first_card, submitted)),
                None,
            )
        }
    }
}

pub(super) async fn returned_by_get(
    state: State<AppState>,
    token: Path<String>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let params = query.map(|Query(q)| q).unwrap_or_default();
    returned(state, token, params).await
}

pub(super) async fn returned_by_post(
    state: State<AppState>,
    token: Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let params = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return bad_form(&rejection),
    };
    returned(state, token, params).await
}

/// Transbank's tokens are at most 64 characters of letters and digits.
fn tbk_token_shaped(token: &str) -> bool {
    (1..=64).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The customer is back from Webpay: finish the inscription and act on its outcome.
async fn returned(
    State(state): State<AppState>,
    Path(token): Path<String>,
    params: HashMap<String, String>,
) -> Response {
    let (loaded, _) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let tbk_token = value(&params, "TBK_TOKEN").to_string();
    let back_to_page = || {
        see_other(&format!("/link/{token}"))
            .unwrap_or_else(|| page(&state, StatusCode::OK, &token, &loaded, None, None, None))
    };
    if !tbk_token_shaped(&tbk_token) {
        return back_to_page();
    }
    let seq = loaded.mandate.seq;
    let lookup = tbk_token.clone();
    let started = match state.read_unscoped(|c| inscriptions::started(c, &lookup, seq)) {
        Ok(Some(started)) => started,
        // Not an inscription of this mandate: nothing to finish here.
        Ok(None) => return back_to_page(),
        Err(e) => return failure(&e),
    };
    if started.state != "STARTED" {
        // A second return (reload, back button): the first one already acted.
        return back_to_page();
    }
    let purpose = Purpose::parse(&started.purpose).unwrap_or(Purpose::Activation);
    let now = state.clock.now();
    let at = timestamp(now);
    if params.contains_key("TBK_ORDEN_COMPRA") {
        // Cancelled on Webpay's page: Transbank adds TBK_ORDEN_COMPRA and TBK_ID_SESION,
        // whose contents it does not document for inscriptions (they may be empty).
        let ended = tbk_token.clone();
        let recorded = write(&state, move |tx| {
            inscriptions::end(tx, &ended, Ending::Abandoned, &at)
        })
        .await;
        if let Err(e) = recorded {
            return failure(&e);
        }
        return refused(
            &state,
            &token,
            &loaded,
            purpose,
            "Anuló la inscripción en Webpay: no se registró ninguna tarjeta. Puede intentarlo \
             otra vez cuando quiera.",
        );
    }
    let Some(oneclick) = oneclick_of(&state, &loaded) else {
        return unavailable(&loaded.commerce.name);
    };
    let finishing = tbk_token.clone();
    let outcome = match call(Arc::clone(&oneclick), move |o| {
        o.finish_inscription(&finishing)
    })
    .await
    {
        Ok(outcome) => outcome,
        Err(ProcessorError::Unavailable(reason)) => {
            tracing::warn!(%reason, "transbank unavailable to finish an inscription");
            return unavailable(&loaded.commerce.name);
        }
        Err(ProcessorError::Refused(reason)) => {
            tracing::info!(%reason, "transbank refused to finish an inscription");
            InscriptionOutcome::Refused { response_code: -1 }
        }
    };
    let (enrolled, method) = match outcome {
        InscriptionOutcome::Approved { enrolled, method } => (enrolled, method),
        InscriptionOutcome::Refused { response_code } => {
            let ended = tbk_token.clone();
            if let Err(e) = write(&state, move |tx| {
                inscriptions::end(tx, &ended, Ending::Refused, &at)
            })
            .await
            {
                return failure(&e);
            }
            return refused(
                &state,
                &token,
                &loaded,
                purpose,
                &refusal_text(response_code),
            );
        }
    };
    // The new card replaced the customer's previous one at Transbank: their other mandates
    // move to it (`repoint_customer_cards`).
    let (customer_seq, seq) = (loaded.customer.seq, loaded.mandate.seq);
    let repointing = enrolled.clone();
    let repointed = match write(&state, move |tx| {
        inscriptions::repoint_customer_cards(tx, customer_seq, seq, method, &repointing, now)
    })
    .await
    {
        Ok(repointed) => repointed,
        Err(e) => return failure(&e),
    };
    if !repointed.moved.is_empty() {
        tracing::info!(moved = ?repointed.moved, "the customer's other mandates now use the new card");
    }
    if !loaded.mandate.payment_methods.contains(&method.id()) {
        // A card of a method the mandate does not take: its inscription is deleted, unless
        // the customer's other mandates now depend on it.
        if !repointed.moved.is_empty() {
            let ended = tbk_token.clone();
            if let Err(e) = write(&state, move |tx| {
                inscriptions::end(tx, &ended, Ending::Refused, &at)
            })
            .await
            {
                return failure(&e);
            }
            let text = format!(
                "La tarjeta inscrita es de tipo «{}», que este mandato no admite; quedó para sus \
                 otros mandatos con este comercio. Inscriba una tarjeta de otro tipo para este.",
                mandato_engine::documents::spanish::method(method)
            );
            return refused(&state, &token, &loaded, purpose, &text);
        }
        let username = loaded.customer.id.clone();
        let tbk_user = enrolled.token.clone();
        if let Err(e) = call(oneclick, move |o| {
            o.delete_inscription(&username, &tbk_user)
        })
        .await
        {
            tracing::warn!(error = %e, "an inscription of a method not allowed was not deleted");
        }
        let ended = tbk_token.clone();
        if let Err(e) = write(&state, move |tx| {
            inscriptions::end(tx, &ended, Ending::Refused, &at)
        })
        .await
        {
            return failure(&e);
        }
        let text = format!(
            "La tarjeta inscrita es de tipo «{}», que este mandato no admite. Inscriba una \
             tarjeta de otro tipo.",
            mandato_engine::documents::spanish::method(method)
        );
        return refused(&state, &token, &loaded, purpose, &text);
    }
    let acceptance = Acceptance {
        ip: started.ip.clone(),
        user_agent: started.user_agent.clone(),
        terms: started.terms.clone(),
    };
    match purpose {
        Purpose::CardChange => {
            change_card(
                &state, &token, &loaded, tbk_token, method, enrolled, acceptance,
            )
            .await
        }
        Purpose::Activation => {
            activate(
                &state, &token, &loaded, tbk_token, method, enrolled, acceptance,
            )
            .await
        }
    }
}

/// What the customer reads about a refused inscription.
fn refusal_text(response_code: i64) -> String {
    match response_code {
        // Transbank answers -96 for an inscription the customer never completed (timed out
        // or left) (its PHP SDK's tests against the integration environment).
        -96 => "La inscripción no se completó en Webpay (se anuló o expiró el tiempo). No se \
                registró ninguna tarjeta; puede intentarlo otra vez."
            .to_string(),
        code => format!(
            "Transbank rechazó la inscripción de la tarjeta (código {code}). No se registró \
             ninguna tarjeta; revise los datos o inscriba otra."
        ),
    }
}

async fn activate(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    tbk_token: String,
    method: PaymentMethod,
    enrolled: Enrolled,
    acceptance: Acceptance,
) -> Response {
    let now = state.clock.now();
    let at = timestamp(now);
    let instrument = InstrumentFacts::Card { method };
    if loaded.mandate.activation_mode == ActivationMode::Signature {
        let ended = tbk_token.clone();
        if let Err(e) = write(state, move |tx| {
            inscriptions::end(tx, &ended, Ending::Finished, &at)
        })
        .await
        {
            return failure(&e);
        }
        let claim = match super::claim_attempt(state, loaded).await {
            Ok(claim) => claim,
            Err(response) => return response,
        };
        let enrolling = super::signing::Enrolling {
            method,
            instrument,
            enrolled,
            acceptance,
            claim,
            submitted: Submitted {
                values: HashMap::new(),
                errors: Vec::new(),
            },
        };
        return super::signing::start(state, token, loaded, enrolling, now).await;
    }
    let commerce = loaded.commerce.clone();
    let seq = loaded.mandate.seq;
    let check_at = business_now(state);
    let result = write(state, move |tx| {
        if !inscriptions::end(tx, &tbk_token, Ending::Finished, &at)? {
            return Err(mandato_core::error::Error::refused(
                "MANDATE_STATE_CONFLICT",
                "the inscription was finished meanwhile",
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
                document: None,
            },
            now,
        )
    })
    .await;
    super::activated_on_acquirer_page(state, token, loaded, result, "an inscription")
}

async fn change_card(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    tbk_token: String,
    method: PaymentMethod,
    enrolled: Enrolled,
    acceptance: Acceptance,
) -> Response {
    let now = state.clock.now();
    let at = timestamp(now);
    let today = state.today();
    let seq = loaded.mandate.seq;
    let instrument = InstrumentFacts::Card { method };
    let changed = write(state, move |tx| {
        if !inscriptions::end(tx, &tbk_token, Ending::Finished, &at)? {
            return Err(mandato_core::error::Error::refused(
                "MANDATE_STATE_CONFLICT",
                "the inscription was finished meanwhile",
            ));
        }
        let fresh = link_records::fresh(tx, seq)?;
        card_update::replace_card(
            tx,
            &fresh,
            &activation::Enrolment {
                instrument: &instrument,
                enrolled: &enrolled,
                acceptance: &acceptance,
                document: None,
            },
            today,
            now,
        )
    })
    .await;
    match changed {
        Ok(changed) => see_other(&format!("/link/{token}?tarjeta={}", changed.retried))
            .unwrap_or_else(|| page(state, StatusCode::OK, token, loaded, None, None, None)),
        Err(e) => {
            tracing::info!(error = %e, "card change after an inscription refused");
            refused(
                state,
                token,
                loaded,
                Purpose::CardChange,
                "Su mandato ya no está activo, por lo que no registramos la nueva tarjeta.",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webpay_must_be_https_outside_the_sandbox() {
        assert!(webpay_url_acceptable(
            "https://webpay3gint.transbank.cl/webpayserver/bp_multicode_inscription.cgi",
            false
        ));
        assert!(!webpay_url_acceptable("http://127.0.0.1:9/x", false));
        assert!(webpay_url_acceptable("http://127.0.0.1:9/x", true));
        assert!(!webpay_url_acceptable("javascript:alert(1)", true));
    }

    #[test]
    fn transbank_tokens_are_letters_and_digits() {
        assert!(tbk_token_shaped(
            "01ab69087c923abf08331e7bc42b4af10140f2d3f2e54e53d7ae01aebe6ddc52"
        ));
        assert!(!tbk_token_shaped("../x"));
        assert!(!tbk_token_shaped(""));
    }
}
