//! The customer's Magic Link (CONTRACT 6, seed 1.3 and 1.7): `GET /link/{token}` shows the
//! mandate and, while it awaits activation, a form per allowed payment method; `POST` enrols
//! the instrument and activates the mandate. The same page is the payment portal: due or
//! rejected installments can be paid by card (`POST /link/{token}/pay/{installment}`), before
//! or after activation. A paid installment has a printable receipt
//! (`/link/{token}/comprobante/{installment}`), and an active mandate's customer can replace
//! the card (`POST /link/{token}/tarjeta`): after a rejected charge the page says why and
//! offers it, and the rejected installments are retried at the next run with the new card.
//!
//! These are HTML pages for a browser: outside `/api/v1`, no merchant headers, not in the
//! OpenAPI document. The token in the path is the only credential, so the pages ask browsers
//! not to cache them nor send them as a referrer.
//!
//! Card numbers, CVVs and account numbers go to the processor and are forgotten: they are
//! never stored, logged or written back into a page.

mod fintoc;
pub mod one_at_a_time;
mod oneclick;
mod render;
mod signing;
mod webpay;

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Form, Router};
use chrono::{DateTime, Datelike, Utc};

use super::AppState;
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::instrument::{
    InstrumentFacts, InstrumentInput, InstrumentProblem, luhn_valid,
};
use mandato_core::domain::money::Currency;
use mandato_core::domain::state::{InstallmentState, MandateState, PaymentMethod};
use mandato_core::error::{Error, Result};
use mandato_core::processor::{ChargeRequest, ChargeResult, Enrolled, Processor, ProcessorError};
use mandato_core::secret::Secret;
use mandato_engine::documents::of_mandate::{self, Subject};
use mandato_engine::documents::{MandateDocument, spanish};
use mandato_engine::operations::activation::{self, Acceptance};
use mandato_engine::operations::link::{self as link_records, LinkRecords};
use mandato_engine::operations::portal::{self, ApprovedPayment};
use mandato_engine::rails::Acquirer;
use mandato_engine::records::{Db, InstallmentRow, MandateRow};
use render::{Loaded, Notice, Offered, Submitted, View, payable};

/// Forms are a few fields; anything larger is not a browser filling them in.
const FORM_LIMIT: usize = 64 * 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/link/{token}", get(show).post(activate))
        .route(
            "/link/{token}/pay/{installment}",
            get(back_to_page).post(pay),
        )
        .route("/link/{token}/tarjeta", get(back_to_link).post(update_card))
        .route("/link/{token}/comprobante/{installment}", get(receipt))
        .route(
            "/link/{token}/oneclick",
            get(back_to_link).post(oneclick::start),
        )
        .route(
            "/link/{token}/oneclick/return",
            get(oneclick::returned_by_get).post(oneclick::returned_by_post),
        )
        .route(
            "/link/{token}/fintoc",
            get(back_to_link).post(fintoc::start),
        )
        .route("/link/{token}/fintoc/return", get(fintoc::returned))
        .route(
            "/link/{token}/webpay/return",
            get(webpay::returned_by_get).post(webpay::returned_by_post),
        )
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(axum::middleware::map_response(page_headers))
}

async fn page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    // A page that set its own policy (the Webpay hand-off, with its one script) keeps it.
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                // No form-action: a successful activation redirects to the merchant's callback.
                "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                 frame-ancestors 'none'; base-uri 'none'",
            ),
        );
    }
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

// ----- responses -----

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn unknown_link() -> Response {
    html(
        StatusCode::NOT_FOUND,
        render::message_page(
            "Enlace no válido",
            "No encontramos un mandato para este enlace. Revise que lo haya copiado completo o \
             pida al comercio un enlace nuevo.",
            None,
        ),
    )
}

fn expired_link(commerce: &str) -> Response {
    html(
        StatusCode::GONE,
        render::message_page(
            "El enlace ha expirado",
            "Este enlace de activación ya no está vigente. Pida al comercio que le envíe uno \
             nuevo.",
            Some(commerce),
        ),
    )
}

fn closed_mandate(commerce: &str, state: MandateState) -> Response {
    let (title, text) = match state {
        MandateState::Finished => (
            "Mandato terminado",
            "Este mandato ya terminó: todas sus cuotas están resueltas. No hay nada más que \
             hacer en este enlace.",
        ),
        MandateState::Deleted => (
            "Mandato eliminado",
            "El comercio eliminó este mandato antes de su activación. Si cree que es un error, \
             contáctelo.",
        ),
        _ => (
            "Mandato cancelado",
            "Este mandato fue cancelado y ya no admite activaciones ni pagos. Si cree que es un \
             error, contacte al comercio.",
        ),
    };
    html(
        StatusCode::GONE,
        render::message_page(title, text, Some(commerce)),
    )
}

fn failure(error: &Error) -> Response {
    tracing::error!(error = %error, "magic link page failed");
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        render::message_page(
            "Ocurrió un error",
            "No pudimos completar la operación. Nada fue cobrado ni registrado; intente \
             nuevamente en unos minutos.",
            None,
        ),
    )
}

fn unavailable(commerce: &str) -> Response {
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        render::message_page(
            "Servicio no disponible",
            "No pudimos comunicarnos con el procesador de pagos. Intente nuevamente en unos \
             minutos.",
            Some(commerce),
        ),
    )
}

/// 429 with `Retry-After`: the link had its declined attempts for the hour (CONTRACT 12).
/// Checked before the processor is called, so a card tried here is never sent.
fn too_many_declines(state: &AppState, commerce: &str, retry_at: DateTime<Utc>) -> Response {
    let wait = (retry_at - state.clock.now()).num_seconds().max(0) + 1;
    let local = retry_at.with_timezone(&state.calendar.time_zone());
    let minutes = (wait + 59) / 60;
    let text = format!(
        "Este enlace tuvo varios intentos de pago rechazados en la última hora y, por \
         seguridad, no acepta nuevos intentos por ahora. Podrá intentarlo otra vez en {minutes} \
         {}, desde las {} del {}. No se hizo ningún cargo.",
        if minutes == 1 { "minuto" } else { "minutos" },
        local.format("%H:%M"),
        spanish::date(local.date_naive()),
    );
    let mut response = html(
        StatusCode::TOO_MANY_REQUESTS,
        render::message_page("Demasiados intentos rechazados", &text, Some(commerce)),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(wait));
    response
}

/// Claims one of the link's processor attempts, or answers the 429 page.
async fn claim_attempt(
    state: &AppState,
    loaded: &Loaded,
) -> std::result::Result<activation::PortalClaim, Response> {
    let seq = loaded.mandate.seq;
    let now = state.clock.now();
    match write(state, move |tx| {
        activation::claim_portal_attempt(tx, seq, now)
    })
    .await
    {
        Ok(Ok(claim)) => Ok(claim),
        Ok(Err(retry_at)) => Err(too_many_declines(state, &loaded.commerce.name, retry_at)),
        Err(e) => Err(failure(&e)),
    }
}

/// An attempt that ended without a decline is forgotten; failing to forget it only makes the
/// limit stricter for an hour, so it is logged, not shown.
async fn release_attempt(state: &AppState, claim: activation::PortalClaim) {
    if let Err(e) = write(state, move |tx| {
        activation::release_portal_attempt(tx, claim)
    })
    .await
    {
        tracing::warn!(error = %e, "portal attempt not released");
    }
}

fn bad_form(rejection: &FormRejection) -> Response {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return html(
            StatusCode::PAYLOAD_TOO_LARGE,
            render::message_page(
                "Formulario demasiado grande",
                "El formulario enviado excede el tamaño permitido.",
                None,
            ),
        );
    }
    html(
        StatusCode::BAD_REQUEST,
        render::message_page(
            "Formulario no válido",
            "No pudimos leer el formulario enviado. Vuelva a abrir el enlace e inténtelo otra vez.",
            None,
        ),
    )
}

/// A `303 See Other` to `location`; the page itself when the location cannot be a header.
fn see_other(location: &str) -> Option<Response> {
    HeaderValue::from_str(location).ok()?;
    Some(Redirect::to(location).into_response())
}

// ----- loading -----

/// Where a mandate stands for its link.
enum Gate {
    /// PENDING and the link still valid: activation is possible.
    Open,
    Active,
    Expired,
    Closed(MandateState),
}

fn gate(mandate: &MandateRow, business_now: DateTime<Utc>) -> Gate {
    match mandate.state {
        MandateState::Pending => {
            let expired = DateTime::parse_from_rfc3339(&mandate.magic_link_expires_at)
                .is_ok_and(|e| e.with_timezone(&Utc) <= business_now);
            if expired { Gate::Expired } else { Gate::Open }
        }
        MandateState::Active => Gate::Active,
        other => Gate::Closed(other),
    }
}

/// Tokens are 22 URL-safe base64 characters; anything else cannot be one.
fn token_shaped(token: &str) -> bool {
    (1..=64).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn load(state: &AppState, token: &str) -> Result<Option<Loaded>> {
    if !token_shaped(token) {
        return Ok(None);
    }
    state.read_unscoped(|conn| {
        let Some(mandate) = link_records::by_token(conn, token)? else {
            return Ok(None);
        };
        load_mandate(conn, mandate).map(Some)
    })
}

/// Everything a page (or the sandbox's activation) shows about `mandate`.
pub fn load_mandate(conn: Db<'_>, mandate: MandateRow) -> Result<Loaded> {
    let LinkRecords {
        commerce,
        customer,
        installments,
        charge_dates,
        signing,
    } = link_records::records(conn, &mandate)?;
    Ok(Loaded {
        mandate,
        commerce,
        customer,
        installments,
        charge_dates,
        signing: signing.map(signing::step_of),
    })
}

/// Business time: the link expires by the sandbox clock too.
fn business_now(state: &AppState) -> DateTime<Utc> {
    state.calendar.now(state.clock.now())
}

/// Loads the mandate and answers for links that cannot show a mandate page.
fn open(state: &AppState, token: &str) -> std::result::Result<(Loaded, Gate), Box<Response>> {
    let loaded = match load(state, token) {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return Err(Box::new(unknown_link())),
        Err(e) => return Err(Box::new(failure(&e))),
    };
    let gate = gate(&loaded.mandate, business_now(state));
    match gate {
        Gate::Expired => Err(Box::new(expired_link(&loaded.commerce.name))),
        Gate::Closed(s) => Err(Box::new(closed_mandate(&loaded.commerce.name, s))),
        Gate::Open | Gate::Active => Ok((loaded, gate)),
    }
}

fn page(
    state: &AppState,
    status: StatusCode,
    token: &str,
    loaded: &Loaded,
    notice: Option<Notice>,
    activation: Option<(i64, Submitted)>,
    payment: Option<(String, Submitted)>,
) -> Response {
    let view = View {
        data: loaded,
        token,
        today: state.today(),
        time_zone: state.calendar.time_zone(),
        notice,
        activation_open: loaded.mandate.state == MandateState::Pending,
        activation,
        payment,
        card_update: None,
        sandbox: state.config.environment.is_sandbox(),
        offered: offered(state, loaded),
    };
    html(status, render::mandate_page(&view))
}

/// The page with the card change form sent back with its problems.
fn card_update_page(
    state: &AppState,
    status: StatusCode,
    token: &str,
    loaded: &Loaded,
    submitted: Submitted,
) -> Response {
    let view = View {
        data: loaded,
        token,
        today: state.today(),
        time_zone: state.calendar.time_zone(),
        notice: None,
        activation_open: false,
        activation: None,
        payment: None,
        card_update: Some(submitted),
        sandbox: state.config.environment.is_sandbox(),
        offered: offered(state, loaded),
    };
    html(status, render::mandate_page(&view))
}

/// The rails whose instruments this page takes typed: those the simulation serves. A real
/// acquirer's customers enter their card or account on the acquirer's own pages.
fn offered(state: &AppState, loaded: &Loaded) -> Offered {
    // A rail whose setting cannot be read is offered nothing.
    let (cards, bank) = state
        .acquirers_of(loaded.commerce.id)
        .unwrap_or((Acquirer::NotConfigured, Acquirer::NotConfigured));
    Offered {
        cards: matches!(cards, Acquirer::Simulated(_)),
        bank: matches!(bank, Acquirer::Simulated(_)),
        hosted_cards: matches!(cards, Acquirer::Transbank(_)),
        hosted_bank: matches!(bank, Acquirer::Fintoc(_)),
        bank_validating: matches!(bank, Acquirer::Fintoc(_))
            && loaded.mandate.state == MandateState::Pending
            && fintoc::bank_validating(state, loaded),
    }
}

/// The page refusing a method whose rail this page does not take typed (a hand-made form).
fn not_offered(state: &AppState, token: &str, loaded: &Loaded) -> Response {
    page(
        state,
        StatusCode::BAD_REQUEST,
        token,
        loaded,
        Some(Notice::Problem(
            "Este medio de pago no se puede registrar ni pagar en esta página.".into(),
        )),
        None,
        None,
    )
}

/// Runs `f` in one write transaction off the async workers, then wakes the deliverer for the
/// events it wrote.
async fn write<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(Db<'_>) -> Result<T> + Send + 'static,
) -> Result<T> {
    state.write_unscoped(f).await
}

/// Calls the processor of the commerce's rail for `method` off the async workers (it may
/// block on I/O). A rail no acquirer serves is unavailable: its forms are not offered, so
/// only a hand-made request gets here.
async fn with_processor<T: Send + 'static>(
    state: &AppState,
    loaded: &Loaded,
    method: PaymentMethod,
    f: impl FnOnce(&dyn Processor) -> std::result::Result<T, ProcessorError> + Send + 'static,
) -> std::result::Result<T, ProcessorError> {
    let processor = match state.processor_for(loaded.commerce.id, method) {
        Ok(Some(processor)) => processor,
        Ok(None) => {
            return Err(ProcessorError::Unavailable(
                "ACQUIRER_NOT_CONFIGURED: no acquirer serves the method's rail".into(),
            ));
        }
        Err(e) => return Err(ProcessorError::Unavailable(e.to_string())),
    };
    tokio::task::spawn_blocking(move || f(processor.as_ref()))
        .await
        .unwrap_or_else(|e| Err(ProcessorError::Unavailable(e.to_string())))
}

// ----- form reading -----

fn value<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map_or("", |v| v.trim())
}

/// The form's values to write back into the page: never the card number or the CVV.
fn kept_values(form: &HashMap<String, String>) -> HashMap<String, String> {
    form.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "number" | "cvv"))
        .map(|(k, v)| (k.clone(), v.trim().to_string()))
        .collect()
}

/// The customer-facing message of an instrument problem, next to its field.
fn problem_message(problem: &InstrumentProblem, form: &HashMap<String, String>) -> String {
    match (problem.field, problem.code) {
        ("number", _) => {
            let digits: String = value(form, "number")
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '-')
                .collect();
            let well_formed =
                (12..=19).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit());
            if well_formed && !luhn_valid(&digits) {
                "El número de tarjeta no es válido: revise los dígitos."
            } else {
                "Ingrese los 12 a 19 dígitos de la tarjeta."
            }
        }
        ("expiry", "CARD_EXPIRED") => "La tarjeta está vencida.",
        ("expiry", _) => "Indique el mes y el año de vencimiento como MM/AA.",
        ("cvv", _) => "El código de seguridad tiene 3 o 4 dígitos.",
        ("bankCode", _) => "Elija un banco de la lista.",
        ("accountType", _) => "Elija el tipo de cuenta.",
        ("accountNumber", _) => "El número de cuenta tiene entre 4 y 20 dígitos.",
        ("holderRut", _) => "El RUT del titular no es válido: revise el dígito verificador.",
        _ => "Revise este dato.",
    }
    .to_string()
}

/// The card of a form, or the problems of each field.
fn read_card(
    method: PaymentMethod,
    form: &HashMap<String, String>,
    today: chrono::NaiveDate,
) -> std::result::Result<InstrumentInput, Vec<(String, String)>> {
    InstrumentInput::card(
        method,
        value(form, "number"),
        value(form, "expiry"),
        value(form, "cvv"),
        (today.year(), today.month()),
    )
    .map_err(|problems| {
        problems
            .iter()
            .map(|p| (p.field.to_string(), problem_message(p, form)))
            .collect()
    })
}

fn read_bank(
    method: PaymentMethod,
    form: &HashMap<String, String>,
) -> std::result::Result<InstrumentInput, Vec<(String, String)>> {
    InstrumentInput::bank(
        method,
        value(form, "bankCode"),
        value(form, "accountType"),
        value(form, "accountNumber"),
        value(form, "holderRut"),
    )
    .map_err(|problems| {
        problems
            .iter()
            .map(|p| (p.field.to_string(), problem_message(p, form)))
            .collect()
    })
}

fn client_ip(connect: Option<Extension<ConnectInfo<SocketAddr>>>) -> Option<String> {
    connect.map(|Extension(ConnectInfo(addr))| addr.ip().to_string())
}

/// What the customer accepts with this request: `terms` as the page showed them, from where
/// and with which browser.
pub(super) fn acceptance_of(
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: &HeaderMap,
    terms: String,
) -> Acceptance {
    Acceptance {
        ip: client_ip(connect),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(512).collect()),
        terms,
    }
}

/// What an unticked acceptance of the terms is told.
pub(super) const TICK_THE_TERMS: &str = "Debe aceptar los términos del mandato para continuar.";

/// Why the form does not accept `terms`: they changed since the page showed them (its
/// `termsSha256`), or the box is not ticked (`unticked` says what to do). `None`: accepted.
pub(super) fn terms_refusal(
    form: &HashMap<String, String>,
    terms: &str,
    unticked: &'static str,
) -> Option<&'static str> {
    let shown = value(form, "termsSha256");
    if !shown.is_empty() && shown != render::sha256_hex(terms) {
        Some(
            "Los términos cambiaron mientras completaba el formulario: léalos y acéptelos \
             nuevamente.",
        )
    } else if !matches!(value(form, "accept"), "1" | "on" | "true") {
        Some(unticked)
    } else {
        None
    }
}

// ----- handlers -----

/// The mandate's page; `?activado=1` and `?pagada={installment}` add the banner of what the
/// customer just did (the pages redirect there after a POST, so a reload posts nothing).
async fn show(
    State(state): State<AppState>,
    Path(token): Path<String>,
    query: std::result::Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    // A query string the page did not write is ignored, not an error.
    let query = query.map(|Query(q)| q).unwrap_or_default();
    let (loaded, gate) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let notice = if let Some(id) = query.get("pagada") {
        loaded
            .installments
            .iter()
            .find(|i| i.id == *id && i.state == InstallmentState::Paid)
            .map(|i| Notice::Paid {
                installment: i.external_id.clone(),
                authorization_code: i.authorization_code.clone().unwrap_or_default(),
                receipt: i.id.clone(),
            })
    } else if let Some(retried) = query
        .get("tarjeta")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|_| matches!(gate, Gate::Active))
    {
        Some(Notice::CardChanged { retried })
    } else if matches!(gate, Gate::Active) {
        // Back from signing a signature-gated mandate: it is active now, so the customer
        // goes on to the merchant's callback as a direct activation does.
        if query.get("result").is_some_and(|r| r == "SIGNED")
            && let Some(done) = loaded.mandate.url_callback.as_deref().and_then(see_other)
        {
            return done;
        }
        Some(
            if query.contains_key("activado") || query.contains_key("result") {
                Notice::Activated
            } else {
                Notice::AlreadyActive
            },
        )
    } else if fintoc::bank_validating(&state, &loaded) {
        // Authorized on Fintoc: the bank is validating the account (`?banco=validando`).
        Some(Notice::Info(fintoc::VALIDATING.into()))
    } else {
        None
    };
    page(&state, StatusCode::OK, &token, &loaded, notice, None, None)
}

/// A payment form's address opened in the browser: back to the page.
async fn back_to_page(Path((token, _)): Path<(String, String)>) -> Response {
    if !token_shaped(&token) {
        return unknown_link();
    }
    see_other(&format!("/link/{token}")).unwrap_or_else(unknown_link)
}

/// The card change form's address opened in the browser: back to the page.
async fn back_to_link(Path(token): Path<String>) -> Response {
    if !token_shaped(&token) {
        return unknown_link();
    }
    see_other(&format!("/link/{token}")).unwrap_or_else(unknown_link)
}

/// A paid installment's receipt: a page of its own, to keep or print.
async fn receipt(
    State(state): State<AppState>,
    Path((token, installment_id)): Path<(String, String)>,
) -> Response {
    let (loaded, _) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let paid = loaded
        .installments
        .iter()
        .find(|i| i.id == installment_id && i.state == InstallmentState::Paid);
    let (current_instrument, uf_value, evidence_file) = match paid {
        Some(i) => match state.read_unscoped(|c| {
            let code = i.authorization_code.as_deref().unwrap_or_default();
            let current = link_records::paid_with_current_instrument(c, i.seq, code)?;
            // A UF installment's pesos came from the UF of its charge's date.
            let uf = match (&i.charged_clp, &i.last_attempt_date) {
                (Some(_), Some(date)) => link_records::uf_value(c, date)?,
                _ => None,
            };
            let evidence = mandato_engine::staff::mandates::evidence_of_installment(c, i.seq)?;
            Ok((current, uf, evidence))
        }) {
            Ok(read) => read,
            Err(e) => return failure(&e),
        },
        None => (false, None, None),
    };
    match paid {
        Some(installment) => html(
            StatusCode::OK,
            render::receipt_page(
                &loaded,
                &render::Receipt {
                    installment,
                    current_instrument,
                    uf_value,
                    evidence_file,
                },
                &token,
                state.calendar.time_zone(),
            ),
        ),
        None => html(
            StatusCode::NOT_FOUND,
            render::message_page(
                "Comprobante no disponible",
                "Esta cuota no está pagada o no pertenece a este mandato.",
                Some(&loaded.commerce.name),
            ),
        ),
    }
}

/// Replaces the card of an active mandate: the processor enrols the new card, then the
/// mandate charges it from now on and its rejected installments are retried at the next run.
async fn update_card(
    State(state): State<AppState>,
    Path(token): Path<String>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    form: std::result::Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return bad_form(&rejection),
    };
    let (loaded, gate) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let problem = |text: &str| {
        page(
            &state,
            StatusCode::CONFLICT,
            &token,
            &loaded,
            Some(Notice::Problem(text.to_string())),
            None,
            None,
        )
    };
    if !matches!(gate, Gate::Active) {
        return problem(
            "Su mandato aún no está activo: registre su medio de pago en el formulario de \
             activación.",
        );
    }
    if !offered(&state, &loaded).cards {
        return not_offered(&state, &token, &loaded);
    }
    let methods = loaded.card_change_methods();
    if methods.is_empty() {
        return problem("Este mandato no admite pagos con tarjeta. Contacte al comercio.");
    }
    let back = |errors: Vec<(String, String)>| Submitted {
        values: kept_values(&form),
        errors,
    };
    let method_id: i64 = value(&form, "method").parse().unwrap_or(0);
    let Some(method) = PaymentMethod::from_id(method_id).filter(|m| methods.contains(m)) else {
        let errors = vec![(
            "method".to_string(),
            "Elija el tipo de tarjeta.".to_string(),
        )];
        return card_update_page(
            &state,
            StatusCode::BAD_REQUEST,
            &token,
            &loaded,
            back(errors),
        );
    };
    let today = state.today();
    let terms = loaded.terms(method);
    let mut errors = Vec::new();
    let card = match read_card(method, &form, today) {
        Ok(card) => Some(card),
        Err(problems) => {
            errors.extend(problems);
            None
        }
    };
    if let Some(refusal) = terms_refusal(
        &form,
        &terms,
        "Debe aceptar los términos del mandato con la nueva tarjeta.",
    ) {
        errors.push(("accept".into(), refusal.into()));
    }
    let Some(card) = card.filter(|_| errors.is_empty()) else {
        return card_update_page(
            &state,
            StatusCode::BAD_REQUEST,
            &token,
            &loaded,
            back(errors),
        );
    };

    let claim = match claim_attempt(&state, &loaded).await {
        Ok(claim) => claim,
        Err(response) => return response,
    };
    let enrolling = card.clone();
    let enrolled =
        match with_processor(&state, &loaded, method, move |p| p.enroll(&enrolling)).await {
            Ok(enrolled) => enrolled,
            // A refused card is a decline: its claim stays and counts.
            Err(ProcessorError::Refused(reason)) => {
                tracing::info!(%reason, "new card refused at enrolment");
                let errors = vec![(
                    "number".to_string(),
                    "El emisor no aceptó esta tarjeta. Revise los datos o use otra.".to_string(),
                )];
                return card_update_page(
                    &state,
                    StatusCode::BAD_REQUEST,
                    &token,
                    &loaded,
                    back(errors),
                );
            }
            Err(ProcessorError::Unavailable(reason)) => {
                tracing::warn!(%reason, "processor unavailable for a card change");
                release_attempt(&state, claim).await;
                return unavailable(&loaded.commerce.name);
            }
        };
    let acceptance = acceptance_of(connect, &headers, terms);
    let seq = loaded.mandate.seq;
    let now = state.clock.now();
    let changed = write(&state, move |tx| {
        let fresh = link_records::fresh(tx, seq)?;
        activation::release_portal_attempt(tx, claim)?;
        mandato_engine::operations::card_update::replace_card(
            tx,
            &fresh,
            &activation::Enrolment {
                instrument: &card.facts(),
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
            .unwrap_or_else(|| page(&state, StatusCode::OK, &token, &loaded, None, None, None)),
        Err(e) => {
            release_attempt(&state, claim).await;
            tracing::info!(error = %e, "card change refused");
            problem("Su mandato ya no está activo, por lo que no registramos la nueva tarjeta.")
        }
    }
}

/// Enrols the customer's instrument and activates the mandate.
async fn activate(
    State(state): State<AppState>,
    Path(token): Path<String>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    form: std::result::Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return bad_form(&rejection),
    };
    let (loaded, gate) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    if matches!(gate, Gate::Active) {
        // A second activation changes nothing: the page says the mandate is already active.
        return page(
            &state,
            StatusCode::OK,
            &token,
            &loaded,
            Some(Notice::AlreadyActive),
            None,
            None,
        );
    }
    let method_id: i64 = value(&form, "method").parse().unwrap_or(0);
    let Some(method) = PaymentMethod::from_id(method_id)
        .filter(|m| loaded.mandate.payment_methods.contains(&m.id()))
    else {
        return page(
            &state,
            StatusCode::BAD_REQUEST,
            &token,
            &loaded,
            Some(Notice::Problem(
                "Elija uno de los medios de pago habilitados para este mandato.".into(),
            )),
            None,
            None,
        );
    };

    if !offered(&state, &loaded).allows(method) {
        return not_offered(&state, &token, &loaded);
    }
    let today = state.today();
    let terms = loaded.terms(method);
    let mut errors: Vec<(String, String)> = Vec::new();
    let instrument = if method.is_card() {
        read_card(method, &form, today)
    } else {
        read_bank(method, &form)
    };
    let instrument = match instrument {
        Ok(instrument) => Some(instrument),
        Err(problems) => {
            errors.extend(problems);
            None
        }
    };
    if let Some(refusal) = terms_refusal(&form, &terms, TICK_THE_TERMS) {
        errors.push(("accept".into(), refusal.into()));
    }
    let back = |errors: Vec<(String, String)>| Submitted {
        values: kept_values(&form),
        errors,
    };
    let Some(instrument) = instrument.filter(|_| errors.is_empty()) else {
        return page(
            &state,
            StatusCode::BAD_REQUEST,
            &token,
            &loaded,
            None,
            Some((method.id(), back(errors))),
            None,
        );
    };
    if let Err(e) = activation::check_activatable(&loaded.mandate, method, business_now(&state)) {
        return refused_activation(&state, &token, &loaded, method, back(Vec::new()), e);
    }

    let claim = match claim_attempt(&state, &loaded).await {
        Ok(claim) => claim,
        Err(response) => return response,
    };
    let enrolling = instrument.clone();
    let enrolled =
        match with_processor(&state, &loaded, method, move |p| p.enroll(&enrolling)).await {
            Ok(enrolled) => enrolled,
            // A refused instrument is a decline: its claim stays and counts.
            Err(ProcessorError::Refused(reason)) => {
                tracing::info!(%reason, "instrument refused at enrolment");
                let field = if method.is_card() {
                    "number"
                } else {
                    "accountNumber"
                };
                let errors = vec![(
                    field.to_string(),
                    "El medio de pago fue rechazado. Revise los datos o use otro.".to_string(),
                )];
                return page(
                    &state,
                    StatusCode::BAD_REQUEST,
                    &token,
                    &loaded,
                    None,
                    Some((method.id(), back(errors))),
                    None,
                );
            }
            Err(ProcessorError::Unavailable(reason)) => {
                tracing::warn!(%reason, "processor unavailable at enrolment");
                release_attempt(&state, claim).await;
                return unavailable(&loaded.commerce.name);
            }
        };

    let now = state.clock.now();
    let acceptance = acceptance_of(connect, &headers, terms);
    if loaded.mandate.activation_mode == ActivationMode::Signature {
        let enrolling = signing::Enrolling {
            method,
            instrument: instrument.facts(),
            enrolled,
            acceptance,
            claim,
            submitted: back(Vec::new()),
        };
        return signing::start(&state, &token, &loaded, enrolling, now).await;
    }
    let document = epac_document(&loaded, &instrument.facts(), &enrolled, &acceptance, now);

    let commerce = loaded.commerce.clone();
    let seq = loaded.mandate.seq;
    let check_at = business_now(&state);
    let result = write(&state, move |tx| {
        // Checked again inside the transaction: another activation or a cancellation may
        // have landed since the page was read.
        let fresh = link_records::fresh(tx, seq)?;
        activation::check_activatable(&fresh, method, check_at)?;
        activation::release_portal_attempt(tx, claim)?;
        activation::activate(
            tx,
            &commerce,
            &fresh,
            &activation::Enrolment {
                instrument: &instrument.facts(),
                enrolled: &enrolled,
                acceptance: &acceptance,
                document: document.as_ref(),
            },
            now,
        )
    })
    .await;
    match result {
        Ok(view) => {
            let success = format!("/link/{token}?activado=1");
            view.mandate
                .url_callback
                .as_deref()
                .and_then(see_other)
                .or_else(|| see_other(&success))
                .unwrap_or_else(|| {
                    page(
                        &state,
                        StatusCode::OK,
                        &token,
                        &loaded,
                        Some(Notice::Activated),
                        None,
                        None,
                    )
                })
        }
        Err(e) => {
            // The instrument was accepted; the activation lost a race or a rule: no decline.
            release_attempt(&state, claim).await;
            refused_activation(&state, &token, &loaded, method, back(Vec::new()), e)
        }
    }
}

/// Where a customer goes once an acquirer's page (Webpay, Fintoc's widget) brought them back
/// and the mandate was activated: the merchant's callback, or the page with its banner. An
/// activation refused meanwhile (another activation, a cancellation) shows the page as it is
/// now; `after` names the step in the log.
fn activated_on_acquirer_page(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    result: Result<mandato_engine::operations::mandates::MandateView>,
    after: &str,
) -> Response {
    match result {
        Ok(view) => view
            .mandate
            .url_callback
            .as_deref()
            .and_then(see_other)
            .or_else(|| see_other(&format!("/link/{token}?activado=1")))
            .unwrap_or_else(|| {
                page(
                    state,
                    StatusCode::OK,
                    token,
                    loaded,
                    Some(Notice::Activated),
                    None,
                    None,
                )
            }),
        Err(e) => {
            tracing::info!(error = %e, after, "activation after an acquirer's page refused");
            match open(state, token) {
                Ok((now, _)) => page(
                    state,
                    StatusCode::OK,
                    token,
                    &now,
                    Some(Notice::AlreadyActive),
                    None,
                    None,
                ),
                Err(response) => *response,
            }
        }
    }
}

/// The page for an activation that a rule refused (or that lost a race).
fn refused_activation(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    method: PaymentMethod,
    mut submitted: Submitted,
    error: Error,
) -> Response {
    match &error {
        Error::Refused { name, .. } => match *name {
            "MAGIC_LINK_EXPIRED" => expired_link(&loaded.commerce.name),
            "MANDATE_STATE_CONFLICT" => {
                // Activated or cancelled meanwhile: show the link as it is now.
                match open(state, token) {
                    Ok((now, _)) => page(
                        state,
                        StatusCode::OK,
                        token,
                        &now,
                        Some(Notice::AlreadyActive),
                        None,
                        None,
                    ),
                    Err(response) => *response,
                }
            }
            _ => {
                submitted.errors.push((
                    "form".into(),
                    "Este medio de pago no está habilitado para este mandato.".into(),
                ));
                page(
                    state,
                    StatusCode::BAD_REQUEST,
                    token,
                    loaded,
                    None,
                    Some((method.id(), submitted)),
                    None,
                )
            }
        },
        _ => failure(&error),
    }
}

/// The records of the page's mandate, as its document states them.
fn subject(loaded: &Loaded) -> Subject<'_> {
    Subject {
        commerce: &loaded.commerce,
        customer: &loaded.customer,
        mandate: &loaded.mandate,
        installments: &loaded.installments,
    }
}

/// The EPAC mandate PDF, for the methods that produce one (EPAC and direct EPAC).
pub(crate) fn epac_document(
    loaded: &Loaded,
    instrument: &InstrumentFacts,
    enrolled: &Enrolled,
    acceptance: &Acceptance,
    now: DateTime<Utc>,
) -> Option<Secret<Vec<u8>>> {
    of_mandate::epac_document(&subject(loaded), instrument, enrolled, acceptance, now)
}

/// What the mandate document states, for a bank account or (signature-gated activation) a card.
fn mandate_document(
    loaded: &Loaded,
    instrument: &InstrumentFacts,
    enrolled: &Enrolled,
    acceptance: &Acceptance,
    now: DateTime<Utc>,
) -> MandateDocument {
    of_mandate::document_of(&subject(loaded), instrument, enrolled, acceptance, now)
}

/// The processor's key for a portal charge. The first try of an attempt is
/// `portal-{installment}-{attempts+1}`, so a double submit (or a retry after a crash or a
/// timeout) charges once: the processor answers a repeated key with its first outcome. A
/// declined card is not recorded on the installment (its attempts do not move), so the
/// customer's next try with another card takes the next free suffix instead of being answered
/// with the old decline.
fn portal_key(
    processor: &dyn Processor,
    installment: &InstallmentRow,
) -> std::result::Result<String, ProcessorError> {
    let base = format!("portal-{}-{}", installment.id, installment.attempts + 1);
    let mut key = base.clone();
    for n in 2..1000 {
        match processor.status(&key)? {
            Some(ChargeResult::Rejected { .. }) => key = format!("{base}-r{n}"),
            // Never sent, or sent and approved (or pending) without being recorded here:
            // the same key finishes that charge instead of making another.
            _ => return Ok(key),
        }
    }
    Err(ProcessorError::Refused(
        "too many declined portal charges".into(),
    ))
}

/// Pays one due or rejected installment by card, from the portal.
async fn pay(
    State(state): State<AppState>,
    Path((token, installment_id)): Path<(String, String)>,
    form: std::result::Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return bad_form(&rejection),
    };
    // Held until the outcome is recorded, so a racing submit of the same installment reads it.
    let _turn = state.portal_payments.lock(&installment_id).await;
    let (loaded, _) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let Some(installment) = loaded
        .installments
        .iter()
        .find(|i| i.id == installment_id)
        .cloned()
    else {
        return html(
            StatusCode::NOT_FOUND,
            render::message_page(
                "Cuota no encontrada",
                "Esta cuota no pertenece a este mandato.",
                Some(&loaded.commerce.name),
            ),
        );
    };
    let offered = offered(&state, &loaded);
    if !offered.cards && !offered.hosted_cards {
        return not_offered(&state, &token, &loaded);
    }
    let today = state.today();
    let info = |status: StatusCode, notice: Notice| {
        page(&state, status, &token, &loaded, Some(notice), None, None)
    };
    if !payable(&installment, today) {
        let text = match installment.state {
            InstallmentState::Paid => format!(
                "La cuota {} ya está pagada; no se hizo un nuevo cargo.",
                installment.external_id
            ),
            InstallmentState::Pending => format!(
                "La cuota {} vence el {}; podrá pagarla desde esa fecha.",
                installment.external_id,
                spanish::date(installment.due_date)
            ),
            InstallmentState::InProcess | InstallmentState::InValidation => format!(
                "La cuota {} se está cobrando en este momento; espere su resultado antes de \
                 pagarla.",
                installment.external_id
            ),
            _ => format!(
                "La cuota {} está {} y no admite pagos.",
                installment.external_id,
                spanish::installment_state(installment.state).to_lowercase()
            ),
        };
        return info(StatusCode::CONFLICT, Notice::Problem(text));
    }
    let back = |errors: Vec<(String, String)>| {
        Some((
            installment.id.clone(),
            Submitted {
                values: kept_values(&form),
                errors,
            },
        ))
    };
    if installment.amount.currency() == Currency::Clf {
        return page(
            &state,
            StatusCode::BAD_REQUEST,
            &token,
            &loaded,
            Some(Notice::Problem(format!(
                "La cuota {} está en UF y no puede pagarse en línea sin el valor de la UF del \
                 día. Contacte al comercio para pagarla.",
                installment.external_id
            ))),
            None,
            None,
        );
    }
    if offered.hosted_cards {
        return webpay::start(&state, &token, &loaded, &installment).await;
    }
    let method_id: i64 = value(&form, "method")
        .parse()
        // The form always names one; without it, the first card the page offers.
        .unwrap_or_else(|_| loaded.card_methods()[0].id());
    let Some(method) =
        PaymentMethod::from_id(method_id).filter(|m| loaded.card_methods().contains(m))
    else {
        let errors = vec![(
            "method".to_string(),
            "Elija el tipo de tarjeta.".to_string(),
        )];
        return page(
            &state,
            StatusCode::BAD_REQUEST,
            &token,
            &loaded,
            None,
            None,
            back(errors),
        );
    };
    let card = match read_card(method, &form, today) {
        Ok(card) => card,
        Err(errors) => {
            return page(
                &state,
                StatusCode::BAD_REQUEST,
                &token,
                &loaded,
                None,
                None,
                back(errors),
            );
        }
    };

    let claim = match claim_attempt(&state, &loaded).await {
        Ok(claim) => claim,
        Err(response) => return response,
    };
    let charged = installment.clone();
    let customer_ref = loaded.customer.id.clone();
    let outcome = with_processor(&state, &loaded, method, move |p| {
        let enrolled = p.enroll(&card)?;
        let key = portal_key(p, &charged)?;
        let result = p.charge(&ChargeRequest {
            idempotency_key: &key,
            token: &enrolled.token,
            customer_ref: &customer_ref,
            method,
            amount: &charged.amount,
            forced: None,
        })?;
        Ok((key, result))
    })
    .await;
    let (key, authorization_code, fee) = match outcome {
        Ok((
            key,
            ChargeResult::Approved {
                authorization_code,
                fee,
            },
        )) => (key, authorization_code, fee),
        Ok((_, ChargeResult::Rejected { code })) => {
            // A portal decline is the customer's try, not a charge attempt of the engine: the
            // installment keeps its state and no event is written. The page says why.
            let errors = vec![(
                "form".to_string(),
                format!(
                    "Pago rechazado: {} No se hizo ningún cargo. Puede intentarlo con otra \
                     tarjeta.",
                    spanish::rejection(code.as_str())
                ),
            )];
            return page(
                &state,
                StatusCode::PAYMENT_REQUIRED,
                &token,
                &loaded,
                None,
                None,
                back(errors),
            );
        }
        Ok((key, ChargeResult::Pending)) => {
            // Cards settle at once; a pending card charge is the processor's oddity. Nothing is
            // recorded, and the next try reuses the key, so it cannot charge twice.
            tracing::warn!(%key, "portal card charge left pending");
            release_attempt(&state, claim).await;
            return info(
                StatusCode::ACCEPTED,
                Notice::Info(
                    "El pago quedó en revisión. No vuelva a pagar esta cuota; el comercio le \
                     informará el resultado."
                        .into(),
                ),
            );
        }
        Err(ProcessorError::Refused(reason)) => {
            tracing::info!(%reason, "portal card refused");
            let errors = vec![(
                "form".to_string(),
                "La tarjeta fue rechazada. No se hizo ningún cargo.".to_string(),
            )];
            return page(
                &state,
                StatusCode::PAYMENT_REQUIRED,
                &token,
                &loaded,
                None,
                None,
                back(errors),
            );
        }
        Err(ProcessorError::Unavailable(reason)) => {
            tracing::warn!(%reason, "processor unavailable for a portal payment");
            release_attempt(&state, claim).await;
            return unavailable(&loaded.commerce.name);
        }
    };

    let commerce = loaded.commerce.clone();
    let (mandate_seq, installment_seq) = (loaded.mandate.seq, installment.seq);
    let code = authorization_code.clone();
    let now = state.clock.now();
    release_attempt(&state, claim).await;
    let recorded = write(&state, move |tx| {
        portal::record_approved(
            tx,
            &ApprovedPayment {
                commerce: &commerce,
                mandate_seq,
                installment_seq,
                method,
                authorization_code: &code,
                fee,
                business_date: today,
                now,
            },
        )
    })
    .await;
    match recorded {
        Ok(()) => see_other(&format!("/link/{token}?pagada={}", installment.id))
            .unwrap_or_else(|| info(StatusCode::OK, Notice::Info("Pago aprobado.".into()))),
        Err(Error::Refused { message, .. }) => {
            // Charged, but the installment moved meanwhile (the engine, the merchant or a
            // cancellation): staff must reconcile with the processor's record of this key.
            tracing::error!(%key, %authorization_code, %message, "portal charge approved but not recorded");
            info(
                StatusCode::CONFLICT,
                Notice::Problem(format!(
                    "El pago fue aprobado (código {authorization_code}), pero la cuota cambió \
                     mientras se procesaba. Contacte al comercio con este código."
                )),
            )
        }
        Err(e) => {
            tracing::error!(%key, %authorization_code, error = %e, "portal charge approved but not recorded");
            // Paying again reuses the key, so the processor answers this same approval and
            // nothing is charged twice.
            html(
                StatusCode::INTERNAL_SERVER_ERROR,
                render::message_page(
                    "No pudimos registrar el pago",
                    "El pago fue aprobado pero no alcanzamos a registrarlo. Vuelva a intentarlo \
                     en unos minutos: no se le cobrará dos veces.",
                    Some(&loaded.commerce.name),
                ),
            )
        }
    }
}
